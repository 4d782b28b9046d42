/*
 * The bounds of the synchronous standbys' confirmation, as a call checks
 * it (FlakeConfirmedCovers() in src/confirm.h): an ID whose millisecond
 * is below the confirmed lease end is covered, one in the millisecond at
 * which it ends or later is not; the confirmation counts while its check
 * is younger than FLAKE_CONFIRM_FRESH_MS, and not from that age on; or,
 * timed on the time-stamp counter (FlakeConfirmedCoversByCycles()), while
 * it is younger than fresh_cycles, and never where it was not timed on
 * the counter or the generator has no rate for it; and so does the wall
 * clock that such a check read (FlakeConfirmedClock()).  The
 * slow path, a fresh check of the walsenders, is left out here: it
 * answers "not covered", so that every "covered" below comes from the
 * check's own bounds.
 */
#include "postgres.h"

#include "confirm.h"
#include "tap.h"

bool
FlakeConfirmRecheckCovers(FlakeConfirm *c, int64 end_ms, int64 now)
{
	(void) c;
	(void) end_ms;
	(void) now;
	return false;
}

static void
expect(bool got, bool want, const char *what)
{
	tap_check(got == want, what, "%s, expected %s",
			  got ? "covered" : "not covered", want ? "covered" : "not covered");
}

static void
expect_clock(int64 got, int64 want, const char *what)
{
	tap_check(got == want, what, "%lld, expected %lld", (long long) got, (long long) want);
}

int
main(void)
{
	FlakeConfirm c;
	int64		end = 1000000;
	int64		now = 500000;

	pg_atomic_init_u64(&c.sync_end, (uint64) end);
	pg_atomic_init_u64(&c.checked, (uint64) now);

	expect(FlakeConfirmedCovers(&c, end - 1, now), true,
		   "the millisecond before the confirmed end");
	expect(FlakeConfirmedCovers(&c, end, now), false,
		   "the confirmed end's own millisecond");
	expect(FlakeConfirmedCovers(&c, end + 1, now), false,
		   "the millisecond after the confirmed end");
	expect(FlakeConfirmedCovers(&c, end - 1, now + FLAKE_CONFIRM_FRESH_MS - 1), true,
		   "a check one millisecond younger than FLAKE_CONFIRM_FRESH_MS");
	expect(FlakeConfirmedCovers(&c, end - 1, now + FLAKE_CONFIRM_FRESH_MS), false,
		   "a check FLAKE_CONFIRM_FRESH_MS old");
	expect(FlakeConfirmedCovers(&c, end - 1, now - 1), false,
		   "a check stamped after the clock read (a clock step back)");

	/* the same on the time-stamp counter: fresh_cycles, a counter's count */
	c.fresh_cycles = 2000;
	pg_atomic_init_u64(&c.checked_cycles, 7000);
	expect(FlakeConfirmedCoversByCycles(&c, end - 1, 7000), true,
		   "by the counter: a check at the counter's read");
	expect(FlakeConfirmedCoversByCycles(&c, end - 1, 7000 + 2000 - 1), true,
		   "by the counter: a check one cycle younger than fresh_cycles");
	expect(FlakeConfirmedCoversByCycles(&c, end - 1, 7000 + 2000), false,
		   "by the counter: a check fresh_cycles old");
	expect(FlakeConfirmedCoversByCycles(&c, end, 7000), false,
		   "by the counter: the confirmed end's own millisecond");
	expect(FlakeConfirmedCoversByCycles(&c, end - 1, 7000 - 1), false,
		   "by the counter: a check stamped after the counter's read");

	/* the check's wall clock, for the same calls: where young only */
	pg_atomic_init_u64(&c.cycles_clock, 1800000000000);
	expect_clock(FlakeConfirmedClock(&c, 7000 + 2000 - 1), 1800000000000,
				 "the check's clock: one cycle younger than fresh_cycles");
	expect_clock(FlakeConfirmedClock(&c, 7000 + 2000), -1,
				 "the check's clock: fresh_cycles old");
	expect_clock(FlakeConfirmedClock(&c, 7000 - 1), -1,
				 "the check's clock: a check stamped after the counter's read");

	c.fresh_cycles = 0;
	expect(FlakeConfirmedCoversByCycles(&c, end - 1, 7000), false,
		   "by the counter: a generator that has no counter's rate");
	expect_clock(FlakeConfirmedClock(&c, 7000), -1,
				 "the check's clock: a generator that has no counter's rate");
	c.fresh_cycles = PG_UINT64_MAX;
	pg_atomic_init_u64(&c.checked_cycles, 0);
	expect(FlakeConfirmedCoversByCycles(&c, end - 1, 7000), false,
		   "by the counter: a check not timed on it");
	expect_clock(FlakeConfirmedClock(&c, 7000), -1,
				 "the check's clock: a check not timed on the counter");
	return tap_done();
}
