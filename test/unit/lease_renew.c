/*
 * What the lease worker writes (FlakeLeaseRenew() in src/lease.c), at a
 * clock set here: a renewal once the clock or the IDs come within half a
 * lease of its end (at exactly half, not yet), a lease past the last ID
 * reserved but no further than flakeid.max_lead ahead of the clock, or
 * past what a waiting call asks for; none while idle, not ready or in
 * recovery; none past the last millisecond.  After a change of timeline,
 * or with the newest lease in memory only, a floor first: above the
 * newest lease, and after a change of timeline above the clock by
 * flakeid.max_lead, a lease and flakeid.max_clock_skew, which becomes the
 * promotion floor.
 * The shared generator, the state file and the server's other functions
 * are stubs: the test sets the word, the newest lease, the timeline and
 * the clock, and reads the lease stored.
 */
#include "postgres.h"

#include <stdio.h>
#include <time.h>

#include "../../src/lease.c"
#include "tap.h"
#include "stubs.h"

/* the settings and the server's variables that src/lease.c reads */
int			flake_max_lead_ms = 3000;
int			flake_max_clock_skew_ms = 1000;

static const FlakeLayout layout = {INT64CONST(1735689600000), 10};

/* what the test sets */
static int64 clock_ms;			/* the wall clock, in ms of the layout */
static FlakeStatus status;
static bool in_recovery;
static TimeLineID timeline;
static bool have_recorded;
static FlakeLease recorded;
static bool store_fails;
static bool store_errors;		/* the write raises an ERROR (out of memory, say) */

/* what the code did */
static int	nstored;
static FlakeLease stored;
static bool stored_floor;
static int	broadcasts;

static FlakeShared *shared;


int
clock_gettime(clockid_t clock, struct timespec *ts)
{
	int64		ms = layout.epoch_ms + clock_ms;

	(void) clock;
	ts->tv_sec = ms / 1000;
	ts->tv_nsec = (ms % 1000) * 1000000;
	return 0;
}

uint32
FlakeSnapshot(FlakeShared *s, FlakeLayout *out)
{
	(void) s;
	*out = layout;
	return FlakeWord(1, status, 3);
}

bool
FlakeRecordedLease(FlakeShared *s, FlakeLease *lease)
{
	(void) s;
	if (have_recorded)
		*lease = recorded;
	return have_recorded;
}

bool
FlakeStoreLease(FlakeShared *s, const FlakeLease *lease, bool is_floor)
{
	if (store_fails)
	{
		errno = ENOSPC;
		return false;
	}
	if (store_errors)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	nstored++;
	stored = *lease;
	stored_floor = is_floor;
	if ((int64) pg_atomic_read_u64(&s->lease_end) < lease->lease_end)
		pg_atomic_write_u64(&s->lease_end, (uint64) lease->lease_end);
	return true;
}

TimeLineID
GetWALInsertionTimeLine(void)
{
	return timeline;
}

bool
RecoveryInProgress(void)
{
	return in_recovery;
}

int64
FlakeFloorLeadMs(void)
{
	return flake_max_lead_ms;
}

void
ConditionVariableBroadcast(ConditionVariable *cv)
{
	(void) cv;
	broadcasts++;
}

/* leases to WAL (preloaded, wal_level replica or more), or not */
static bool can_log;
static int	nlogged;
static int64 noted_end;

bool
FlakeCanLogLease(void)
{
	return can_log;
}

static bool standbys_confirm;
static int	confirm_checks;

bool
FlakeStandbyConfirms(void)
{
	return standbys_confirm;
}

XLogRecPtr
FlakeWalLogLease(const FlakeLease *lease)
{
	if (!can_log)
		tap_bail("a lease was logged");
	(void) lease;
	nlogged++;
	return (XLogRecPtr) (1000 + nlogged);
}

void
FlakeConfirmRecord(FlakeConfirm *c, XLogRecPtr lsn, int64 lease_end)
{
	(void) c;
	if (lsn != (XLogRecPtr) (1000 + nlogged))
		tap_bail("another record than the one logged was noted");
	noted_end = lease_end;
}

