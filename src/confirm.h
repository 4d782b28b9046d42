/*-------------------------------------------------------------------------
 *
 * confirm.h
 *	  The part of the time lease that the synchronous standbys have: the
 *	  lease records they flushed, as the standbys that are synchronous now
 *	  count it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_CONFIRM_H
#define FLAKEID_CONFIRM_H

#include "access/xlogdefs.h"
#include "port/atomics.h"
#include "storage/lwlock.h"

/* A lease record in WAL: where it ends, and its lease end. */
typedef struct FlakeLoggedLease
{
	XLogRecPtr	lsn;
	int64		lease_end;
} FlakeLoggedLease;

/* How many of the newest lease records are kept. */
#define FLAKE_CONFIRM_RECORDS	64

/* The confirmation, in the shared generator. */
typedef struct FlakeConfirm
{
	/*
	 * Read by every call while the server has synchronous standbys: the
	 * part of the lease that the standbys synchronous now have, and when
	 * that was last checked: in ms of the layout's clock, and on the
	 * time-stamp counter (FlakeCycles()) where the kernel's clocks run on
	 * it, else 0.  Written by a check, under the lock, in that order; a
	 * reset writes zeros (nothing covered, and old).  cycles_clock is the
	 * wall clock in ms since 1970, read by the last check that stamped
	 * the counter just after its stamp, and written before it: the clock
	 * for a call that finds that check young by the counter (see
	 * FlakeConfirmedClock()).  fresh_cycles, set when the generator is
	 * made, is how many of the counter's cycles pass in less than
	 * FLAKE_CONFIRM_FRESH_MS; 0 where it has none.
	 */
	pg_atomic_uint64 sync_end;
	pg_atomic_uint64 checked;
	pg_atomic_uint64 checked_cycles;
	pg_atomic_uint64 cycles_clock;
	uint64		fresh_cycles;
	char		pad[PG_CACHE_LINE_SIZE - 5 * sizeof(uint64)];

	/*
	 * Protected by lock: the synchronous standbys' number and method as
	 * the lease worker read them, and the newest lease records, oldest
	 * first, with the newest one dropped from the list.
	 */
	LWLock		lock;
	bool		config_known;
	/*
	 * When the lease worker last stood by that reading (ms of the layout's
	 * clock): it wakes on every reload, takes it in, and stamps this.
	 */
	pg_atomic_uint64 config_at;
	int			num_sync;
	int			method;
	int			nlogged;
	FlakeLoggedLease logged[FLAKE_CONFIRM_RECORDS];
	FlakeLoggedLease dropped;
} FlakeConfirm;

/*
 * How long a check of the synchronous standbys counts, in ms of the wall
 * clock: a call uses the confirmed lease end only while the last check is
 * younger, and checks again itself otherwise.
 */
#define FLAKE_CONFIRM_FRESH_MS	2

/*
 * How long the lease worker's reading of the synchronous standbys' number
 * and method is trusted after it last stood by it.  An older reading (a
 * worker stopped, busy, gone or restarting, which may have missed a
 * reload) gives way to one that holds under any reading: every standby
 * that a walsender counts as named must have the lease.
 */
#define FLAKE_CONFIG_FRESH_MS	50

extern void FlakeConfirmInit(FlakeConfirm *c, int tranche);
extern void FlakeConfirmReset(FlakeConfirm *c);
extern void FlakeConfirmPublishConfig(FlakeConfirm *c);
extern void FlakeConfirmStandBy(FlakeConfirm *c, int64 now);
extern void FlakeConfirmRecord(FlakeConfirm *c, XLogRecPtr lsn, int64 lease_end);
extern bool FlakeConfirmCheck(FlakeConfirm *c, int64 now);
extern bool FlakeConfirmRecheckCovers(FlakeConfirm *c, int64 end_ms, int64 now);

/*
 * Whether the last check is younger than FLAKE_CONFIRM_FRESH_MS at now (ms
 * of the layout's clock).  A check writes its end before its time, and a
 * call reads the time before the end: a call that finds the check young
 * reads that check's end or a later one's, never the one before.
 */
static inline bool
FlakeConfirmFresh(FlakeConfirm *c, int64 now)
{
	bool		fresh = (uint64) (now - (int64) pg_atomic_read_u64(&c->checked)) <
		FLAKE_CONFIRM_FRESH_MS;

	pg_read_barrier();
	return fresh;
}

/* The part of the lease the synchronous standbys had at the last check. */
static inline int64
FlakeConfirmedEnd(FlakeConfirm *c)
{
	return (int64) pg_atomic_read_u64(&c->sync_end);
}

/*
 * Whether the synchronous standbys have a lease past end_ms, as last
 * checked fewer than fresh_cycles of the time-stamp counter before cycles
 * (a read of FlakeCycles()).  No check is made: false means "ask the
 * clock" (FlakeConfirmedCovers()).  A check not timed on the counter, and
 * one stamped after cycles was read, are not young.
 */
static inline bool
FlakeConfirmedCoversByCycles(FlakeConfirm *c, int64 end_ms, uint64 cycles)
{
	uint64		checked = pg_atomic_read_u64(&c->checked_cycles);
	bool		fresh = checked != 0 && cycles - checked < c->fresh_cycles;

	pg_read_barrier();
	return fresh && end_ms < FlakeConfirmedEnd(c);
}

/*
 * The wall clock (ms since 1970) as the last check read it just after its
 * stamp of the counter, where that stamp lies fewer than fresh_cycles
 * before cycles (a read of FlakeCycles()); else -1.  The clock was read
 * before this call, and the counter's stamp before the clock: so the
 * clock's millisecond at cycles is at least the result and at most
 * FLAKE_CONFIRM_FRESH_MS past it, unless the clock was set meanwhile.  A
 * call may read the clock of a check made after the stamp's: later, but
 * also read before the call, so the bounds hold for it too.
 */
static inline int64
FlakeConfirmedClock(FlakeConfirm *c, uint64 cycles)
{
	uint64		checked = pg_atomic_read_u64(&c->checked_cycles);
	bool		fresh = checked != 0 && cycles - checked < c->fresh_cycles;

	pg_read_barrier();
	return fresh ? (int64) pg_atomic_read_u64(&c->cycles_clock) : -1;
}

/*
 * Whether the synchronous standbys have a lease past end_ms, as last
 * checked no longer than FLAKE_CONFIRM_FRESH_MS before now; else check
 * again.
 */
static inline bool
FlakeConfirmedCovers(FlakeConfirm *c, int64 end_ms, int64 now)
{
	if (FlakeConfirmFresh(c, now) && end_ms < FlakeConfirmedEnd(c))
		return true;
	return FlakeConfirmRecheckCovers(c, end_ms, now);
}

#endif							/* FLAKEID_CONFIRM_H */
