/*-------------------------------------------------------------------------
 *
 * flakeid.h
 *	  The flakeid bit layout and the interfaces between the source files.
 *
 *	 63  62 ...................... 22  21 ......... 12  11 ......... 0
 *	  0 | ms since the epoch (41)     | node id        | sequence
 *
 * The time field always occupies bits 22..62.  The 22 low bits are split
 * between the node id (flakeid.node_bits of them) and the sequence (the
 * rest).  Every shift and mask of the layout is in this file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_H
#define FLAKEID_H

#include "fmgr.h"
#include "datatype/timestamp.h"

#define FLAKE_TIME_BITS			41
#define FLAKE_LOW_BITS			22
#define FLAKE_MAX_NODE_BITS		16
#define FLAKE_MAX_MS			((INT64CONST(1) << FLAKE_TIME_BITS) - 1)

/* The layout: fixed for the life of a server, the same on all servers. */
typedef struct FlakeLayout
{
	int64		epoch_ms;		/* the epoch, in milliseconds since 1970 */
	int32		node_bits;		/* 0 .. FLAKE_MAX_NODE_BITS */
} FlakeLayout;

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

static inline int32
FlakeMaxSeq(const FlakeLayout *layout)
{
	return (int32) ((INT64CONST(1) << FlakeSeqBits(layout)) - 1);
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
	return (int32) (id & FlakeMaxSeq(layout));
}

static inline int64
FlakeCompose(const FlakeLayout *layout, int64 ms, int32 node, int32 seq)
{
	return (ms << FLAKE_LOW_BITS) |
		((int64) node << FlakeSeqBits(layout)) |
		(int64) seq;
}

/*
 * The generator counts in "ticks": (ms << seq_bits) | seq.  Consecutive
 * ticks are consecutive IDs of one node; a full sequence carries into the
 * next millisecond.
 */
static inline int64
FlakeTick(const FlakeLayout *layout, int64 id)
{
	return (FlakeMs(id) << FlakeSeqBits(layout)) | FlakeSeq(layout, id);
}

static inline int64
FlakeTickMs(const FlakeLayout *layout, int64 tick)
{
	return tick >> FlakeSeqBits(layout);
}

static inline int64
FlakeFromTick(const FlakeLayout *layout, int64 tick, int32 node)
{
	return FlakeCompose(layout, FlakeTickMs(layout, tick), node,
						(int32) (tick & FlakeMaxSeq(layout)));
}

/* Milliseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01. */
#define FLAKE_UNIX_TO_PG_MS		INT64CONST(946684800000)

/* The moment a millisecond since the layout's epoch begins. */
static inline TimestampTz
FlakeTimestamp(const FlakeLayout *layout, int64 ms)
{
	return (layout->epoch_ms + ms - FLAKE_UNIX_TO_PG_MS) * 1000;
}

/* guc.c */
extern FlakeLayout flake_layout;
extern int	flake_node_id;
extern int	flake_max_lead_ms;
extern int	flake_max_clock_wait_ms;
extern void FlakeDefineGucs(void);
extern const char *FlakeEpochString(void);

/* generator.c */
extern void FlakeInstallShmemHooks(void);

/* lease.c */
extern void FlakeRegisterLeaseWorker(void);

/* wal.c */
extern void FlakeRegisterRmgr(void);

#endif							/* FLAKEID_H */