bool
FlakeConfirmCheck(FlakeConfirm *c, int64 now)
{
	(void) c;
	if (now != clock_ms)
		tap_bail("the standbys were checked at another time than the clock's");
	confirm_checks++;
	return true;
}

bool
LWLockAcquire(LWLock *lock, LWLockMode mode)
{
	(void) lock;
	(void) mode;
	return true;
}

/* flakeid_accept_layout(): the generator, or none; a superuser or not */
static bool no_generator;
static bool is_superuser;

FlakeShared *
FlakeAttach(void)
{
	return no_generator ? NULL : shared;
}

/* flakeid_state_file(): the copies the file holds, and the rows shown */
static int	monitor_checks;
static int	file_copies;		/* returned by FlakeStateFileCopies() */
static FlakeFileCopy file_copy[FLAKE_FILE_SLOTS];
static int	nrows;
static uint32 srf_flags;
static Datum row_values[FLAKE_FILE_SLOTS][9];
static bool row_nulls[FLAKE_FILE_SLOTS][9];

void
FlakeCheckMonitor(const char *function)
{
	if (strcmp(function, "flakeid_state_file") != 0)
		tap_bail("another function was checked");
	monitor_checks++;
}

int
FlakeStateFileCopies(FlakeFileCopy *copies)
{
	if (file_copies < 0)
	{
		errno = EACCES;
		return -1;
	}
	memcpy(copies, file_copy, sizeof(file_copy));
	return file_copies;
}

void
FlakeReportInvalidLayout(const char *bad_setting)
{
	(void) bad_setting;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid layout setting")));
}

bool
superuser(void)
{
	return is_superuser;
}

char *
pstrdup(const char *in)
{
	return strdup(in);
}

void
InitMaterializedSRF(FunctionCallInfo fcinfo, uint32 flags)
{
	(void) fcinfo;
	srf_flags = flags;
}

#if PG_VERSION_NUM >= 160000
void
tuplestore_putvalues(Tuplestorestate *state, TupleDesc tdesc,
					 const Datum *values, const bool *isnull)
#else
void
tuplestore_putvalues(Tuplestorestate *state, TupleDesc tdesc,
					 Datum *values, bool *isnull)
#endif
{
	(void) state;
	(void) tdesc;
	if (nrows >= FLAKE_FILE_SLOTS)
		tap_bail("too many rows");
	memcpy(row_values[nrows], values, sizeof(row_values[0]));
	memcpy(row_nulls[nrows], isnull, sizeof(row_nulls[0]));
	nrows++;
}

void
pg_re_throw(void)
{
	if (PG_exception_stack == NULL)
		tap_bail("an error was thrown again with no one to catch it");
	siglongjmp(*PG_exception_stack, 1);
}


/*
 * A server on timeline 1 that generates, its lease ending at end: the
 * newest lease on disk (made on timeline 1), the last ID reserved in
 * next_ms (none when negative), the clock at 100 s.
 */
static void
set_up(int64 end, int64 next_ms)
{
	if (shared == NULL)
		shared = calloc(1, sizeof(FlakeShared));
	memset(shared, 0, sizeof(FlakeShared));
	pg_atomic_init_u64(&shared->next_tick,
					   next_ms < 0 ? 0 : FlakeTickOfMs(&layout, next_ms) + 1);
	pg_atomic_init_u64(&shared->lease_end, (uint64) end);
	pg_atomic_init_u64(&shared->lease_wanted, 0);
	pg_atomic_init_u32(&shared->renew_asked, 0);
	pg_atomic_init_u64(&shared->promotion_floor, 0);
	clock_ms = 100000;
	status = FLAKE_GEN_READY;
	in_recovery = false;
	timeline = 1;
	have_recorded = true;
	FlakeLeaseFill(&recorded, &layout, 3, end, 1);
	store_fails = false;
	store_errors = false;
	standbys_confirm = false;
	confirm_checks = 0;
	nstored = 0;
	broadcasts = 0;
	memset(&stored, 0, sizeof(stored));
	stub_nmessages = 0;
	no_generator = false;
	is_superuser = true;
	can_log = false;
	nlogged = 0;
	noted_end = -1;
	shared->layout = layout;
	shared->configured = layout;
	shared->configured_valid = true;
	shared->have_recorded = true;
	shared->recorded = recorded;
	shared->accepting = false;
	shared->node_id = 3;
}

