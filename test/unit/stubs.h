/*
 * The server's functions as every unit test that builds a file of src/
 * against stubs has them: one process, so releasing a lock and setting
 * one up do nothing (each test has its own LWLockAcquire(), which is
 * where it runs another process's step); a message below ERROR is
 * dropped before it is made (a WARNING counted in stub_warnings), and an
 * ERROR ends the test.  A test includes this once, after the file of src/
 * it builds and tap.h.
 */
#ifndef FLAKE_UNIT_STUBS_H
#define FLAKE_UNIT_STUBS_H

void
LWLockRelease(LWLock *lock)
{
	(void) lock;
}

void
LWLockInitialize(LWLock *lock, int tranche_id)
{
	(void) lock;
	(void) tranche_id;
}

/* the WARNINGs reported, which a test may reset and count */
static int	stub_warnings = 0;

bool
errstart(int elevel, const char *domain)
{
	(void) domain;
	if (elevel == WARNING)
		stub_warnings++;
	if (elevel >= ERROR)
	{
		printf("Bail out! an error was reported\n");
		exit(2);
	}
	return false;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	printf("Bail out! a message was written at %s:%d (%s)\n", filename, lineno, funcname);
	exit(2);
}

int
errcode(int sqlerrcode)
{
	(void) sqlerrcode;
	return 0;
}

int
errcode_for_file_access(void)
{
	return 0;
}

int
errmsg(const char *fmt,...)
{
	(void) fmt;
	return 0;
}

int
errdetail(const char *fmt,...)
{
	(void) fmt;
	return 0;
}

int
errhint(const char *fmt,...)
{
	(void) fmt;
	return 0;
}

const char *
timestamptz_to_str(TimestampTz t)
{
	(void) t;
	return "";
}

#endif							/* FLAKE_UNIT_STUBS_H */
