/*-------------------------------------------------------------------------
 *
 * layout.h
 *	  The flakeid bit layout and the defaults of the parameters: pure
 *	  arithmetic that every other file may use, and that uses none of them.
 *
 *	 63  62 ...................... 22  21 ......... 12  11 ......... 0
 *	  0 | ms since the epoch (41)     | node id        | sequence
 *
 * The time field always occupies bits 22..62.  The 22 low bits are split
 * between the node id (flakeid.node_bits of them) and the sequence (the
 * rest).  Every shift and mask of the layout is in this file.
 *
 * The generator counts in "ticks": (ms << seq_bits) | seq.  Consecutive
 * ticks are consecutive IDs of one node, and a full sequence carries into
 * the next millisecond.  A tick and a node make an ID.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_LAYOUT_H
#define FLAKEID_LAYOUT_H

#include "datatype/timestamp.h"

#define FLAKE_TIME_BITS			41
#define FLAKE_LOW_BITS			22
#define FLAKE_MAX_NODE_BITS		16
#define FLAKE_MAX_MS			((INT64CONST(1) << FLAKE_TIME_BITS) - 1)

/* flakeid.node_id when no node id is configured */
#define FLAKE_NODE_UNSET		(-1)

/* The defaults of the parameters. */
#define FLAKE_DEFAULT_EPOCH		"2020-01-01 00:00:00+00"
#define FLAKE_DEFAULT_EPOCH_MS	INT64CONST(1577836800000)
#define FLAKE_DEFAULT_NODE_BITS 10
#define FLAKE_DEFAULT_MAX_LEAD_MS	5000
#define FLAKE_DEFAULT_MAX_CLOCK_WAIT_MS 10000
#define FLAKE_DEFAULT_MAX_LEASE_WAIT_MS 10000
#define FLAKE_DEFAULT_MAX_CLOCK_SKEW_MS 1000
#define FLAKE_DEFAULT_MAX_BATCH 1000000
#define FLAKE_MAX_CACHE		4096

/* The layout: the same on every server whose IDs meet. */
typedef struct FlakeLayout
{
	int64		epoch_ms;		/* the epoch, in milliseconds since 1970 */
	int32		node_bits;		/* 0 .. FLAKE_MAX_NODE_BITS */
} FlakeLayout;

static inline bool
FlakeSameLayout(const FlakeLayout *a, const FlakeLayout *b)
{
	return a->epoch_ms == b->epoch_ms && a->node_bits == b->node_bits;
}

static inline int
FlakeSeqBits(const FlakeLayout *layout)
{
	return FLAKE_LOW_BITS - layout->node_bits;
}

static inline int32
FlakeMaxNode(const FlakeLayout *layout)
{
	return (int32) ((INT64CONST(1) << layout->node_bits) - 1);
}

/* IDs one node makes in a millisecond. */
static inline int64
FlakeSeqPerMs(const FlakeLayout *layout)
{
	return INT64CONST(1) << FlakeSeqBits(layout);
}

static inline bool
FlakeNodeFits(const FlakeLayout *layout, int32 node)
{
	return node >= 0 && node <= FlakeMaxNode(layout);
}

/* Milliseconds since the epoch of an ID. */
static inline int64
FlakeMs(int64 id)
{
	return id >> FLAKE_LOW_BITS;
}

static inline int32
FlakeNode(const FlakeLayout *layout, int64 id)
{
	return (int32) ((id >> FlakeSeqBits(layout)) & FlakeMaxNode(layout));
}

static inline int32
FlakeSeq(const FlakeLayout *layout, int64 id)
{
	return (int32) (id & (FlakeSeqPerMs(layout) - 1));
}

/*
 * The ID of (ms, node, seq).  ms is within 0 .. FLAKE_MAX_MS and the node
 * fits the layout; the mask keeps a node that does not from spilling into
 * the time field all the same.
 */
static inline int64
FlakeCompose(const FlakeLayout *layout, int64 ms, int32 node, int64 seq)
{
	return (ms << FLAKE_LOW_BITS) |
		(((int64) node & FlakeMaxNode(layout)) << FlakeSeqBits(layout)) |
		(seq & (FlakeSeqPerMs(layout) - 1));
}

/* The smallest ID of a millisecond: node 0, sequence 0. */
static inline int64
FlakeFirstIdOfMs(int64 ms)
{
	return ms << FLAKE_LOW_BITS;
}

/* The first tick of a millisecond. */
static inline uint64
FlakeTickOfMs(const FlakeLayout *layout, int64 ms)
{
	return (uint64) ms << FlakeSeqBits(layout);
}

/* The millisecond of a tick. */
static inline int64
FlakeTickMs(const FlakeLayout *layout, uint64 tick)
{
	return (int64) (tick >> FlakeSeqBits(layout));
}

/* The ID of a tick made by node. */
static inline int64
FlakeIdOfTick(const FlakeLayout *layout, uint64 tick, int32 node)
{
	return FlakeCompose(layout, FlakeTickMs(layout, tick), node,
						(int64) (tick & (uint64) (FlakeSeqPerMs(layout) - 1)));
}

/* Milliseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01. */
#define FLAKE_UNIX_TO_PG_MS		INT64CONST(946684800000)

/* The moment a millisecond since the layout's epoch begins. */
static inline TimestampTz
FlakeTimestamp(const FlakeLayout *layout, int64 ms)
{
	return (layout->epoch_ms + ms - FLAKE_UNIX_TO_PG_MS) * 1000;
}

/* The millisecond since the layout's epoch that holds a moment. */
static inline int64
FlakeMsOfTimestamp(const FlakeLayout *layout, TimestampTz ts)
{
	int64		pg_ms = ts / 1000;

	if (ts < 0 && ts % 1000 != 0)
		pg_ms--;				/* round towards minus infinity */
	return pg_ms + FLAKE_UNIX_TO_PG_MS - layout->epoch_ms;
}

#endif							/* FLAKEID_LAYOUT_H */
