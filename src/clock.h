/*-------------------------------------------------------------------------
 *
 * clock.h
 *	  The wall clock, in milliseconds since a layout's epoch.
 *
 * The generator reads CLOCK_REALTIME.  While the IDs run ahead of the
 * clock it reads CLOCK_REALTIME_COARSE instead: cheaper, updated once a
 * kernel tick, and never ahead of the precise clock.  Waits are measured
 * on the monotonic clock (latch timeouts, instr_time), never on these, and
 * so is how long a backend's block of IDs (flakeid.cache) stays valid.
 * How young the synchronous standbys' confirmation is may be measured on
 * the processor's time-stamp counter instead (FlakeCycles()).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_CLOCK_H
#define FLAKEID_CLOCK_H

#include <time.h>

#include "layout.h"

/*
 * Milliseconds since the epoch by one of the system's wall clocks, and,
 * when ns_left is given, how many nanoseconds are left of that millisecond.
 */
static inline int64
FlakeReadClock(clockid_t clock, const FlakeLayout *layout, int64 *ns_left)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	if (ns_left)
		*ns_left = 1000000 - ts.tv_nsec % 1000000;
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - layout->epoch_ms;
}

/* The precise wall clock; ns_left as for FlakeReadClock(). */
static inline int64
FlakeClockMs(const FlakeLayout *layout)
{
	return FlakeReadClock(CLOCK_REALTIME, layout, NULL);
}

static inline int64
FlakeClockMsLeft(const FlakeLayout *layout, int64 *ns_left)
{
	return FlakeReadClock(CLOCK_REALTIME, layout, ns_left);
}

/* The monotonic clock in nanoseconds, which no step of the wall clock moves. */
static inline int64
FlakeMonotonicNs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How many times FlakeWallOffsetNs() may read the clocks. */
#define FLAKE_OFFSET_TRIES		4

/* Monotonic reads this close together need no further try. */
#define FLAKE_OFFSET_SPREAD_NS	INT64CONST(100000)

/*
 * The wall clock minus the monotonic one, in ns.  Both run at the rate
 * NTP slews them to; only a step of the wall clock changes the difference,
 * however long the process slept in between.  The wall clock is read
 * between two reads of the monotonic one and set against their middle, so
 * that a process taken off the CPU between its reads is not taken for a
 * step of the clock.  Of up to FLAKE_OFFSET_TRIES tries, the one whose
 * monotonic reads lie closest together counts: it is off by at most half
 * their distance.
 */
static inline int64
FlakeWallOffsetNs(void)
{
	int64		best = 0;
	int64		best_spread = PG_INT64_MAX;

	for (int i = 0; i < FLAKE_OFFSET_TRIES && best_spread >= FLAKE_OFFSET_SPREAD_NS; i++)
	{
		struct timespec ts;
		int64		before = FlakeMonotonicNs();
		int64		after;

		clock_gettime(CLOCK_REALTIME, &ts);
		after = FlakeMonotonicNs();
		if (after - before < best_spread)
		{
			best_spread = after - before;
			best = (int64) ts.tv_sec * 1000000000 + ts.tv_nsec -
				(before + (after - before) / 2);
		}
	}
	return best;
}

/* The coarse wall clock: behind the precise one by less than its slack. */
static inline int64
FlakeCoarseClockMs(const FlakeLayout *layout)
{
	return FlakeReadClock(CLOCK_REALTIME_COARSE, layout, NULL);
}

/*
 * How far the precise clock may be ahead of the coarse one: a few of the
 * coarse clock's ticks, to be safe; "never trust it" if the kernel does
 * not say.
 */
static inline int64
FlakeCoarseSlackMs(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_REALTIME_COARSE, &res) != 0)
		return PG_INT64_MAX / 4;
	return 4 * ((int64) res.tv_sec * 1000 + res.tv_nsec / 1000000 + 1);
}

/*
 * The processor's time-stamp counter, on x86-64; 0 elsewhere.  Cheaper to
 * read than the precise clock, it times how young the synchronous
 * standbys' confirmation is (see confirm.c), where the kernel keeps its own
 * clocks on it: it then runs at one rate, in step on every CPU, and the
 * precise clock is computed from it anyway.
 */
static inline uint64
FlakeCycles(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

/* Whether a clock reading lies within the layout's 41-bit time field. */
static inline bool
FlakeClockInRange(int64 now)
{
	return (uint64) now <= (uint64) FLAKE_MAX_MS;
}

#endif							/* FLAKEID_CLOCK_H */
