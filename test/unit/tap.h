/*
 * What every unit test under test/unit prints: a TAP line a check ("ok N -
 * what", or "not ok N - what: detail"), then the plan and a summary line.
 * A test includes it once, after postgres.h.
 */
#ifndef FLAKE_UNIT_TAP_H
#define FLAKE_UNIT_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int	tap_checks = 0;
static int	tap_failures = 0;

/* one check: passed, or failed with a detail made from fmt */
static void __attribute__((format(printf, 3, 4)))
tap_check(bool passed, const char *what, const char *fmt,...)
{
	tap_checks++;
	if (passed)
	{
		printf("ok %d - %s\n", tap_checks, what);
		return;
	}
	tap_failures++;
	printf("not ok %d - %s: ", tap_checks, what);
	{
		va_list		args;

		va_start(args, fmt);
		vprintf(fmt, args);
		va_end(args);
	}
	printf("\n");
}

/* the test cannot go on: a TAP bail-out, and exit status 2 */
static void __attribute__((noreturn, unused))
tap_bail(const char *why)
{
	printf("Bail out! %s\n", why);
	exit(2);
}

/* the plan and the summary; main()'s exit status */
static int
tap_done(void)
{
	printf("1..%d\n", tap_checks);
	printf("%d passed, %d failed\n", tap_checks - tap_failures, tap_failures);
	return tap_failures > 0;
}

#endif							/* FLAKE_UNIT_TAP_H */
