/*-------------------------------------------------------------------------
 *
 * record.h
 *	  The time lease record: the one record that the state file and the
 *	  WAL both hold, and pure helpers to compare and read it.  Shared
 *	  memory, the state file, the WAL and the lease code all use it; it
 *	  uses nothing but the layout.
 *
 * A lease says: no ID of this server, in this layout, has a millisecond at
 * or past lease_end.  After a restart, a crash or a failover generation
 * resumes at the lease end it finds, so that nothing is issued twice.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_RECORD_H
#define FLAKEID_RECORD_H

#include "layout.h"

/* How far ahead of use a renewal reaches, in milliseconds. */
#define FLAKE_LEASE_MS			1000

/*
 * The lease record, as written to the state file and to WAL.  The timeline
 * is the one the server was on when it made the lease: a server that
 * finds itself on another one has ended archive recovery since (see
 * lease.c).  flakeid 1.2 and older wrote the record without the last two
 * fields; a server that made no lease on any other timeline is on
 * timeline 1, which is what a record without one counts as.
 */
typedef struct FlakeLease
{
	int64		epoch_ms;		/* the layout: flakeid.epoch */
	int32		node_bits;		/* the layout: flakeid.node_bits */
	int32		node_id;		/* the node id then, for readers of the log */
	int64		lease_end;		/* ms since epoch_ms: no ID at or past it */
	uint32		timeline;		/* the timeline it was made on; 0 unknown */
	uint32		reserved;		/* zero */
} FlakeLease;

/* The size of the record of flakeid 1.2 and older: no timeline. */
#define FLAKE_LEASE_SIZE_NO_TIMELINE	offsetof(FlakeLease, timeline)

/* The timeline a lease was made on, a record without one counting as 1. */
static inline uint32
FlakeLeaseTimeline(const FlakeLease *lease)
{
	return lease->timeline != 0 ? lease->timeline : 1;
}

static inline void
FlakeLeaseFill(FlakeLease *lease, const FlakeLayout *layout, int32 node_id,
			   int64 lease_end, uint32 timeline)
{
	memset(lease, 0, sizeof(FlakeLease));
	lease->epoch_ms = layout->epoch_ms;
	lease->node_bits = layout->node_bits;
	lease->node_id = node_id;
	lease->lease_end = lease_end;
	lease->timeline = timeline;
}

static inline void
FlakeLeaseLayout(const FlakeLease *lease, FlakeLayout *layout)
{
	layout->epoch_ms = lease->epoch_ms;
	layout->node_bits = lease->node_bits;
}

/* Whether a record holds a lease that any layout could have written. */
static inline bool
FlakeLeaseSane(const FlakeLease *lease)
{
	return lease->epoch_ms >= 0 &&
		lease->node_bits >= 0 && lease->node_bits <= FLAKE_MAX_NODE_BITS &&
		lease->node_id >= FLAKE_NODE_UNSET &&
		lease->node_id < (1 << FLAKE_MAX_NODE_BITS) &&
		lease->lease_end >= 0 && lease->lease_end <= FLAKE_MAX_MS + 1 &&
		lease->reserved == 0;
}

/*
 * Whether lease a reaches at least as far as lease b, both as integers
 * (the time field counts from its own epoch) and in time.  A lease that
 * does not is older: adopting it would let the floor go backwards.
 */
static inline bool
FlakeLeaseCovers(const FlakeLease *a, const FlakeLease *b)
{
	return a->lease_end >= b->lease_end &&
		a->epoch_ms + a->lease_end >= b->epoch_ms + b->lease_end;
}

#endif							/* FLAKEID_RECORD_H */
