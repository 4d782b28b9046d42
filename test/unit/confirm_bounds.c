/*
 * The bounds of the synchronous standbys' confirmation, as a call checks
 * it (FlakeConfirmedCovers() in src/confirm.h): an ID whose millisecond
 * is below the confirmed lease end is covered, one in the millisecond at
 * which it ends or later is not; the confirmation counts while its check
 * is younger than FLAKE_CONFIRM_FRESH_MS, and not from that age on.  The
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
	return tap_done();
}
