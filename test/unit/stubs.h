/*
 * The server's functions as every unit test that builds a file of src/
 * against stubs has them: one process, so releasing a lock and setting
 * one up do nothing (each test has its own LWLockAcquire(), which is
 * where it runs another process's step); a message below ERROR is noted
 * (its level and format, for the test to read); an ERROR is noted too and
 * jumps to PG_exception_stack where a test set it (as PG_TRY does), and
 * otherwise ends the test.  A test includes this once, after the file of
 * src/ it builds and tap.h.
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

/*
 * The messages below ERROR reported, which a test may reset and read: how
 * many WARNINGs, and the level and format of each message, in order.
 */
#define STUB_MESSAGES 32
sigjmp_buf *PG_exception_stack = NULL;
ErrorContextCallback *error_context_stack = NULL;
static bool stub_in_error = false;
static int	stub_error_code = 0;	/* the last ERROR's SQLSTATE */
static int	stub_warnings = 0;
static int	stub_nmessages = 0;
static int	stub_level[STUB_MESSAGES];
static const char *stub_format[STUB_MESSAGES];
static char stub_text[STUB_MESSAGES][256];	/* each message, formatted */
static char stub_detail[512];	/* the last DETAIL, formatted */

bool
errstart(int elevel, const char *domain)
{
	(void) domain;
	if (elevel >= ERROR)
	{
		if (PG_exception_stack == NULL)
		{
			tap_bail("an error was reported");
		}
		stub_in_error = true;
		stub_error_code = 0;
	}
	if (elevel == WARNING)
		stub_warnings++;
	if (stub_nmessages < STUB_MESSAGES)
	{
		stub_level[stub_nmessages] = elevel;
		stub_format[stub_nmessages] = NULL;
	}
	stub_nmessages++;
	return true;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	(void) filename;
	(void) lineno;
	(void) funcname;
	if (stub_in_error)
	{
		stub_in_error = false;
		siglongjmp(*PG_exception_stack, 1);
	}
}

/* how many messages of a level were reported since the count was reset */
pg_attribute_unused() static int
stub_count(int elevel)
{
	int			n = 0;

	for (int i = 0; i < stub_nmessages && i < STUB_MESSAGES; i++)
		n += stub_level[i] == elevel;
	return n;
}

/* whether the message i's format begins with start */
pg_attribute_unused() static bool
stub_message_is(int i, const char *start)
{
	return i >= 0 && i < stub_nmessages && i < STUB_MESSAGES && stub_format[i] != NULL &&
		strncmp(stub_format[i], start, strlen(start)) == 0;
}

int
errcode(int sqlerrcode)
{
	if (stub_in_error)
		stub_error_code = sqlerrcode;
	return 0;
}

int
errcode_for_file_access(void)
{
	if (stub_in_error)
		stub_error_code = ERRCODE_IO_ERROR;
	return 0;
}

int
errmsg(const char *fmt,...)
{
	if (stub_nmessages > 0 && stub_nmessages <= STUB_MESSAGES)
	{
		va_list		args;

		stub_format[stub_nmessages - 1] = fmt;
		va_start(args, fmt);
		vsnprintf(stub_text[stub_nmessages - 1], sizeof(stub_text[0]), fmt, args);
		va_end(args);
	}
	return 0;
}

int
errdetail(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(stub_detail, sizeof(stub_detail), fmt, args);
	va_end(args);
	return 0;
}

int
errhint(const char *fmt,...)
{
	(void) fmt;
	return 0;
}

/* a timestamp as its number, so that a message shows which one it names */
const char *
timestamptz_to_str(TimestampTz t)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long) t);
	return buf;
}

#endif							/* FLAKE_UNIT_STUBS_H */
