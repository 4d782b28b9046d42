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

/* Whether a clock reading lies within the layout's 41-bit time field. */
static inline bool
FlakeClockInRange(int64 now)
{
	return (uint64) now <= (uint64) FLAKE_MAX_MS;
}

#endif							/* FLAKEID_CLOCK_H */