/* The lease end a renewal stores now, or -1 for none. */
static int64
renew(uint64 *renewed_tick)
{
	uint64		local = UINT64_MAX;

	FlakeLeaseRenew(shared, renewed_tick ? renewed_tick : &local);
	return nstored ? stored.lease_end : -1;
}

static void
check_end(const char *what, int64 got, int64 want)
{
	tap_check(got == want, what, "stored %lld, want %lld", (long long) got, (long long) want);
}

/* with leases to WAL: a renewal is logged first, and noted for the standbys */
static void
check_logged(void)
{
	set_up(100400, -1);
	can_log = true;
	check_end("a renewal with leases to WAL", renew(NULL), 101000);
	tap_check(nlogged == 1 && noted_end == 101000,
			  "... logged once, and its record noted with its end for the standbys' confirmation",
			  "%d logged, noted end %lld", nlogged, (long long) noted_end);
}

/* flakeid_state_file(): a row for each copy present, NULLs where not valid */
static void
check_state_file(void)
{
	FunctionCallInfoBaseData fcinfo;
	ReturnSetInfo rsinfo;
	sigjmp_buf	jump;
	bool		failed = false;

	stub_nmessages = 0;
	memset(&fcinfo, 0, sizeof(fcinfo));
	memset(&rsinfo, 0, sizeof(rsinfo));
	fcinfo.resultinfo = (Node *) &rsinfo;
	memset(file_copy, 0, sizeof(file_copy));
	file_copy[0].offset = 0;
	file_copy[0].present = true;
	file_copy[0].valid = true;
	file_copy[0].version = 3;
	file_copy[0].serial = 7;
	FlakeLeaseFill(&file_copy[0].lease, &layout, 3, 5000, 1);
	file_copy[1].offset = 4096;
	file_copy[1].present = true;
	file_copy[1].version = 2;
	file_copy[1].serial = 9;
	file_copy[2].offset = 512;
	file_copies = FLAKE_FILE_SLOTS;
	nrows = 0;
	monitor_checks = 0;
	(void) flakeid_state_file(&fcinfo);
	tap_check(monitor_checks == 1 && nrows == 2 && srf_flags == 0,
			  "flakeid_state_file(): the caller checked, a row for each copy present, of the declared columns",
			  "%d checks, %d rows, flags %u", monitor_checks, nrows, srf_flags);
	tap_check(DatumGetInt32(row_values[0][0]) == 0 && DatumGetBool(row_values[0][1]) &&
			  DatumGetInt32(row_values[0][2]) == 3 && DatumGetInt64(row_values[0][3]) == 7 &&
			  DatumGetTimestampTz(row_values[0][4]) == FlakeTimestamp(&layout, 0) &&
			  DatumGetInt32(row_values[0][5]) == 10 && DatumGetInt32(row_values[0][6]) == 3 &&
			  DatumGetInt64(row_values[0][7]) == 5000 &&
			  DatumGetTimestampTz(row_values[0][8]) == FlakeTimestamp(&layout, 5000) &&
			  memchr(row_nulls[0], true, 9) == NULL,
			  "... a valid copy: offset, version, serial, epoch, node_bits, node id and lease end",
			  "offset %d, version %d, serial %lld, bits %d, node %d, end %lld",
			  DatumGetInt32(row_values[0][0]), DatumGetInt32(row_values[0][2]),
			  (long long) DatumGetInt64(row_values[0][3]), DatumGetInt32(row_values[0][5]),
			  DatumGetInt32(row_values[0][6]), (long long) DatumGetInt64(row_values[0][7]));
	tap_check(DatumGetInt32(row_values[1][0]) == 4096 && !DatumGetBool(row_values[1][1]) &&
			  !row_nulls[1][0] && !row_nulls[1][1] &&
			  memchr(row_nulls[1] + 2, false, 7) == NULL,
			  "... a damaged copy: its offset, not valid, the rest NULL", "offset %d",
			  DatumGetInt32(row_values[1][0]));
	file_copies = 0;
	nrows = 0;
	(void) flakeid_state_file(&fcinfo);
	tap_check(nrows == 0, "flakeid_state_file(), no file: no rows", "%d rows", nrows);
	file_copies = -1;
	PG_exception_stack = &jump;
	if (sigsetjmp(jump, 0) == 0)
		(void) flakeid_state_file(&fcinfo);
	else
		failed = true;
	PG_exception_stack = NULL;
	tap_check(failed && stub_error_code == ERRCODE_IO_ERROR &&
			  strcmp(stub_text[stub_nmessages - 1], "could not read flakeid state file \"flakeid.state\": Permission denied") == 0,
			  "flakeid_state_file(), a file that cannot be read: the file's error",
			  "failed %d: %s", failed, stub_text[stub_nmessages - 1]);
}

