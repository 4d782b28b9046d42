/*
 * The wall clock's offset from the monotonic one, as the lease worker
 * reads it to see the wall clock step (FlakeWallOffsetNs() in
 * src/clock.h), from clocks made here: a process taken off the CPU between
 * its reads of the two clocks must not read a step, whichever read it was
 * taken off before; a read whose monotonic reads lie close together is
 * tried no further; and a process taken off on every try gets the offset
 * within half the smallest distance of its monotonic reads; a step of the
 * wall clock shows in full.
 */
#include "postgres.h"

#include <time.h>

#include "tap.h"

/* The time that passes before each read of a clock, in ns, in turn. */
static int64 delays[64];
static int	ndelays;
static int	reads;
static int64 mono_now;

/* the wall clock's true offset from the monotonic one */
static int64 true_offset = INT64CONST(1700000000123456789);

static int
fake_clock_gettime(clockid_t clock, struct timespec *ts)
{
	int64		ns;

	mono_now += reads < ndelays ? delays[reads] : 50;
	reads++;
	ns = clock == CLOCK_MONOTONIC ? mono_now : mono_now + true_offset;
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

#define clock_gettime fake_clock_gettime
#include "clock.h"

/* How far the offset read is from the true one, when the reads wait as given. */
static int64
offset_with(const int64 *wait, int n)
{
	ndelays = n;
	for (int i = 0; i < n; i++)
		delays[i] = wait[i];
	reads = 0;
	mono_now = INT64CONST(1000000000000);
	return FlakeWallOffsetNs() - true_offset;
}

/*
 * The offset read is off by exactly (wait before the wall clock's read -
 * wait after it) / 2 of the try that counts: the fake clocks move only
 * when read.
 */
static void
expect_off(int64 off, int64 want, const char *what)
{
	tap_check(off == want, what,
			  "off by %lld ns, expected %lld", (long long) off, (long long) want);
}

static void
expect_reads(int want, const char *what)
{
	tap_check(reads == want, what, "%d reads, expected %d", reads, want);
}

int
main(void)
{
	int64		ms = 1000000;
	int64		off;

	{
		int64		wait[] = {50, 50, 50};

		off = offset_with(wait, 3);
		expect_off(off, 0, "no process switch: the offset as it is");
		expect_reads(3, "no process switch: one try");
	}
	{
		/* off the CPU for 5 ms before the wall clock's read, then not */
		int64		wait[] = {50, 5 * ms, 50, 50, 50, 50};

		off = offset_with(wait, 6);
		expect_off(off, 0, "away before the wall clock's read: no step read");
		expect_reads(6, "away before the wall clock's read: a second try");
	}
	{
		/* off the CPU for 5 ms after the wall clock's read, then not */
		int64		wait[] = {50, 50, 5 * ms, 50, 50, 50};

		off = offset_with(wait, 6);
		expect_off(off, 0, "away after the wall clock's read: no step read");
	}
	{
		/* away on every try, least on the third */
		int64		wait[] = {50, 5 * ms, 50, 50, 4 * ms, 50, 50, ms, 50, 50, 3 * ms, 50,
		50, 50, 50};

		off = offset_with(wait, 15);
		expect_off(off, (ms - 50) / 2,
				   "away before the wall clock's read on every try: the closest try counts, from the middle of its monotonic reads");
		expect_reads(3 * FLAKE_OFFSET_TRIES, "away on every try: FLAKE_OFFSET_TRIES tries");
	}
	{
		/* away after the wall clock's read on every try, least on the third */
		int64		wait[] = {50, 50, 5 * ms, 50, 50, 4 * ms, 50, 50, ms, 50, 50, 3 * ms,
		50, 50, 50};

		off = offset_with(wait, 15);
		expect_off(off, -(ms - 50) / 2,
				   "away after the wall clock's read on every try: the closest try counts, from the middle of its monotonic reads");
	}
	{
		/* a step back of the wall clock itself shows in full */
		int64		wait[] = {50, 50, 50};
		int64		before;
		int64		after;

		before = offset_with(wait, 3) + true_offset;
		true_offset -= 10 * ms;
		after = offset_with(wait, 3) + true_offset;
		expect_off(after - before + 10 * ms, 0, "a step of the wall clock: read in full");
	}
	return tap_done();
}