/*
 * flakeid_accept_layout(): true with its result, or false on an ERROR,
 * whose SQLSTATE stub_error_code holds
 */
static bool
accept(bool *result)
{
	sigjmp_buf	jump;
	sigjmp_buf *outer = PG_exception_stack;
	bool		returned = false;

	PG_exception_stack = &jump;
	if (sigsetjmp(jump, 0) == 0)
	{
		*result = DatumGetBool(flakeid_accept_layout(NULL));
		returned = true;
	}
	PG_exception_stack = outer;
	return returned;
}

/* the layout configured now: node_bits, and the epoch moved by shift ms */
static void
configure(int node_bits, int64 shift)
{
	shared->configured.node_bits = node_bits;
	shared->configured.epoch_ms = layout.epoch_ms + shift;
}

/* the last message's format starts with start */
static bool
last_message_is(const char *start)
{
	return stub_message_is(stub_nmessages - 1, start);
}

static void
check_accept(void)
{
	bool		result = false;
	bool		returned;
	char		want[256];

	/* node_bits 10 -> 12, the same epoch: a floor at the recorded lease end */
	set_up(101000, -1);
	configure(12, 0);
	returned = accept(&result);
	tap_check(returned && result && nstored == 1 && stored_floor &&
			  stored.node_bits == 12 && stored.epoch_ms == layout.epoch_ms &&
			  stored.lease_end == 101000 && stored.node_id == 3 && stored.timeline == 1 &&
			  !shared->accepting,
			  "accepting node_bits 12: a floor lease of the new layout at the recorded lease end",
			  "returned %d, result %d, %d stored, floor %d, bits %d, end %lld, accepting %d",
			  returned, result, nstored, stored_floor, stored.node_bits,
			  (long long) stored.lease_end, shared->accepting);
	snprintf(want, sizeof(want), "flakeid accepted a new layout: node_bits 12, epoch %s",
			 timestamptz_to_str(FlakeTimestamp(&layout, 0)));
	tap_check(stub_count(LOG) == 1 && strcmp(stub_text[stub_nmessages - 1], want) == 0,
			  "... logged once, with the new node_bits and epoch", "%d messages: %s", stub_nmessages,
			  stub_text[stub_nmessages - 1]);

	/* the epoch a year earlier: the floor is the recorded end in time */
	set_up(101000, -1);
	configure(10, -INT64CONST(31536000000));
	clock_ms = 100000 + INT64CONST(31536000000);	/* the clock in the new layout's ms */
	returned = accept(&result);
	tap_check(returned && result && stored.lease_end == 101000 + INT64CONST(31536000000) &&
			  stored.epoch_ms == layout.epoch_ms - INT64CONST(31536000000),
			  "accepting an epoch a year earlier: the floor at the same moment as the recorded end",
			  "returned %d, end %lld", returned, (long long) stored.lease_end);

	/* an epoch a second later: the floor is the recorded end as a number */
	set_up(101000, -1);
	configure(10, 1000);
	clock_ms = 99000;
	returned = accept(&result);
	tap_check(returned && result && stored.lease_end == 101000,
			  "accepting an epoch a second later: the floor at the recorded end as a number, a second later in time",
			  "returned %d, end %lld", returned, (long long) stored.lease_end);

	/* the floor flakeid.max_lead ahead of the clock: accepted; 1 ms more: refused */
	set_up(103000, -1);
	configure(12, 0);
	returned = accept(&result);
	tap_check(returned && result, "a floor exactly flakeid.max_lead ahead of the clock: accepted",
			  "returned %d, SQLSTATE %d", returned, stub_error_code);
	set_up(103001, -1);
	configure(12, 0);
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE &&
			  last_message_is("cannot accept the new flakeid layout yet") && nstored == 0 &&
			  !shared->accepting,
			  "a floor 1 ms further: refused (55000), nothing stored",
			  "returned %d, SQLSTATE %d, %d stored", returned, stub_error_code, nstored);
	tap_check(strstr(stub_detail, ", 3001 ms ahead of the clock.") != NULL,
			  "... saying how far ahead the first ID would read", "%s", stub_detail);

	/* a floor past the range */
	set_up(FLAKE_MAX_MS + 1, -1);
	configure(12, 0);
	clock_ms = FLAKE_MAX_MS - 100;
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_DATETIME_VALUE_OUT_OF_RANGE &&
			  last_message_is("cannot accept the new flakeid layout: its time range is used up"),
			  "a floor past the last millisecond: refused, the range used up",
			  "returned %d, SQLSTATE %d", returned, stub_error_code);
	snprintf(want, sizeof(want), "past the end of its 41-bit time field (%lld).",
			 (long long) FlakeTimestamp(&shared->configured, FLAKE_MAX_MS + 1));
	tap_check(strstr(stub_detail, want) != NULL, "... naming where the field ends", "%s", stub_detail);
	set_up(FLAKE_MAX_MS, -1);
	configure(12, 0);
	clock_ms = FLAKE_MAX_MS - 100;
	returned = accept(&result);
	tap_check(returned && result && stored.lease_end == FLAKE_MAX_MS,
			  "a floor at the last millisecond: accepted", "returned %d, SQLSTATE %d",
			  returned, stub_error_code);

	/* on a new timeline: the floor also above an old primary's IDs */
	set_up(101000, -1);
	configure(12, 0);
	timeline = 2;
	returned = accept(&result);
	tap_check(returned && result && stored.lease_end == 100000 + 3000 + 1000 + 1000 &&
			  stored.timeline == 2,
			  "accepting on a new timeline: the floor the clock, flakeid.max_lead, a lease and flakeid.max_clock_skew ahead",
			  "returned %d, end %lld", returned, (long long) stored.lease_end);

	set_up(101000, -1);
	configure(12, 0);
	timeline = 2;
	shared->recorded.timeline = 2;
	returned = accept(&result);
	tap_check(returned && result && stored.lease_end == 101000,
			  "accepting on the timeline the recorded lease was made on: the floor at its end",
			  "returned %d, end %lld", returned, (long long) stored.lease_end);

	/* nothing to accept: the same layout, no valid setting, or no lease recorded */
	set_up(101000, -1);
	returned = accept(&result);
	tap_check(returned && !result && nstored == 0 && last_message_is("flakeid layout is unchanged"),
			  "the layout unchanged: false, with a NOTICE", "returned %d, result %d", returned, result);
	set_up(101000, -1);
	configure(12, 0);
	shared->have_recorded = false;
	returned = accept(&result);
	tap_check(returned && !result && nstored == 0,
			  "no lease recorded: nothing to accept", "returned %d, result %d", returned, result);
	set_up(101000, -1);
	configure(12, 0);
	shared->configured_valid = false;
	returned = accept(&result);
	tap_check(returned && !result && nstored == 0,
			  "a layout setting rejected, the generator not told so: false", "returned %d, result %d",
			  returned, result);
	set_up(101000, -1);
	configure(12, 0);
	shared->configured_valid = false;
	status = FLAKE_GEN_LAYOUT_INVALID;
	pg_atomic_init_u32(&shared->word, FlakeWord(1, FLAKE_GEN_LAYOUT_INVALID, 3));
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_INVALID_PARAMETER_VALUE,
			  "a layout setting rejected: its error", "returned %d, SQLSTATE %d", returned,
			  stub_error_code);

	/* who may accept, where, and one at a time */
	set_up(101000, -1);
	configure(12, 0);
	is_superuser = false;
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_INSUFFICIENT_PRIVILEGE && nstored == 0,
			  "not a superuser: refused (42501)", "returned %d, SQLSTATE %d", returned, stub_error_code);
	set_up(101000, -1);
	configure(12, 0);
	no_generator = true;
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
			  "no generator on this server: refused (55000)", "returned %d, SQLSTATE %d", returned,
			  stub_error_code);
	set_up(101000, -1);
	configure(12, 0);
	in_recovery = true;
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_READ_ONLY_SQL_TRANSACTION,
			  "in recovery: refused (25006)", "returned %d, SQLSTATE %d", returned, stub_error_code);
	set_up(101000, -1);
	configure(12, 0);
	shared->accepting = true;
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_OBJECT_IN_USE && nstored == 0 && shared->accepting,
			  "another session accepting: refused (55006), its accept left alone",
			  "returned %d, SQLSTATE %d", returned, stub_error_code);

	/* the floor cannot be written */
	set_up(101000, -1);
	configure(12, 0);
	store_fails = true;
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_IO_ERROR && !shared->accepting &&
			  last_message_is("could not write flakeid state file"),
			  "the floor not written: the file's error, and another accept may start",
			  "returned %d, SQLSTATE %d, accepting %d", returned, stub_error_code, shared->accepting);

	/* an error while the floor is written: passed on, the accept over */
	set_up(101000, -1);
	configure(12, 0);
	store_errors = true;
	returned = accept(&result);
	tap_check(!returned && stub_error_code == ERRCODE_OUT_OF_MEMORY && !shared->accepting &&
			  last_message_is("out of memory"),
			  "an error while the floor is written: that error, and another accept may start",
			  "returned %d, SQLSTATE %d, accepting %d", returned, stub_error_code, shared->accepting);
	store_errors = false;
	returned = accept(&result);
	tap_check(returned && result && nstored == 1 && stored.node_bits == 12,
			  "and the next accept succeeds", "returned %d, SQLSTATE %d", returned,
			  stub_error_code);
}

int
main(void)
{
	uint64		renewed;

	/* the clock alone: half a lease (500 ms) is the bound */
	set_up(100499, -1);
	check_end("the clock within half a lease of the end: a lease past the clock", renew(NULL), 101000);
	tap_check(nstored == 1 && !stored_floor && stored.timeline == 1 && stored.node_id == 3 &&
			  broadcasts == 1,
			  "a renewal is a lease, on this timeline, with the node id, and wakes the waiting calls",
			  "%d stored, floor %d, timeline %u, node %d, %d broadcasts", nstored, stored_floor,
			  stored.timeline, stored.node_id, broadcasts);
	set_up(100500, -1);
	check_end("exactly half a lease left: no renewal yet", renew(NULL), -1);

	/* the IDs reserved ahead, up to flakeid.max_lead */
	set_up(102400, 102000);
	check_end("the last ID within half a lease of the end: a lease past it", renew(NULL), 103001);
	set_up(102501, 102000);
	check_end("the millisecond after the last ID exactly half a lease from the end: no renewal yet",
			  renew(NULL), -1);
	set_up(102501, 102000);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, 102001));
	check_end("the last ID the last of its millisecond, half a lease from the end: no renewal yet",
			  renew(NULL), -1);
	set_up(103200, 110000);
	check_end("IDs past flakeid.max_lead: a lease no further than max_lead past the clock",
			  renew(NULL), 104001);
	set_up(100200, 100000 + 2999);
	check_end("the last ID just within flakeid.max_lead: a lease past it", renew(NULL), 104000);

	/* a call waiting for a lease further on */
	set_up(101000, -1);
	pg_atomic_write_u64(&shared->lease_wanted, 105000);
	pg_atomic_write_u32(&shared->renew_asked, 1);
	check_end("a call waiting for a lease to 105 s: a lease past that", renew(NULL), 106000);
	tap_check(pg_atomic_read_u32(&shared->renew_asked) == 0, "the call's request is taken",
			  "renew_asked %u", pg_atomic_read_u32(&shared->renew_asked));

	/* idle: nothing reserved since the last renewal, and nobody asks */
	set_up(100400, 99000);
	renewed = pg_atomic_read_u64(&shared->next_tick);
	check_end("idle since the last renewal: the lease lapses", renew(&renewed), -1);
	pg_atomic_write_u32(&shared->renew_asked, 1);
	check_end("idle, but a call asks: a renewal", renew(&renewed), 101000);
	tap_check(renewed == pg_atomic_read_u64(&shared->next_tick),
			  "the renewal remembers the next tick it was made at", "%llu",
			  (unsigned long long) renewed);
	set_up(100400, 99000);
	renewed = pg_atomic_read_u64(&shared->next_tick) - 1;
	check_end("an ID reserved since the last renewal: a renewal", renew(&renewed), 101000);
	set_up(100400, 99000);
	renewed = pg_atomic_read_u64(&shared->next_tick);
	pg_atomic_write_u64(&shared->lease_wanted, 100401);
	check_end("a call waiting past the lease, without asking: a lease past what it waits for",
			  renew(&renewed), 101401);

	set_up(100400, 99000);
	renewed = pg_atomic_read_u64(&shared->next_tick);
	pg_atomic_write_u64(&shared->lease_wanted, 100400);
	check_end("idle, a call having waited for the lease end there is: the lease lapses",
			  renew(&renewed), -1);

	/* with synchronous standbys, a renewal is followed by a check of them */
	set_up(100400, -1);
	standbys_confirm = true;
	(void) renew(NULL);
	tap_check(confirm_checks == 1, "with synchronous standbys, a renewal checks them at once",
			  "%d checks", confirm_checks);

	/* when it renews nothing */
	set_up(100400, -1);
	status = FLAKE_GEN_NODE_UNSET;
	check_end("a generator that does not generate: no renewal", renew(NULL), -1);
	set_up(100400, -1);
	in_recovery = true;
	check_end("in recovery: no renewal", renew(NULL), -1);
	set_up(100400, -1);
	store_fails = true;
	renewed = 7;
	check_end("a renewal whose write fails", renew(&renewed), -1);
	tap_check(renewed == 7 && broadcasts == 0,
			  "... is not remembered as made, and wakes nobody", "renewed %llu, %d broadcasts",
			  (unsigned long long) renewed, broadcasts);
	set_up(FLAKE_MAX_MS - 100, -1);
	clock_ms = FLAKE_MAX_MS - 500;
	check_end("near the last millisecond: a lease no further than past it", renew(NULL),
			  FLAKE_MAX_MS + 1);
	set_up(FLAKE_MAX_MS + 1, -1);
	clock_ms = FLAKE_MAX_MS - 100;
	check_end("the lease past the last millisecond already: none again", renew(NULL), -1);

	/* floors */
	set_up(100200, -1);
	timeline = 2;
	check_end("on a new timeline: a floor the clock, flakeid.max_lead, a lease and flakeid.max_clock_skew ahead",
			  renew(NULL), 100000 + 3000 + 1000 + 1000);
	tap_check(stored_floor && stored.timeline == 2 &&
			  pg_atomic_read_u64(&shared->promotion_floor) == 105000 && broadcasts == 1,
			  "the floor is one, on the new timeline, and is the promotion floor",
			  "floor %d, timeline %u, promotion floor %llu, %d broadcasts", stored_floor,
			  stored.timeline, (unsigned long long) pg_atomic_read_u64(&shared->promotion_floor),
			  broadcasts);
	tap_check(stub_nmessages == 1 && stub_count(LOG) == 1 &&
			  stub_message_is(0, "flakeid continues from %s on timeline %u"),
			  "... and logged once, as a new timeline's", "%d messages", stub_nmessages);
	set_up(100200, -1);
	timeline = 2;
	flake_max_clock_skew_ms = 2500;
	check_end("flakeid.max_clock_skew at 2.5 s: the floor 1.5 s further", renew(NULL), 106500);
	flake_max_clock_skew_ms = 1000;
	set_up(108000, -1);
	timeline = 2;
	check_end("on a new timeline, the newest lease further still: the floor at its end",
			  renew(NULL), 108000);
	tap_check(pg_atomic_read_u64(&shared->promotion_floor) == 108000,
			  "... which is the promotion floor", "%llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->promotion_floor));
	set_up(100200, -1);
	timeline = 2;
	have_recorded = false;
	check_end("on timeline 2 with no lease recorded: a floor all the same", renew(NULL), 105000);
	set_up(100200, -1);
	have_recorded = false;
	check_end("on timeline 1 with no lease recorded: a renewal, no floor", renew(NULL), 101000);
	tap_check(!stored_floor, "... not stored as a floor", "floor %d", stored_floor);
	set_up(100900, -1);
	status = FLAKE_GEN_FILE_BEHIND;
	check_end("a replayed lease the file lacks: a floor at its end first", renew(NULL), 100900);
	tap_check(stored_floor && pg_atomic_read_u64(&shared->promotion_floor) == 0,
			  "... which is no promotion floor", "floor %d, promotion floor %llu", stored_floor,
			  (unsigned long long) pg_atomic_read_u64(&shared->promotion_floor));
	tap_check(stub_nmessages == 0, "... nor logged as a new timeline's", "%d messages",
			  stub_nmessages);
	set_up(100200, -1);
	timeline = 2;
	tap_check(FlakeFloorPending(shared), "on a new timeline the floor is pending", "it is not");
	(void) renew(NULL);
	recorded = stored;
	tap_check(!FlakeFloorPending(shared), "... and once written, no longer", "it still is");
	set_up(FLAKE_MAX_MS + 1, -1);
	clock_ms = FLAKE_MAX_MS - 500;
	timeline = 2;
	check_end("a floor past the last millisecond: at the end of the time range", renew(NULL),
			  FLAKE_MAX_MS + 1);
	/* a clock before the epoch: a floor the file can hold, at the epoch */
	set_up(100200, -1);
	timeline = 2;
	have_recorded = false;
	clock_ms = -10000;
	check_end("a clock 10 s before the epoch, no lease recorded: a floor at the epoch",
			  renew(NULL), 0);
	tap_check(nstored == 1 && FlakeLeaseSane(&stored) &&
			  pg_atomic_read_u64(&shared->promotion_floor) == 0,
			  "... a lease the file can hold, and no promotion floor",
			  "%d stored, promotion floor %llu", nstored,
			  (unsigned long long) pg_atomic_read_u64(&shared->promotion_floor));
	set_up(100200, -1);
	timeline = 2;
	have_recorded = false;
	clock_ms = -(3000 + 1000 + 1000) + 1;
	check_end("a clock that puts the floor at the epoch's second millisecond: the floor there",
			  renew(NULL), 1);
	tap_check(pg_atomic_read_u64(&shared->promotion_floor) == 1, "... which is the promotion floor",
			  "%llu", (unsigned long long) pg_atomic_read_u64(&shared->promotion_floor));
	/* the clock set back before the epoch after an ID of its first millisecond */
	set_up(400, 0);
	clock_ms = -100;
	check_end("an ID at the epoch's first millisecond, the clock back before it: a lease past the ID",
			  renew(NULL), 1 + FLAKE_LEASE_MS);

	set_up(100200, -1);
	timeline = 2;
	store_fails = true;
	check_end("a floor whose write fails", renew(NULL), -1);
	tap_check(pg_atomic_read_u64(&shared->promotion_floor) == 0 && broadcasts == 0,
			  "... sets no promotion floor and wakes nobody", "promotion floor %llu, %d broadcasts",
			  (unsigned long long) pg_atomic_read_u64(&shared->promotion_floor), broadcasts);

	check_accept();
	check_logged();
	check_state_file();
	return tap_done();
}
