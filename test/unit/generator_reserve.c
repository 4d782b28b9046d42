/*
 * What a call of nextflake() takes from the shared counter, and when it
 * waits or fails (FlakeReserve() and the waits of src/generator.c), at a
 * clock set here:
 * - IDs rise, carry the node id, and lie at or past the precise clock's
 *   millisecond at the call's start (ticks behind it are skipped, also
 *   when the coarse clock lags by as much as its allowance), within
 *   flakeid.max_lead of the clock and below the lease when returned;
 * - after an idle spell a call starts the clock's millisecond;
 * - ticks past flakeid.max_lead wait for the clock, at most
 *   flakeid.max_clock_wait in all (at the bound, not yet an error), and a
 *   call too far is refused before it reserves, as waiting for the
 *   clock, for the promotion floor, or as a clock that went back;
 * - IDs past the lease wait for the lease worker, which is asked for the
 *   end the call needs and woken once the IDs come within half a lease;
 *   a failing lease, a missing worker and a lease that does not come
 *   fail with their errors; with synchronous standbys, IDs wait for the
 *   standbys' confirmation too, which a call checks again once 2 ms old
 *   (or, where it read no precise clock, once old by the time-stamp
 *   counter); with them, a call whose IDs run ahead of the clock reads
 *   the counter once, and no clock while the IDs lie 2 ms or more past
 *   the clock of a check young by it, within flakeid.max_lead of that;
 * - ticks reserved under a word that changed meanwhile (another node id)
 *   are dropped; a status that is not ready fails as it should;
 * - with flakeid.cache, a block serves only its word and its millisecond.
 * The shared generator is set up here; the lease worker, the standbys'
 * check and the server's functions are stubs, and an ERROR returns to
 * the check that expected it.
 */
#include "postgres.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "port/atomics.h"

static uint64 fetch_add_then(volatile pg_atomic_uint64 *ptr, int64 add);
static uint64 read_counted(volatile pg_atomic_uint64 *ptr);

static bool other_then_swap(volatile pg_atomic_uint64 *ptr, uint64 *expected, uint64 newval);

#define pg_atomic_fetch_add_u64(ptr, add) fetch_add_then(ptr, add)
#define pg_atomic_read_u64(ptr) read_counted(ptr)
#define pg_atomic_compare_exchange_u64(ptr, expected, newval) \
	other_then_swap(ptr, expected, newval)

/* the time-stamp counter, set here: its reads are counted */
#include "../../src/clock.h"
static uint64 counted_cycles(void);

#define FlakeCycles() counted_cycles()

#include "../../src/generator.c"
#include "tap.h"


/* the settings that src/generator.c reads */
int			flake_cache = 1;
uint64		flake_layout_settings_gen = 0;
int			flake_max_batch = 1000000;
int			flake_max_clock_wait_ms = 10000;
int			flake_max_lead_ms = 5000;
int			flake_max_lease_wait_ms = 10000;

#if PG_VERSION_NUM >= 190000
/* instr_time in ns of the system clock, not in TSC ticks */
uint64		ticks_per_ns_scaled = 0;
uint64		max_ticks_no_overflow = 0;
bool		timing_tsc_enabled = false;
#endif

struct Latch *MyLatch = NULL;
volatile sig_atomic_t InterruptPending = false;

static const FlakeLayout layout = {INT64CONST(1735689600000), 10};


/*
 * The clocks, in ns: the wall clock (each precise read moves both clocks
 * on by step_ns, sleeps by what they sleep), the coarse clock at the
 * wall clock's millisecond less coarse_lag_ns, the monotonic clock.
 */
static int64 wall_ns;
static int64 mono_ns;
static int64 step_ns;
static int64 coarse_lag_ns;
static int	precise_reads;
static int	coarse_reads;
static uint64 cycles_now;		/* the time-stamp counter */
static int	cycle_reads;
static int	standby_reads;		/* of whether the server has synchronous standbys */

static uint64
counted_cycles(void)
{
	cycle_reads++;
	return cycles_now;
}

static void
advance(int64 ns)
{
	wall_ns += ns;
	mono_ns += ns;
}

/* the wall clock's millisecond of the layout, as a call would read it */
static int64
clock_ms(void)
{
	return wall_ns / 1000000 - layout.epoch_ms;
}

static void
set_clock_ms(int64 ms)
{
	wall_ns = (layout.epoch_ms + ms) * 1000000;
}

int
clock_gettime(clockid_t clock, struct timespec *ts)
{
	int64		v;

	if (clock == CLOCK_REALTIME)
	{
		precise_reads++;
		advance(step_ns);
		v = wall_ns;
	}
	else if (clock == CLOCK_REALTIME_COARSE)
	{
		coarse_reads++;
		v = wall_ns - wall_ns % 1000000 - coarse_lag_ns;
	}
	else
		v = mono_ns;
	ts->tv_sec = v / 1000000000;
	ts->tv_nsec = v % 1000000000;
	return 0;
}

/* a coarse clock of 1 ms: allowed to lag by 8 ms */
int
clock_getres(clockid_t clock, struct timespec *res)
{
	(void) clock;
	res->tv_sec = 0;
	res->tv_nsec = 1000000;
	return 0;
}

/* the shared generator, and what the lease worker and the standbys do */
static FlakeShared *shared;
static FlakeSlot slot;
static bool in_recovery;
static bool standbys;
static bool worker_follows;		/* a wait for the lease: the worker renews */
static bool standby_follows;	/* and the standbys confirm it */
static int64 standby_end;		/* what the standbys have */
static int	wakes;
static int	lease_sleeps;
static int	latch_sleeps;
static int	rechecks;
static int64 recheck_now;
static int	rechecks_off_clock;	/* checks at another time than the clock's */
static bool renew_on_wake;
static bool floor_pending;		/* the floor after recovery is to be written */
static int	file_step;			/* a wait for the file: 1 written, 2 failing */
static int64 step_back_ns;		/* the wall clock steps back this at a lease wait */
static void (*on_lease_sleep) (int n);	/* at the nth wait for the lease */

/* another process's step, before the next fetch-and-add on next_tick */
static void (*other_step) (void);

/* the reads and fetch-and-adds of next_tick, whose cache line every call moves */
static int	next_reads;
static int	next_adds;

static uint64
read_counted(volatile pg_atomic_uint64 *ptr)
{
	if (shared != NULL && ptr == &shared->next_tick)
		next_reads++;
	return (pg_atomic_read_u64) (ptr);
}

static uint64
fetch_add_then(volatile pg_atomic_uint64 *ptr, int64 add)
{
	if (shared != NULL && ptr == &shared->next_tick)
		next_adds++;
	if (shared != NULL && ptr == &shared->next_tick && other_step != NULL)
	{
		void		(*step) (void) = other_step;

		other_step = NULL;
		step();
	}
	return (pg_atomic_fetch_add_u64) (ptr, add);
}

/* another process's step, before the next compare-and-swap of next_tick */
static void (*other_swap_step) (void);

static bool
other_then_swap(volatile pg_atomic_uint64 *ptr, uint64 *expected, uint64 newval)
{
	if (shared != NULL && ptr == &shared->next_tick && other_swap_step != NULL)
	{
		void		(*step) (void) = other_swap_step;

		other_swap_step = NULL;
		step();
	}
	return (pg_atomic_compare_exchange_u64) (ptr, expected, newval);
}

/* an ERROR: its SQLSTATE and message, and where it returns */
static sigjmp_buf *on_error;
static int	error_code;
static const char *error_fmt;
static char error_message[256];
static char error_detail[512];

bool
errstart(int elevel, const char *domain)
{
	(void) domain;
	if (elevel < ERROR)
		return false;
	if (on_error == NULL)
		tap_bail("an unexpected error was reported");
	error_code = 0;
	error_fmt = NULL;
	error_message[0] = '\0';
	error_detail[0] = '\0';
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
	siglongjmp(*on_error, 1);
}

int
errcode(int sqlerrcode)
{
	error_code = sqlerrcode;
	return 0;
}

int
errcode_for_file_access(void)
{
	error_code = ERRCODE_IO_ERROR;
	return 0;
}

int
errmsg(const char *fmt,...)
{
	va_list		args;

	error_fmt = fmt;
	va_start(args, fmt);
	vsnprintf(error_message, sizeof(error_message), fmt, args);
	va_end(args);
	return 0;
}

int
errmsg_internal(const char *fmt,...)
{
	error_fmt = fmt;
	return 0;
}

int
errdetail(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(error_detail, sizeof(error_detail), fmt, args);
	va_end(args);
	return 0;
}

int
errdetail_internal(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(error_detail, sizeof(error_detail), fmt, args);
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

void *
palloc(Size size)
{
	return malloc(size);
}

void *
palloc0(Size size)
{
	return calloc(1, size);
}

char *
pstrdup(const char *in)
{
	return strdup(in);
}

char *
psprintf(const char *fmt,...)
{
	char	   *out = malloc(256);
	va_list		args;

	va_start(args, fmt);
	vsnprintf(out, 256, fmt, args);
	va_end(args);
	return out;
}

void
ProcessInterrupts(void)
{
}

int
WaitLatch(Latch *latch, int wakeEvents, long timeout, uint32 wait_event_info)
{
	(void) latch;
	(void) wakeEvents;
	(void) wait_event_info;
	latch_sleeps++;
	advance((int64) timeout * 1000000);
	return WL_TIMEOUT;
}

void
ResetLatch(Latch *latch)
{
	(void) latch;
}

void
ConditionVariablePrepareToSleep(ConditionVariable *cv)
{
	(void) cv;
}

#if PG_VERSION_NUM >= 160000
bool
ConditionVariableCancelSleep(void)
{
	return false;
}
#else
void
ConditionVariableCancelSleep(void)
{
}
#endif

/* a wait for the lease worker: it renews to what is asked, if it follows */
bool
ConditionVariableTimedSleep(ConditionVariable *cv, long timeout, uint32 wait_event_info)
{
	uint64		wanted = pg_atomic_read_u64(&shared->lease_wanted);

	(void) cv;
	(void) wait_event_info;
	lease_sleeps++;
	if (on_lease_sleep != NULL)
		on_lease_sleep(lease_sleeps);
	wall_ns -= step_back_ns;
	step_back_ns = 0;
	if (worker_follows && wanted > pg_atomic_read_u64(&shared->lease_end))
		pg_atomic_write_u64(&shared->lease_end, wanted);
	if (standby_follows && (int64) wanted > standby_end)
		standby_end = (int64) wanted;
	if (file_step == 1)
	{
		pg_atomic_write_u32(&shared->word,
							FlakeWord(FlakeWordGen(pg_atomic_read_u32(&shared->word)),
									  FLAKE_GEN_READY, 5));
		floor_pending = false;
	}
	else if (file_step == 2)
	{
		shared->lease_failing = true;
		shared->lease_errno = ENOSPC;
		pg_atomic_fetch_add_u64(&shared->file_writes, 1);
	}
	advance((int64) timeout * 1000000);
	return true;
}

/* woken: the worker renews at once to a lease past the clock, if asked */
void
FlakeWakeWorker(FlakeShared *s)
{
	wakes++;
	if (renew_on_wake)
	{
		uint64		end = (uint64) (clock_ms() + FLAKE_LEASE_MS);

		if (end > pg_atomic_read_u64(&s->lease_end))
			pg_atomic_write_u64(&s->lease_end, end);
	}
}

bool
FlakeStandbyConfirms(void)
{
	standby_reads++;
	return standbys;
}

/* a check of the standbys: what they have, now */
bool
FlakeConfirmRecheckCovers(FlakeConfirm *c, int64 end_ms, int64 now)
{
	rechecks++;
	recheck_now = now;
	if (now != clock_ms())
		rechecks_off_clock++;
	pg_atomic_write_u64(&c->sync_end, (uint64) standby_end);
	pg_atomic_write_u64(&c->checked, (uint64) now);
	return end_ms < standby_end;
}

uint32
FlakeSnapshot(FlakeShared *s, FlakeLayout *out)
{
	*out = s->layout;
	return pg_atomic_read_u32(&s->word);
}

FlakeShared *
FlakeAttach(void)
{
	return shared;
}

FlakeSlot *
FlakeMySlot(void)
{
	return &slot;
}

bool
RecoveryInProgress(void)
{
	return in_recovery;
}

bool
FlakeFloorPending(FlakeShared *s)
{
	(void) s;
	return floor_pending;
}

/* preloaded (the layout fixed), or the settings as a session sees them */
static bool layout_fixed;
static bool settings_from_config;
static bool settings_valid;
static FlakeLayout settings_layout;

bool
FlakeLayoutFixed(void)
{
	return layout_fixed;
}

bool
FlakeSettingsFromConfig(void)
{
	return settings_from_config;
}

bool
FlakeConfiguredLayout(FlakeLayout *out, const char **bad)
{
	*out = settings_layout;
	*bad = settings_valid ? NULL : "flakeid.node_bits";
	return settings_valid;
}

/* the generator's set-up, which a call starts where no process did yet */
static int	setups;

void
FlakeEnsureSetUp(FlakeShared *s)
{
	if (FlakeWordStatus(pg_atomic_read_u32(&s->word)) != FLAKE_GEN_NOT_SET_UP)
		tap_bail("the generator was set up again");
	setups++;
	pg_atomic_write_u32(&s->word,
						FlakeWord(FlakeWordGen(pg_atomic_read_u32(&s->word)) % 255 + 1,
								  FLAKE_GEN_READY, 5));
}

void
FlakeReportInvalidLayout(const char *bad_setting)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid layout setting %s", bad_setting)));
}

void
FlakeReportForeignSetting(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("a layout setting given from elsewhere")));
}

/* a monitoring function checks who calls it: counted here */
static int	monitor_checks;

void
FlakeCheckMonitor(const char *function)
{
	if (strcmp(function, "flakeid_status") != 0)
		tap_bail("a monitoring function checked for another's name");
	monitor_checks++;
}

/* the shared generator with room for four processes' slots */
#define STATUS_SLOTS 4
#define SHARED_SIZE \
	TYPEALIGN(PG_CACHE_LINE_SIZE, \
			  offsetof(FlakeShared, slots) + STATUS_SLOTS * sizeof(FlakeSlot))

/* is the role that calls nextflakes() a superuser */
static bool is_superuser;

bool
superuser(void)
{
	return is_superuser;
}

/*
 * A set-returning call, as the executor makes it: the context that lives
 * across its calls, and how often it ended.
 */
static int	srf_ends;

void *
MemoryContextAllocZero(MemoryContext context, Size size)
{
	(void) context;
	return calloc(1, size);
}

FuncCallContext *
init_MultiFuncCall(PG_FUNCTION_ARGS)
{
	FuncCallContext *ctx;

	if (fcinfo->flinfo->fn_extra != NULL)
		tap_bail("a set-returning call began twice");
	ctx = calloc(1, sizeof(FuncCallContext));
	fcinfo->flinfo->fn_extra = ctx;
	return ctx;
}

FuncCallContext *
per_MultiFuncCall(PG_FUNCTION_ARGS)
{
	return (FuncCallContext *) fcinfo->flinfo->fn_extra;
}

void
end_MultiFuncCall(PG_FUNCTION_ARGS, FuncCallContext *funcctx)
{
	if (fcinfo->flinfo->fn_extra != funcctx)
		tap_bail("a set-returning call ended with another's context");
	free(funcctx);
	fcinfo->flinfo->fn_extra = NULL;
	srf_ends++;
}

/* flakeid_status()'s row: the columns it is given, the values it forms */
static TupleDesc status_desc;
static TypeFuncClass status_class = TYPEFUNC_COMPOSITE;
static int	formed_natts;
static Datum formed_values[16];
static bool formed_nulls[16];
static HeapTupleData formed_tuple;

TypeFuncClass
get_call_result_type(FunctionCallInfo fcinfo, Oid *resultTypeId, TupleDesc *resultTupleDesc)
{
	(void) fcinfo;
	if (resultTypeId != NULL)
		tap_bail("flakeid_status() asked for its type's oid");
	*resultTupleDesc = status_desc;
	return status_class;
}

#if PG_VERSION_NUM >= 170000
HeapTuple
heap_form_tuple(TupleDesc tupleDescriptor, const Datum *values, const bool *isnull)
#else
HeapTuple
heap_form_tuple(TupleDesc tupleDescriptor, Datum *values, bool *isnull)
#endif
{
	if (tupleDescriptor != status_desc || tupleDescriptor->natts > 16)
		tap_bail("a row formed with another descriptor");
	formed_natts = tupleDescriptor->natts;
	memcpy(formed_values, values, formed_natts * sizeof(Datum));
	memcpy(formed_nulls, isnull, formed_natts * sizeof(bool));
	return &formed_tuple;
}

Datum
HeapTupleHeaderGetDatum(HeapTupleHeader tuple)
{
	return PointerGetDatum(tuple);
}

text *
cstring_to_text(const char *s)
{
	size_t		len = strlen(s);
	text	   *t = malloc(VARHDRSZ + len);

	SET_VARSIZE(t, VARHDRSZ + len);
	memcpy(VARDATA(t), s, len);
	return t;
}

static const int64 start_ms = INT64CONST(100000000);
static uint32 gen = 1;
static FlakeBlock initial_block;	/* a process's block before its first call */

/* the generator ready with node 5, the lease a second ahead, no call yet */
static void
set_up(void)
{
	if (shared == NULL)
		shared = aligned_alloc(PG_CACHE_LINE_SIZE, SHARED_SIZE);
	memset(shared, 0, SHARED_SIZE);
	set_clock_ms(start_ms);
	mono_ns = INT64CONST(1000000000000);
	step_ns = 0;
	coarse_lag_ns = 0;
	shared->layout = layout;
	shared->configured = layout;
	gen = gen % 255 + 1;
	pg_atomic_init_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_READY, 5));
	pg_atomic_init_u64(&shared->next_tick, 0);
	pg_atomic_init_u64(&shared->lease_end, (uint64) (start_ms + FLAKE_LEASE_MS));
	pg_atomic_init_u64(&shared->lease_wanted, 0);
	pg_atomic_init_u64(&shared->waits, 0);
	pg_atomic_init_u64(&shared->promotion_floor, 0);
	pg_atomic_init_u64(&shared->file_writes, 0);
	pg_atomic_init_u64(&shared->confirm.sync_end, 0);
	pg_atomic_init_u64(&shared->confirm.checked, 0);
	shared->worker_latch = (Latch *) &slot;
	pg_atomic_init_u64(&slot.issued, 0);
	for (int i = 0; i < STATUS_SLOTS; i++)
		pg_atomic_init_u64(&shared->slots[i].issued, 0);
	is_superuser = false;
	flake_max_batch = 1000000;

	my_word = 0;
	ids_ahead = false;
	my_block = initial_block;
	layout_fixed = true;
	settings_from_config = true;
	settings_valid = true;
	settings_layout = layout;
	flake_cache = 1;
	flake_max_lead_ms = 5000;
	flake_max_clock_wait_ms = 10000;
	flake_max_lease_wait_ms = 10000;

	in_recovery = false;
	standbys = false;
	worker_follows = true;
	standby_follows = false;
	standby_end = 0;
	renew_on_wake = false;
	floor_pending = false;
	file_step = 0;
	step_back_ns = 0;
	on_lease_sleep = NULL;
	other_step = NULL;
	other_swap_step = NULL;
	wakes = 0;
	lease_sleeps = 0;
	latch_sleeps = 0;
	rechecks = 0;
	rechecks_off_clock = 0;
	precise_reads = 0;
	coarse_reads = 0;
	cycles_now = UINT64CONST(1000000000000);
	cycle_reads = 0;
	setups = 0;
}

/* what the last call returned, taken before the check reads the rest */
static bool done;

/* one nextflake(): false on an ERROR, which error_fmt names */
static bool
take(int64 *id)
{
	sigjmp_buf	jump;

	error_fmt = NULL;
	on_error = &jump;
	if (sigsetjmp(jump, 0) == 0)
	{
		*id = DatumGetInt64(nextflake(NULL));
		on_error = NULL;
		return true;
	}
	on_error = NULL;
	return false;
}

/* n ticks in one reservation, as nextflakes() takes them */
static bool
take_batch(int64 n, FlakeIssue *issue)
{
	sigjmp_buf	jump;

	error_fmt = NULL;
	on_error = &jump;
	if (sigsetjmp(jump, 0) == 0)
	{
		if (pg_atomic_read_u32(&shared->word) != my_word)
			FlakeRefresh(shared);
		FlakeReserve(shared, n, issue);
		on_error = NULL;
		return true;
	}
	on_error = NULL;
	return false;
}

static bool
failed_with(const char *fmt_start, int code)
{
	return error_fmt != NULL && strncmp(error_fmt, fmt_start, strlen(fmt_start)) == 0 &&
		error_code == code;
}

static int64
batch_end_ms(const FlakeIssue *issue, int64 n)
{
	return FlakeTickMs(&layout, issue->first + (uint64) n - 1);
}

static int64
per_ms(void)
{
	return FlakeSeqPerMs(&layout);
}

/* single calls at a clock that moves 20 us a precise read */
static void
check_singles(void)
{
	int64		prev = 0;
	int64		id;
	int			bad_order = 0,
				bad_node = 0,
				behind = 0,
				ahead = 0,
				past_lease = 0,
				failed = 0;
	int			calls = 300000;

	set_up();
	step_ns = 20000;
	renew_on_wake = true;
	for (int i = 0; i < calls; i++)
	{
		int64		before = clock_ms();

		if (!take(&id))
		{
			failed++;
			continue;
		}
		if (id <= prev)
			bad_order++;
		if (FlakeNode(&layout, id) != 5)
			bad_node++;
		if (FlakeMs(id) < before)
			behind++;
		if (FlakeMs(id) > clock_ms() + flake_max_lead_ms)
			ahead++;
		if (FlakeMs(id) >= (int64) pg_atomic_read_u64(&shared->lease_end))
			past_lease++;
		prev = id;
		/* now and then an idle spell of up to 3 ms */
		if (i % 1000 == 999)
			advance((int64) (i % 3000) * 1000);
	}
	tap_check(failed == 0 && bad_order == 0 && bad_node == 0,
			  "single calls: every ID above the one before, with the node id",
			  "%d failed, %d out of order, %d with another node", failed, bad_order, bad_node);
	tap_check(behind == 0, "single calls: no ID behind the clock at the call's start",
			  "%d behind", behind);
	tap_check(ahead == 0 && past_lease == 0,
			  "single calls: every ID within flakeid.max_lead of the clock and below the lease",
			  "%d ahead, %d past the lease", ahead, past_lease);
	tap_check(lease_sleeps == 0 && wakes > 0 && wakes < calls / 1000,
			  "single calls: the worker woken once the IDs come within half a lease, and no call waits for it",
			  "%d woken, %d waits for the lease", wakes, lease_sleeps);
	tap_check((int64) pg_atomic_read_u64(&slot.issued) == calls,
			  "single calls: each counted as issued", "%llu counted",
			  (unsigned long long) pg_atomic_read_u64(&slot.issued));

	/* an idle spell: the next ID starts the clock's millisecond */
	step_ns = 0;
	advance(INT64CONST(5000000000));
	done = take(&id);
	tap_check(done && FlakeMs(id) == clock_ms() && FlakeSeq(&layout, id) == 0 && id > prev,
			  "after an idle spell: the ID is the clock's millisecond's first",
			  "ms %lld (clock %lld), sequence %lld", (long long) FlakeMs(id),
			  (long long) clock_ms(), (long long) FlakeSeq(&layout, id));
	tap_check(pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout, clock_ms()) + 1,
			  "after an idle spell: the next tick follows it", "next tick %llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick));
}

/* IDs in the clock's millisecond: one fetch-and-add a call, no read first */
static void
check_hot_path(void)
{
	int64		id;

	set_up();
	(void) take(&id);
	next_reads = 0;
	next_adds = 0;
	for (int i = 0; i < 100; i++)
		(void) take(&id);
	tap_check(next_reads == 0 && next_adds == 100 && FlakeMs(id) == clock_ms(),
			  "single calls in the clock's millisecond: one fetch-and-add each on the next tick, no read",
			  "%d reads, %d fetch-and-adds in 100 calls", next_reads, next_adds);
}

/* the IDs ahead of the clock: the coarse clock, and its allowance */
static void
check_ahead(void)
{
	FlakeIssue	issue;
	int64		id = 0;
	int64		prev = 0;
	int			reads;
	bool		ok = true;

	set_up();
	renew_on_wake = true;
	/* three milliseconds' worth at a clock that stands still */
	for (int64 i = 0; i < 3 * per_ms() && ok; i++)
	{
		ok = take(&id) && id > prev;
		prev = id;
	}
	tap_check(ok && FlakeMs(id) == clock_ms() + 2,
			  "a clock that stands still: three milliseconds' IDs, in order",
			  "ok %d, last ms %lld, clock %lld", ok, (long long) FlakeMs(id), (long long) clock_ms());
	/* 10 ms ahead: beyond the coarse clock's allowance of 8 ms */
	for (int64 i = 0; i < 8 * per_ms() && ok; i++)
	{
		ok = take(&id) && id > prev;
		prev = id;
	}
	reads = precise_reads;
	for (int i = 0; i < 1000 && ok; i++)
	{
		ok = take(&id) && id > prev;
		prev = id;
	}
	tap_check(ok && precise_reads - reads <= 1,
			  "IDs 10 ms ahead of the clock: the coarse clock, not the precise one",
			  "ok %d, %d precise reads in 1000 calls", ok, precise_reads - reads);

	/*
	 * The coarse clock 7 ms behind, the precise one moved past the IDs:
	 * the next ID is not behind the precise clock.
	 */
	advance((FlakeMs(id) - clock_ms() + 3) * 1000000);
	coarse_lag_ns = 7000000;
	done = take(&id);
	tap_check(done && FlakeMs(id) >= clock_ms() && id > prev,
			  "the coarse clock 7 ms behind, the IDs 2 ms behind the precise clock: the ID at the clock",
			  "ms %lld, clock %lld", (long long) FlakeMs(id), (long long) clock_ms());

	/*
	 * IDs exactly the coarse clock's allowance (8 ms) ahead of it: the
	 * coarse clock is enough; 1 ms less, the precise one is read
	 */
	set_up();
	take(&id);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, clock_ms() + 8));
	ids_ahead = true;
	reads = precise_reads;
	done = take(&id);
	tap_check(done && precise_reads == reads && FlakeMs(id) == clock_ms() + 8,
			  "IDs 8 ms ahead of the coarse clock: no precise read", "%d precise reads",
			  precise_reads - reads);
	set_up();
	take(&id);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, clock_ms() + 7));
	ids_ahead = true;
	reads = precise_reads;
	done = take(&id);
	tap_check(done && precise_reads == reads + 1 && !ids_ahead,
			  "IDs 7 ms ahead of the coarse clock: the precise clock read, and the IDs not taken as ahead",
			  "%d precise reads, ahead %d", precise_reads - reads, ids_ahead);
	/* a single call whose tick is 8 ms ahead of the precise clock: taken as ahead */
	set_up();
	take(&id);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, clock_ms() + 8));
	ids_ahead = false;
	done = take(&id);
	tap_check(done && ids_ahead && FlakeMs(id) == clock_ms() + 8,
			  "a single call whose tick is 8 ms ahead of the precise clock: taken as ahead",
			  "ahead %d", ids_ahead);

	/* IDs exactly flakeid.max_lead ahead: no wait, so no precise read */
	set_up();
	flake_max_lead_ms = 100;
	take(&id);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, clock_ms() + 100));
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 1000));
	ids_ahead = true;
	reads = precise_reads;
	done = take(&id);
	tap_check(done && precise_reads == reads && FlakeMs(id) == clock_ms() + 100,
			  "an ID exactly flakeid.max_lead ahead of the clock: returned with no precise read",
			  "%d precise reads", precise_reads - reads);

	/* a batch whose IDs are 8 ms ahead of the precise clock: taken as ahead */
	set_up();
	take(&id);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, clock_ms() + 8));
	ids_ahead = false;
	done = take_batch(2, &issue);
	tap_check(done && ids_ahead, "a batch 8 ms ahead of the precise clock: the IDs taken as ahead",
			  "ahead %d", ids_ahead);
}

/* ticks further ahead than flakeid.max_lead: waits, bounded */
static void
check_clock_waits(void)
{
	char		want[512];
	FlakeIssue	issue;
	int64		n;
	int64		before;
	uint64		next;

	/* 150 ms of ticks, 100 allowed ahead: a wait of 49 ms */
	set_up();
	flake_max_lead_ms = 100;
	worker_follows = true;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 100000));
	n = 150 * per_ms();
	done = take_batch(n, &issue);
	tap_check(done && batch_end_ms(&issue, n) <= clock_ms() + flake_max_lead_ms &&
			  clock_ms() == start_ms + 49,
			  "150 ms of ticks, flakeid.max_lead 100: returned after 49 ms, within the lead",
			  "error %s; end %lld, clock %lld", error_fmt ? error_fmt : "none",
			  (long long) batch_end_ms(&issue, n), (long long) clock_ms());
	tap_check(FlakeTickMs(&layout, issue.first) == start_ms,
			  "150 ms of ticks: from the clock's millisecond", "first at %lld",
			  (long long) FlakeTickMs(&layout, issue.first));

	/* a wait of 250 ms: three sleeps, one wait counted */
	n = 250 * per_ms();
	before = (int64) pg_atomic_read_u64(&shared->waits);
	latch_sleeps = 0;
	done = take_batch(n, &issue);
	tap_check(done && latch_sleeps >= 3 &&
			  pg_atomic_read_u64(&shared->waits) == (uint64) before + 1,
			  "a wait of 250 ms: several sleeps, counted as one wait",
			  "error %s; %d sleeps, %llu waits", error_fmt ? error_fmt : "none", latch_sleeps,
			  (unsigned long long) pg_atomic_read_u64(&shared->waits));
	tap_check(batch_end_ms(&issue, n) <= clock_ms() + flake_max_lead_ms &&
			  batch_end_ms(&issue, n) > clock_ms() + flake_max_lead_ms - 100,
			  "a wait of 250 ms: within the lead when returned, not long after",
			  "end %lld, clock %lld", (long long) batch_end_ms(&issue, n), (long long) clock_ms());

	/* the clock at the epoch's first millisecond, nothing reserved yet: a lead of 0 */
	set_up();
	set_clock_ms(0);
	flake_max_lead_ms = 100;
	flake_max_clock_wait_ms = 200;
	pg_atomic_write_u64(&shared->lease_end, 100000);
	done = take_batch(400 * per_ms(), &issue);
	snprintf(want, sizeof(want), "IDs are returned only within flakeid.max_lead (100 ms) of the clock, and the last ones run 0 ms ahead of it. "
			 "IDs run ahead of the clock when more are asked for than the node makes, %lld per millisecond, or when the clock is set back.",
			 (long long) per_ms());
	tap_check(!done && strcmp(error_message, "waiting 299 ms more for the system clock would exceed flakeid.max_clock_wait (200 ms)") == 0 &&
			  strcmp(error_detail, want) == 0,
			  "a batch from the range's first tick, the clock there: a lead of 0 reported",
			  "%s / %s", error_message, error_detail);

	/* 1 ms past the lead: a wait of 1 ms */
	set_up();
	flake_max_lead_ms = 100;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 100000));
	n = 102 * per_ms();
	done = take_batch(n, &issue);
	tap_check(done && clock_ms() == start_ms + 1,
			  "IDs 1 ms further ahead than flakeid.max_lead: returned after 1 ms",
			  "error %s; after %lld ms", error_fmt ? error_fmt : "none",
			  (long long) (clock_ms() - start_ms));

	/*
	 * A call that waits for the lease, during which the clock steps back
	 * 150 ms: flakeid.max_clock_wait (100 ms) counts from its first wait for
	 * the clock, not from before the lease's
	 */
	set_up();
	flake_max_lead_ms = 100;
	flake_max_clock_wait_ms = 100;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 50));
	step_back_ns = 150 * INT64CONST(1000000);
	n = 101 * per_ms();
	done = take_batch(n, &issue);
	tap_check(done && lease_sleeps == 1 && batch_end_ms(&issue, n) <= clock_ms() + flake_max_lead_ms,
			  "a wait for the lease, then for a clock stepped back: the clock's wait bounded from its own start",
			  "error %s; %d lease waits, end %lld, clock %lld", error_fmt ? error_fmt : "none",
			  lease_sleeps, (long long) batch_end_ms(&issue, n), (long long) clock_ms());

	/* flakeid.max_clock_wait 200: a wait of 200 ms is allowed, 201 not */
	set_up();
	flake_max_lead_ms = 100;
	flake_max_clock_wait_ms = 200;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 100000));
	n = (100 + 200 + 1) * per_ms();
	done = take_batch(n, &issue);
	tap_check(done && clock_ms() == start_ms + 200,
			  "a wait of exactly flakeid.max_clock_wait: allowed",
			  "error %s; clock %lld", error_fmt ? error_fmt : "none", (long long) (clock_ms() - start_ms));
	next = pg_atomic_read_u64(&shared->next_tick);
	before = clock_ms();
	n = (int64) (FlakeTickOfMs(&layout, clock_ms() + 100 + 201) - next) + 1;
	done = take_batch(n, &issue);
	tap_check(!done &&
			  failed_with("waiting %lld ms more for the system clock would exceed flakeid.max_clock_wait",
						  ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			  "a wait 1 ms longer than flakeid.max_clock_wait: refused",
			  "error %s", error_fmt ? error_fmt : "none");
	tap_check(pg_atomic_read_u64(&shared->next_tick) == next && clock_ms() == before,
			  "refused before it reserved or slept", "next tick moved by %lld, clock by %lld",
			  (long long) (pg_atomic_read_u64(&shared->next_tick) - next),
			  (long long) (clock_ms() - before));
	n = (int64) (FlakeTickOfMs(&layout, clock_ms() + 100 + 200) - next) + 1;
	done = take_batch(n, &issue);
	tap_check(done && clock_ms() == before + 200,
			  "then a wait of exactly flakeid.max_clock_wait: allowed",
			  "error %s; waited %lld", error_fmt ? error_fmt : "none",
			  (long long) (clock_ms() - before));

	/* the clock went back: 1300 ms ahead is still a wait, 1301 a clock behind */
	set_up();
	flake_max_lead_ms = 100;
	flake_max_clock_wait_ms = 200;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 100000));
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, start_ms + 1300) + 1);
	done = take_batch(1, &issue);
	tap_check(!done &&
			  failed_with("waiting %lld ms more for the system clock", ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			  "IDs 1300 ms ahead (flakeid.max_lead 100, max_clock_wait 200): waiting too long",
			  "error %s", error_fmt ? error_fmt : "none");
	snprintf(want, sizeof(want), "IDs are returned only within flakeid.max_lead (100 ms) of the clock, and the last ones run 1300 ms ahead of it. "
			 "IDs run ahead of the clock when more are asked for than the node makes, %lld per millisecond, or when the clock is set back.",
			 (long long) per_ms());
	tap_check(strcmp(error_message, "waiting 1200 ms more for the system clock would exceed flakeid.max_clock_wait (200 ms)") == 0 &&
			  strcmp(error_detail, want) == 0,
			  "... the wait, the lead and how far ahead the IDs run, in numbers", "%s / %s",
			  error_message, error_detail);
	/* the last tick reserved the first of its millisecond: the lead is the one before's */
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, start_ms + 1300));
	done = take_batch(1, &issue);
	snprintf(want, sizeof(want), "IDs are returned only within flakeid.max_lead (100 ms) of the clock, and the last ones run 1299 ms ahead of it. "
			 "IDs run ahead of the clock when more are asked for than the node makes, %lld per millisecond, or when the clock is set back.",
			 (long long) per_ms());
	tap_check(!done && strcmp(error_detail, want) == 0,
			  "a call's tick the first of its millisecond: the lead reported is the tick before's",
			  "%s", error_detail);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, start_ms + 1301) + 1);
	done = take_batch(1, &issue);
	tap_check(!done &&
			  failed_with("system clock is %lld ms behind the last flakeid issued", ERRCODE_SYSTEM_ERROR),
			  "IDs 1301 ms ahead: the clock went back",
			  "error %s", error_fmt ? error_fmt : "none");
	tap_check(strcmp(error_message, "system clock is 1301 ms behind the last flakeid issued") == 0 &&
			  strcmp(error_detail, "The clock moved backwards. flakeid.max_lead allows IDs 100 ms ahead of the clock, "
					 "and waiting for the rest would take longer than flakeid.max_clock_wait (200 ms).") == 0,
			  "... by how much, in numbers", "%s / %s", error_message, error_detail);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, start_ms + 5000) + 1);
	pg_atomic_write_u64(&shared->promotion_floor, (uint64) (start_ms + 100));
	done = take_batch(1, &issue);
	tap_check(!done &&
			  failed_with("system clock is %lld ms behind", ERRCODE_SYSTEM_ERROR),
			  "a floor within flakeid.max_lead: the clock went back",
			  "error %s", error_fmt ? error_fmt : "none");
	pg_atomic_write_u64(&shared->promotion_floor, (uint64) (start_ms + 101));
	done = take_batch(1, &issue);
	tap_check(!done &&
			  failed_with("waiting %lld ms more for the promotion floor", ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			  "a floor 1 ms past flakeid.max_lead: waiting for the floor",
			  "error %s", error_fmt ? error_fmt : "none");
	snprintf(want, sizeof(want), "After the end of archive recovery IDs continue from %lld, above every ID the old primary can have returned, "
			 "101 ms ahead of the clock. They are returned only within flakeid.max_lead (100 ms) of the clock.",
			 (long long) FlakeTimestamp(&layout, start_ms + 101));
	tap_check(strcmp(error_message, "waiting 4900 ms more for the promotion floor would exceed flakeid.max_clock_wait (200 ms)") == 0 &&
			  strcmp(error_detail, want) == 0,
			  "... the wait, the floor and how far ahead it lies, in numbers", "%s / %s",
			  error_message, error_detail);
}

/*
 * The lease worker gone for 6 s, back for 1 s, gone for 6 s more, then
 * renewing (a wait for the lease sleeps 100 ms)
 */
static void
worker_comes_and_goes(int n)
{
	shared->worker_latch = (n <= 60 || (n > 70 && n <= 130)) ? NULL : (Latch *) &slot;
	worker_follows = n > 130;
}

/* IDs past the lease wait for the worker, bounded */
static void
check_lease_waits(void)
{
	FlakeIssue	issue;
	int64		n = 5 * per_ms();
	int64		id;
	int64		mono_before;

	/* the lease 2 ms ahead, a batch to 4 ms ahead: the worker asked for 5 */
	set_up();
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 2));
	done = take_batch(n, &issue);
	tap_check(done && batch_end_ms(&issue, n) == start_ms + 4 &&
			  pg_atomic_read_u64(&shared->lease_wanted) == (uint64) start_ms + 5 &&
			  batch_end_ms(&issue, n) < (int64) pg_atomic_read_u64(&shared->lease_end),
			  "IDs past the lease: the worker asked for the lease end after the last, and they wait for it",
			  "error %s; end %lld, wanted %llu, lease %llu", error_fmt ? error_fmt : "none",
			  (long long) batch_end_ms(&issue, n),
			  (unsigned long long) pg_atomic_read_u64(&shared->lease_wanted),
			  (unsigned long long) pg_atomic_read_u64(&shared->lease_end));
	tap_check(wakes >= 1 && lease_sleeps >= 1, "IDs past the lease: the worker woken, the call waited",
			  "%d woken, %d waits", wakes, lease_sleeps);

	/* a lease end asked for already that stops at the call's last millisecond: raised past it */
	set_up();
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 2));
	pg_atomic_write_u64(&shared->lease_wanted, (uint64) (start_ms + 4));
	done = take_batch(n, &issue);
	tap_check(done && pg_atomic_read_u64(&shared->lease_wanted) == (uint64) start_ms + 5,
			  "a lease end asked for that ends at the call's last millisecond: raised past it",
			  "error %s; wanted %llu", error_fmt ? error_fmt : "none",
			  (unsigned long long) pg_atomic_read_u64(&shared->lease_wanted));

	/* a larger wanted end stays */
	set_up();
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 2));
	pg_atomic_write_u64(&shared->lease_wanted, (uint64) (start_ms + 50));
	done = take_batch(n, &issue);
	tap_check(done &&
			  pg_atomic_read_u64(&shared->lease_wanted) == (uint64) start_ms + 50,
			  "a larger lease end asked for already: kept", "wanted %llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->lease_wanted));

	/* the IDs within half a lease of its end: the worker woken */
	set_up();
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + FLAKE_LEASE_MS / 2 + 1));
	done = take(&id);
	tap_check(done && wakes == 0, "an ID more than half a lease below its end: no wake-up",
			  "%d woken", wakes);
	set_up();
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + FLAKE_LEASE_MS / 2));
	done = take(&id);
	tap_check(done && wakes == 1, "an ID half a lease below its end: the worker woken",
			  "%d woken", wakes);

	/* the lease's last millisecond: not the lease's */
	set_up();
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 1));
	done = take(&id);
	tap_check(done && lease_sleeps == 0, "an ID in the millisecond before the lease end: no wait",
			  "%d waits", lease_sleeps);
	set_up();
	pg_atomic_write_u64(&shared->lease_end, (uint64) start_ms);
	done = take(&id);
	tap_check(done && lease_sleeps >= 1 && FlakeMs(id) < (int64) pg_atomic_read_u64(&shared->lease_end),
			  "an ID at the lease end's millisecond: waits for the lease",
			  "%d waits", lease_sleeps);

	/* a lease that cannot be written */
	set_up();
	worker_follows = false;
	shared->lease_failing = true;
	shared->lease_errno = ENOSPC;
	pg_atomic_write_u64(&shared->lease_end, (uint64) start_ms);
	done = take(&id);
	tap_check(!done && failed_with("could not renew the flakeid time lease", ERRCODE_IO_ERROR),
			  "the lease failing: the call fails with the file's error",
			  "error %s", error_fmt ? error_fmt : "none");

	/* no worker: 10 s, then an error */
	set_up();
	worker_follows = false;
	shared->worker_latch = NULL;
	flake_max_lease_wait_ms = 60000;
	pg_atomic_write_u64(&shared->lease_end, (uint64) start_ms);
	mono_before = mono_ns;
	done = take(&id);
	tap_check(!done && failed_with("timed out waiting for the flakeid lease worker",
										ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  mono_ns - mono_before > (int64) FLAKE_WORKER_WAIT_MS * 1000000 &&
			  mono_ns - mono_before <= (int64) (FLAKE_WORKER_WAIT_MS + 2 * FLAKE_LEASE_POLL_MS) * 1000000,
			  "no lease worker: the call fails after 10 s",
			  "error %s after %lld ms", error_fmt ? error_fmt : "none",
			  (long long) ((mono_ns - mono_before) / 1000000));

	/* the worker gone twice, 6 s each time: no 10 s without it */
	set_up();
	flake_max_lease_wait_ms = 60000;
	pg_atomic_write_u64(&shared->lease_end, (uint64) start_ms);
	on_lease_sleep = worker_comes_and_goes;
	done = take(&id);
	tap_check(done && lease_sleeps > 130,
			  "the lease worker gone for 6 s twice, back in between: the call waits for it",
			  "error %s after %d waits", error_fmt ? error_fmt : "none", lease_sleeps);

	/* a worker that does not renew: flakeid.max_lease_wait */
	set_up();
	worker_follows = false;
	flake_max_lease_wait_ms = 1000;
	pg_atomic_write_u64(&shared->lease_end, (uint64) start_ms);
	mono_before = mono_ns;
	done = take(&id);
	tap_check(!done && failed_with("timed out waiting for the flakeid time lease",
										ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  mono_ns - mono_before > INT64CONST(1000000000) &&
			  mono_ns - mono_before <= INT64CONST(1000000000) + 2 * FLAKE_LEASE_POLL_MS * INT64CONST(1000000),
			  "a lease that does not come: the call fails after flakeid.max_lease_wait",
			  "error %s after %lld ms", error_fmt ? error_fmt : "none",
			  (long long) ((mono_ns - mono_before) / 1000000));
}

/* with synchronous standbys: their confirmation too */
static void
check_standbys(void)
{
	FlakeIssue	issue;
	int64		n = 5 * per_ms();
	int64		id;

	/* a check that covers, 1 ms old: used as it is */
	set_up();
	standbys = true;
	pg_atomic_write_u64(&shared->confirm.sync_end, (uint64) (start_ms + 1000));
	pg_atomic_write_u64(&shared->confirm.checked, (uint64) (start_ms - 1));
	done = take(&id);
	tap_check(done && rechecks == 0, "standbys: a check 1 ms old that covers the ID: no check",
			  "%d checks", rechecks);
	/* a batch, the check 1 ms old and covering: no check either */
	set_up();
	standbys = true;
	pg_atomic_write_u64(&shared->confirm.sync_end, (uint64) (start_ms + 1000));
	pg_atomic_write_u64(&shared->confirm.checked, (uint64) (start_ms - 1));
	done = take_batch(2, &issue);
	tap_check(done && rechecks == 0, "standbys: a batch, a check 1 ms old that covers it: no check",
			  "error %s; %d checks", error_fmt ? error_fmt : "none", rechecks);
	/* 2 ms old: checked again, at the precise clock */
	set_up();
	standbys = true;
	standby_end = start_ms + 1000;
	pg_atomic_write_u64(&shared->confirm.sync_end, (uint64) (start_ms + 1000));
	pg_atomic_write_u64(&shared->confirm.checked, (uint64) (start_ms - 2));
	done = take(&id);
	tap_check(done && rechecks == 1 && recheck_now == start_ms,
			  "standbys: a check 2 ms old: checked again, at the clock",
			  "%d checks, at %lld", rechecks, (long long) recheck_now);

	/*
	 * Timed on the time-stamp counter: a call that did not read the precise
	 * clock asks the counter first, and the clock where the counter finds
	 * the check old or not covering; a single call that keeps up with the
	 * clock read it, and asks it alone.
	 */
	{
		static const struct
		{
			const char *what;
			bool		batch;
			bool		young;
			int64		confirmed;
			int			rechecks;
		}			cases[] = {
			{"standbys: a batch, a check 2 ms old but young by the counter, covering it: no check",
			true, true, 1000, 0},
			{"standbys: a batch, a check old by the counter too: checked again, at the clock",
			true, false, 1000, 1},
			{"standbys: a batch, a check young by the counter that does not cover it: checked again, at the clock",
			true, true, 0, 1},
			{"standbys: a single call, a check 2 ms old but young by the counter: checked again, at the clock",
			false, true, 1000, 1},
		};

		for (int i = 0; i < (int) lengthof(cases); i++)
		{
			set_up();
			standbys = true;
			standby_end = start_ms + 1000;
			/* a single call keeps up with the clock from the second on */
			if (!cases[i].batch)
			{
				(void) take(&id);
				rechecks = 0;
			}
			shared->confirm.fresh_cycles = UINT64CONST(200000000000);
			pg_atomic_write_u64(&shared->confirm.sync_end, (uint64) (start_ms + cases[i].confirmed));
			pg_atomic_write_u64(&shared->confirm.checked, (uint64) (start_ms - 2));
			pg_atomic_write_u64(&shared->confirm.checked_cycles,
								FlakeCycles() - (cases[i].young ? 0 : 2 * shared->confirm.fresh_cycles));
			done = cases[i].batch ? take_batch(2, &issue) : take(&id);
			tap_check(done && rechecks == cases[i].rechecks &&
					  (rechecks == 0 || recheck_now == start_ms),
					  cases[i].what, "error %s; %d checks, at %lld", error_fmt ? error_fmt : "none",
					  rechecks, (long long) recheck_now);
		}
	}

	/* the standbys 2 ms ahead, the batch to 4: it waits for them */
	set_up();
	standbys = true;
	standby_follows = true;
	standby_end = start_ms + 2;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 1000));
	done = take_batch(n, &issue);
	tap_check(done && batch_end_ms(&issue, n) < standby_end && lease_sleeps >= 1 &&
			  rechecks > 0 && rechecks_off_clock == 0,
			  "standbys behind the IDs: the call waits until they confirm them, checked at the clock",
			  "error %s; end %lld, standbys %lld, %d waits", error_fmt ? error_fmt : "none",
			  (long long) batch_end_ms(&issue, n), (long long) standby_end, lease_sleeps);
	/* the ID in the standbys' last millisecond */
	set_up();
	standbys = true;
	standby_end = start_ms;
	standby_follows = true;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 1000));
	done = take(&id);
	tap_check(done && lease_sleeps >= 1 && FlakeMs(id) < standby_end,
			  "standbys that confirmed up to the ID's millisecond: the call waits",
			  "%d waits, standbys %lld", lease_sleeps, (long long) standby_end);

	/* standbys that do not confirm */
	set_up();
	standbys = true;
	standby_end = start_ms;
	flake_max_lease_wait_ms = 500;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 1000));
	done = take(&id);
	tap_check(!done &&
			  failed_with("timed out waiting for the synchronous standbys to confirm the flakeid time lease",
						  ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			  "standbys that do not confirm: the call fails, naming them",
			  "error %s", error_fmt ? error_fmt : "none");
}

/*
 * A check of the standbys young by the time-stamp counter, which read the
 * wall clock at clock_at (ms of the layout) just after its stamp, and
 * which covers a second of IDs.
 */
static void
young_check(int64 clock_at)
{
	shared->confirm.fresh_cycles = UINT64CONST(200000000000);
	pg_atomic_write_u64(&shared->confirm.sync_end, (uint64) (start_ms + 1000));
	pg_atomic_write_u64(&shared->confirm.checked, (uint64) clock_at);
	pg_atomic_write_u64(&shared->confirm.cycles_clock, (uint64) (layout.epoch_ms + clock_at));
	pg_atomic_write_u64(&shared->confirm.checked_cycles, cycles_now);
}

/*
 * A burst with synchronous standbys: the next tick set ahead_ms past the
 * wall clock, the IDs taken as ahead, the standbys' check young by the
 * counter at check_at, the counts of reads and checks cleared.
 */
static void
set_up_burst(int64 ahead_ms, int64 check_at)
{
	int64		id;

	set_up();
	standbys = true;
	standby_end = start_ms + 1000;
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 1000));
	(void) take(&id);
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, clock_ms() + ahead_ms));
	ids_ahead = true;
	young_check(check_at);
	precise_reads = coarse_reads = cycle_reads = standby_reads = rechecks = 0;
}

/*
 * With synchronous standbys a call whose IDs run ahead of the clock reads
 * the counter, and takes the clock of a check young by it for the clock:
 * at most FLAKE_CONFIRM_FRESH_MS behind the wall clock's millisecond.
 * IDs at least that far past it are ahead of the clock, and within
 * flakeid.max_lead of it within flakeid.max_lead of the clock; others
 * ask the precise clock.
 */
static void
check_standby_burst(void)
{
	FlakeIssue	issue;
	int64		id;

	/* the IDs 2 ms past the check's clock: no clock read, one counter read */
	set_up_burst(2, start_ms);
	done = take(&id);
	tap_check(done && precise_reads == 0 && coarse_reads == 0 && cycle_reads == 1 &&
			  standby_reads == 1 && rechecks == 0 && FlakeMs(id) == clock_ms() + 2 && ids_ahead,
			  "standbys, a burst 2 ms past the clock of a check young by the counter: no clock read, the counter and the standbys once",
			  "error %s; %d precise, %d coarse, %d counter, %d standbys reads, %d checks, ms %+lld",
			  error_fmt ? error_fmt : "none", precise_reads, coarse_reads, cycle_reads,
			  standby_reads, rechecks, (long long) (FlakeMs(id) - clock_ms()));
	/* a batch the same */
	set_up_burst(2, start_ms);
	done = take_batch(3, &issue);
	tap_check(done && precise_reads == 0 && coarse_reads == 0 && cycle_reads == 1 && rechecks == 0,
			  "standbys, a batch 2 ms past the clock of a check young by the counter: no clock read",
			  "error %s; %d precise, %d coarse, %d counter reads, %d checks",
			  error_fmt ? error_fmt : "none", precise_reads, coarse_reads, cycle_reads, rechecks);

	/* 1 ms past it: the wall clock may have reached them */
	set_up_burst(1, start_ms);
	done = take(&id);
	tap_check(done && precise_reads == 1 && coarse_reads == 0 && rechecks == 0 &&
			  FlakeMs(id) == clock_ms() + 1,
			  "standbys, a burst 1 ms past the clock of a young check: the precise clock read",
			  "error %s; %d precise, %d coarse reads, %d checks", error_fmt ? error_fmt : "none",
			  precise_reads, coarse_reads, rechecks);
	/* the check's clock 2 ms behind the wall clock, the IDs at the wall clock */
	set_up_burst(0, start_ms - 2);
	done = take(&id);
	tap_check(done && precise_reads == 0 && FlakeMs(id) == clock_ms(),
			  "standbys, a check's clock 2 ms behind, a burst at the wall clock: no clock read",
			  "error %s; %d precise reads, ms %+lld", error_fmt ? error_fmt : "none",
			  precise_reads, (long long) (FlakeMs(id) - clock_ms()));

	/* the check old by the counter (and the clock): the precise clock, and a check at it */
	set_up_burst(20, start_ms);
	pg_atomic_write_u64(&shared->confirm.checked, (uint64) (start_ms - 2));
	pg_atomic_write_u64(&shared->confirm.checked_cycles,
						cycles_now - shared->confirm.fresh_cycles);
	done = take(&id);
	tap_check(done && precise_reads >= 1 && coarse_reads == 0 && rechecks == 1 &&
			  recheck_now == clock_ms() && FlakeMs(id) == clock_ms() + 20,
			  "standbys, a burst, the check fresh_cycles old: the precise clock read, checked again at it",
			  "error %s; %d precise, %d coarse reads, %d checks at %+lld",
			  error_fmt ? error_fmt : "none", precise_reads, coarse_reads, rechecks,
			  (long long) (recheck_now - clock_ms()));
	/* a young check before the epoch: out of range, the precise clock read */
	set_up_burst(20, -10);
	done = take(&id);
	tap_check(done && precise_reads >= 1 && FlakeMs(id) == clock_ms() + 20,
			  "standbys, a burst, a young check's clock before the epoch: the precise clock read",
			  "error %s; %d precise reads", error_fmt ? error_fmt : "none", precise_reads);
	/* without standbys a burst reads the coarse clock, and not the counter */
	set_up_burst(20, start_ms);
	standbys = false;
	done = take(&id);
	tap_check(done && precise_reads == 0 && coarse_reads == 1 && cycle_reads == 0 &&
			  standby_reads == 1,
			  "no standbys, a burst: the coarse clock read, not the counter, the standbys once",
			  "error %s; %d precise, %d coarse, %d counter, %d standbys reads",
			  error_fmt ? error_fmt : "none", precise_reads, coarse_reads, cycle_reads, standby_reads);

	/* flakeid.max_lead, counted from the check's clock */
	set_up_burst(100, start_ms);
	flake_max_lead_ms = 100;
	done = take(&id);
	tap_check(done && precise_reads == 0 && FlakeMs(id) == clock_ms() + 100,
			  "standbys, a burst exactly flakeid.max_lead past the check's clock: no clock read",
			  "error %s; %d precise reads", error_fmt ? error_fmt : "none", precise_reads);
	set_up_burst(101, start_ms);
	flake_max_lead_ms = 100;
	done = take(&id);
	tap_check(done && precise_reads >= 1 && latch_sleeps >= 1 && FlakeMs(id) - clock_ms() <= 100,
			  "standbys, a burst 1 ms past flakeid.max_lead: the call waits for the precise clock",
			  "error %s; %d precise reads, %d sleeps, %lld ms ahead", error_fmt ? error_fmt : "none",
			  precise_reads, latch_sleeps, (long long) (FlakeMs(id) - clock_ms()));
	/*
	 * A call that waited asks the counter again for the standbys, as it
	 * did not read the clock for them: a check 2 ms old by the clock but
	 * young by the counter serves it, after a wait for the clock and after
	 * one for the lease.
	 */
	set_up_burst(101, start_ms);
	flake_max_lead_ms = 100;
	pg_atomic_write_u64(&shared->confirm.checked, (uint64) (start_ms - 2));
	done = take(&id);
	tap_check(done && latch_sleeps >= 1 && rechecks == 0,
			  "standbys, after a wait for the clock: a check young by the counter, old by the clock, serves",
			  "error %s; %d sleeps, %d checks", error_fmt ? error_fmt : "none", latch_sleeps, rechecks);
	set_up_burst(2, start_ms);
	pg_atomic_write_u64(&shared->lease_end, (uint64) (start_ms + 1));
	pg_atomic_write_u64(&shared->confirm.checked, (uint64) (start_ms - 2));
	done = take(&id);
	tap_check(done && lease_sleeps >= 1 && rechecks == 0,
			  "standbys, after a wait for the lease: a check young by the counter, old by the clock, serves",
			  "error %s; %d waits, %d checks", error_fmt ? error_fmt : "none", lease_sleeps, rechecks);

	/* within it of the wall clock, not of the check's older clock: the precise clock decides */
	set_up_burst(99, start_ms - 2);
	flake_max_lead_ms = 100;
	latch_sleeps = 0;
	done = take(&id);
	tap_check(done && precise_reads >= 1 && latch_sleeps == 0 && FlakeMs(id) == clock_ms() + 99,
			  "standbys, a burst within flakeid.max_lead of the clock, not of the check's: no wait, at the precise clock",
			  "error %s; %d precise reads, %d sleeps", error_fmt ? error_fmt : "none",
			  precise_reads, latch_sleeps);
}

/* another node id published between the call's read of the word and its reservation */
static void
change_node(void)
{
	pg_atomic_write_u32(&shared->word, FlakeWord(gen % 255 + 1, FLAKE_GEN_READY, 7));
	(pg_atomic_fetch_add_u64) (&shared->next_tick, (uint64) per_ms());
}

/* another call starts the clock's millisecond first, taking its first tick */
static void
other_starts_millisecond(void)
{
	uint64		cur = (pg_atomic_read_u64) (&shared->next_tick);

	(pg_atomic_compare_exchange_u64) (&shared->next_tick, &cur,
									  FlakeTickOfMs(&layout, clock_ms()) + 1);
}

static void
check_changes(void)
{
	int64		id;
	int64		prev;
	FlakeIssue	issue;

	set_up();
	done = take(&prev);
	tap_check(done, "a first ID", "error %s", error_fmt ? error_fmt : "none");
	other_step = change_node;
	done = take(&id);
	tap_check(done && FlakeNode(&layout, id) == 7 && id > prev,
			  "the node id changed while the call reserved: the ID is the new node id's",
			  "node %d", FlakeNode(&layout, id));
	set_up();
	done = take(&prev);
	tap_check(done, "a first ID", "error %s", error_fmt ? error_fmt : "none");
	other_step = change_node;
	done = take_batch(3, &issue);
	tap_check(done && issue.node == 7,
			  "the node id changed while a batch reserved: the new node id's", "node %d", issue.node);

	/* no process set the generator up yet: the call does */
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_NOT_SET_UP, 0));
	done = take(&id);
	tap_check(done && setups == 1 && FlakeNode(&layout, id) == 5,
			  "a generator no process set up: the first call sets it up, then generates",
			  "error %s; %d set-ups", error_fmt ? error_fmt : "none", setups);

	/* no node id, the floor after recovery unwritten: the node id's error at once */
	set_up();
	worker_follows = false;
	floor_pending = true;
	flake_max_lease_wait_ms = 1000;
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_NODE_UNSET, 0));
	done = take(&id);
	tap_check(!done && failed_with("flakeid.node_id is not set", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  lease_sleeps == 0,
			  "no node id and the floor unwritten: the node id's error, with no wait for the floor",
			  "error %s, %d waits", error_fmt ? error_fmt : "none", lease_sleeps);

	/* another call starts the millisecond between this call's read and its swap */
	set_up();
	tap_check(take(&prev), "a first ID", "error %s", error_fmt ? error_fmt : "none");
	advance(5000000);
	other_swap_step = other_starts_millisecond;
	done = take_batch(3, &issue);
	tap_check(done && issue.first == FlakeTickOfMs(&layout, clock_ms()) + 1 &&
			  pg_atomic_read_u64(&shared->next_tick) == issue.first + 3,
			  "another call starts the millisecond first: this one's ticks follow its tick",
			  "error %s; first %llu, the other's %llu", error_fmt ? error_fmt : "none",
			  (unsigned long long) issue.first,
			  (unsigned long long) FlakeTickOfMs(&layout, clock_ms()));

	/* statuses that do not generate */
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_NODE_UNSET, 0));
	done = take(&id);
	tap_check(!done && failed_with("flakeid.node_id is not set", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			  "no node id: the call fails", "error %s", error_fmt ? error_fmt : "none");
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_FILE_DAMAGED, 5));
	done = take(&id);
	tap_check(!done && failed_with("flakeid state file \"%s\" is damaged", ERRCODE_DATA_CORRUPTED),
			  "a damaged state file: the call fails", "error %s", error_fmt ? error_fmt : "none");
	set_up();
	in_recovery = true;
	done = take(&id);
	tap_check(!done && failed_with("cannot generate flakeid values during recovery",
										ERRCODE_READ_ONLY_SQL_TRANSACTION),
			  "in recovery: the call fails", "error %s", error_fmt ? error_fmt : "none");
	/* ready again: the word read afresh */
	in_recovery = false;
	done = take(&id);
	tap_check(done && FlakeNode(&layout, id) == 5, "out of recovery: IDs again",
			  "error %s", error_fmt ? error_fmt : "none");
}

/* the state file behind the WAL, or the floor after recovery unwritten */
static void
check_file_waits(void)
{
	int64		id;
	int64		mono_before;

	/* the file behind: the call waits until the worker writes it */
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_FILE_BEHIND, 5));
	file_step = 1;
	done = take(&id);
	tap_check(done && lease_sleeps == 1 && wakes >= 1 && FlakeNode(&layout, id) == 5,
			  "the state file behind the WAL: the call waits for the worker to write it",
			  "error %s; %d waits, %d woken", error_fmt ? error_fmt : "none", lease_sleeps, wakes);
	/* the worker's write fails: at once the file's error */
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_FILE_BEHIND, 5));
	file_step = 2;
	done = take(&id);
	tap_check(!done && failed_with("could not write flakeid state file \"%s\": %m", ERRCODE_IO_ERROR) &&
			  lease_sleeps == 1,
			  "the state file behind, the worker's write fails: the file's error after that write",
			  "error %s; %d waits", error_fmt ? error_fmt : "none", lease_sleeps);
	/* failing before the call, with no new write: the whole wait, then the error */
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_FILE_BEHIND, 5));
	shared->lease_failing = true;
	shared->lease_errno = ENOSPC;
	flake_max_lease_wait_ms = 1000;
	mono_before = mono_ns;
	done = take(&id);
	tap_check(!done && failed_with("could not write flakeid state file", ERRCODE_IO_ERROR) &&
			  mono_ns - mono_before > INT64CONST(1000000000),
			  "the state file behind, a write failed before the call: it waits flakeid.max_lease_wait for another",
			  "error %s after %lld ms", error_fmt ? error_fmt : "none",
			  (long long) ((mono_ns - mono_before) / 1000000));
	/* no write at all */
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_FILE_BEHIND, 5));
	flake_max_lease_wait_ms = 1000;
	mono_before = mono_ns;
	done = take(&id);
	tap_check(!done && failed_with("timed out waiting for the flakeid time lease",
								   ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  mono_ns - mono_before > INT64CONST(1000000000) &&
			  mono_ns - mono_before <= INT64CONST(1000000000) + 2 * FLAKE_LEASE_POLL_MS * INT64CONST(1000000),
			  "the state file behind, never written: the call fails after flakeid.max_lease_wait",
			  "error %s after %lld ms", error_fmt ? error_fmt : "none",
			  (long long) ((mono_ns - mono_before) / 1000000));

	/* the floor after recovery */
	set_up();
	floor_pending = true;
	file_step = 1;
	done = take(&id);
	tap_check(done && lease_sleeps == 1 && !floor_pending,
			  "the floor after recovery unwritten: the call waits for it",
			  "error %s; %d waits", error_fmt ? error_fmt : "none", lease_sleeps);
	set_up();
	floor_pending = true;
	file_step = 2;
	done = take(&id);
	tap_check(!done && failed_with("could not renew the flakeid time lease", ERRCODE_IO_ERROR),
			  "the floor's write fails: the call fails with the file's error",
			  "error %s", error_fmt ? error_fmt : "none");
}

/*
 * The layout: fixed when preloaded; else a session whose settings changed
 * since the generator started, or came from elsewhere, does not generate
 */
static void
check_settings(void)
{
	int64		id;
	char		want[256];

	set_up();
	settings_layout.node_bits = 12;
	done = take(&id);
	tap_check(done, "preloaded: settings changed since start do not matter", "error %s",
			  error_fmt ? error_fmt : "none");
	set_up();
	layout_fixed = false;
	done = take(&id);
	tap_check(done, "not preloaded, the settings as at start: IDs", "error %s",
			  error_fmt ? error_fmt : "none");
	set_up();
	layout_fixed = false;
	settings_layout.node_bits = 12;
	done = take(&id);
	tap_check(!done && failed_with("flakeid layout settings changed while the server was running",
								   ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  strcmp(error_detail, "The generator started with flakeid.node_bits was 10 and is now 12.") == 0,
			  "not preloaded, flakeid.node_bits changed: refused, naming both",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);
	set_up();
	layout_fixed = false;
	settings_layout.epoch_ms -= 1000;
	done = take(&id);
	snprintf(want, sizeof(want), "The generator started with flakeid.epoch was %lld and is now %lld.",
			 (long long) FlakeTimestamp(&layout, 0), (long long) FlakeTimestamp(&settings_layout, 0));
	tap_check(!done && failed_with("flakeid layout settings changed while the server was running",
								   ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  strcmp(error_detail, want) == 0,
			  "not preloaded, flakeid.epoch changed: refused, naming both epochs",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);
	set_up();
	layout_fixed = false;
	settings_from_config = false;
	done = take(&id);
	tap_check(!done && failed_with("a layout setting given from elsewhere",
								   ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			  "not preloaded, a setting given from elsewhere: refused",
			  "error %s", error_fmt ? error_fmt : "none");
	set_up();
	layout_fixed = false;
	settings_valid = false;
	done = take(&id);
	tap_check(!done && failed_with("invalid layout setting", ERRCODE_INVALID_PARAMETER_VALUE),
			  "not preloaded, an invalid setting: refused", "error %s",
			  error_fmt ? error_fmt : "none");

	/* the generator stopped by a layout change: the message names it */
	set_up();
	shared->configured.node_bits = 12;
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_LAYOUT_CHANGED, 5));
	done = take(&id);
	tap_check(!done && failed_with("flakeid layout has changed since this server last generated IDs",
								   ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  strcmp(error_detail, "flakeid.node_bits was 10 and is now 12.") == 0,
			  "the layout changed since the last ID: refused, naming both",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);
}

/* the end of the time range, and a clock outside it */
static void
check_range(void)
{
	FlakeIssue	issue;
	int64		id;
	uint64		next;
	char		want[256];

	set_up();
	set_clock_ms(FLAKE_MAX_MS);
	pg_atomic_write_u64(&shared->lease_end, (uint64) FLAKE_MAX_MS + 1);
	done = take_batch(per_ms() / 2, &issue);
	tap_check(done, "the last millisecond of the range: half its IDs", "error %s",
			  error_fmt ? error_fmt : "none");
	next = pg_atomic_read_u64(&shared->next_tick);
	done = take_batch(per_ms() / 2 + 1, &issue);
	tap_check(!done &&
			  failed_with("flakeid values would pass the end of the layout's time range",
						  ERRCODE_DATETIME_VALUE_OUT_OF_RANGE) &&
			  pg_atomic_read_u64(&shared->next_tick) == next,
			  "a batch 1 tick past the range: refused before anything is reserved",
			  "error %s, next tick moved by %lld", error_fmt ? error_fmt : "none",
			  (long long) (pg_atomic_read_u64(&shared->next_tick) - next));
	done = take_batch(per_ms() / 2, &issue);
	tap_check(done && batch_end_ms(&issue, per_ms() / 2) == FLAKE_MAX_MS &&
			  pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout, FLAKE_MAX_MS + 1),
			  "the last millisecond of the range: the other half, to its last tick",
			  "error %s", error_fmt ? error_fmt : "none");
	next = pg_atomic_read_u64(&shared->next_tick);
	done = take_batch(2, &issue);
	tap_check(!done &&
			  failed_with("flakeid values would pass the end of the layout's time range",
						  ERRCODE_DATETIME_VALUE_OUT_OF_RANGE) &&
			  pg_atomic_read_u64(&shared->next_tick) == next,
			  "a batch past the range: refused before anything is reserved", "error %s, next tick moved by %lld",
			  error_fmt ? error_fmt : "none", (long long) (pg_atomic_read_u64(&shared->next_tick) - next));
	snprintf(want, sizeof(want), "The 41-bit time field counted from flakeid.epoch (%lld) ends at %lld.",
			 (long long) FlakeTimestamp(&layout, 0), (long long) FlakeTimestamp(&layout, FLAKE_MAX_MS + 1));
	tap_check(strcmp(error_detail, want) == 0, "past the range: the detail names the field's start and end",
			  "%s", error_detail);
	set_up();
	set_clock_ms(FLAKE_MAX_MS + 1);
	done = take(&id);
	tap_check(!done && failed_with("system clock is outside the range of flakeid timestamps",
										ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			  "a clock past the range: refused", "error %s", error_fmt ? error_fmt : "none");
	snprintf(want, sizeof(want), "The 41-bit time field counted from flakeid.epoch (%lld) ended at %lld.",
			 (long long) FlakeTimestamp(&layout, 0), (long long) FlakeTimestamp(&layout, FLAKE_MAX_MS + 1));
	tap_check(strcmp(error_detail, want) == 0, "a clock past the range: the detail names the field's start and end",
			  "%s", error_detail);
	set_up();
	set_clock_ms(-1);
	done = take(&id);
	tap_check(!done && failed_with("system clock is outside the range of flakeid timestamps",
										ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			  "a clock before the epoch: refused", "error %s", error_fmt ? error_fmt : "none");
	snprintf(want, sizeof(want), "The clock reads before flakeid.epoch (%lld).",
			 (long long) FlakeTimestamp(&layout, 0));
	tap_check(strcmp(error_detail, want) == 0, "a clock 1 ms before the epoch: the detail says so",
			  "%s", error_detail);
}

/* flakeid.cache: blocks, within their word and millisecond */
static void
check_cache(void)
{
	int64		id = 0;
	int64		prev = 0;
	bool		ok = true;
	uint64		next;

	/* a process's first block is one tick, the next in its millisecond two */
	set_up();
	flake_cache = 64;
	renew_on_wake = true;
	next = pg_atomic_read_u64(&shared->next_tick);
	done = take(&id);
	tap_check(done && pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout, start_ms) + 1,
			  "flakeid.cache: a process's first call reserves one tick", "next tick %llu",
			  (unsigned long long) (pg_atomic_read_u64(&shared->next_tick) - next));
	next = pg_atomic_read_u64(&shared->next_tick);
	done = take(&id);
	tap_check(done && pg_atomic_read_u64(&shared->next_tick) == next + 2,
			  "flakeid.cache: its second, in the same millisecond, two", "reserved %llu",
			  (unsigned long long) (pg_atomic_read_u64(&shared->next_tick) - next));
	/* the millisecond past with one tick left over: a block half as large */
	advance(1000000);
	done = take(&id);
	next = FlakeTickOfMs(&layout, clock_ms());
	tap_check(done && pg_atomic_read_u64(&shared->next_tick) == next + 1,
			  "flakeid.cache: a block of two with a tick left over, its millisecond past: one tick next",
			  "reserved %llu", (unsigned long long) (pg_atomic_read_u64(&shared->next_tick) - next));

	set_up();
	flake_cache = 64;
	renew_on_wake = true;
	for (int i = 0; i < 200 && ok; i++)
	{
		ok = take(&id) && id > prev && FlakeMs(id) == start_ms;
		prev = id;
	}
	tap_check(ok && my_block.size == 64,
			  "flakeid.cache 64 in one millisecond: IDs in order, the block grown to 64",
			  "ok %d, block %lld", ok, (long long) my_block.size);
	next = pg_atomic_read_u64(&shared->next_tick);
	done = take(&id);
	tap_check(done && pg_atomic_read_u64(&shared->next_tick) == next && id > prev,
			  "flakeid.cache: the next ID from the block", "next tick moved by %lld",
			  (long long) (pg_atomic_read_u64(&shared->next_tick) - next));
	prev = id;
	/* the block of 64 used up in its millisecond: the next as large, not larger */
	while (ok && my_block.issue.first < my_block.end)
	{
		ok = take(&id) && id > prev;
		prev = id;
	}
	advance(1000000);
	done = take(&id);
	next = FlakeTickOfMs(&layout, clock_ms());
	tap_check(ok && done && pg_atomic_read_u64(&shared->next_tick) == next + 64 && id > prev,
			  "flakeid.cache: a block of 64 used up, its millisecond past: 64 again",
			  "reserved %llu", (unsigned long long) (pg_atomic_read_u64(&shared->next_tick) - next));
	prev = id;
	advance(1000000);
	done = take(&id);
	tap_check(done && my_block.size == 32 && id > prev,
			  "flakeid.cache: a block of 64 with ticks left over, its millisecond past: 32 next",
			  "block %lld", (long long) my_block.size);
	prev = id;
	advance(1000000);
	done = take(&id);
	tap_check(done && FlakeMs(id) >= clock_ms() && id > prev,
			  "flakeid.cache, the millisecond past: the ID from a new reservation, at the clock",
			  "ms %lld, clock %lld", (long long) FlakeMs(id), (long long) clock_ms());
	prev = id;
	pg_atomic_write_u32(&shared->word, FlakeWord(gen % 255 + 1, FLAKE_GEN_READY, 9));
	done = take(&id);
	tap_check(done && FlakeNode(&layout, id) == 9 && id > prev,
			  "flakeid.cache, another node id published: not from the block", "node %d",
			  FlakeNode(&layout, id));

	/* flakeid.cache 2: the second call of a millisecond from the block */
	set_up();
	flake_cache = 2;
	renew_on_wake = true;
	(void) take(&id);
	(void) take(&id);
	next = pg_atomic_read_u64(&shared->next_tick);
	prev = id;
	done = take(&id);
	tap_check(done && pg_atomic_read_u64(&shared->next_tick) == next && id > prev &&
			  pg_atomic_read_u64(&slot.issued) == 3,
			  "flakeid.cache 2: a block of two serves the next call; each call counted once",
			  "next tick moved by %lld, %llu counted",
			  (long long) (pg_atomic_read_u64(&shared->next_tick) - next),
			  (unsigned long long) pg_atomic_read_u64(&slot.issued));

	/* IDs ahead of the clock: blocks of one tick, each counted once */
	set_up();
	flake_cache = 64;
	renew_on_wake = true;
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, start_ms + 20));
	ids_ahead = true;
	ok = true;
	for (int i = 0; i < 10 && ok; i++)
	{
		next = pg_atomic_read_u64(&shared->next_tick);
		ok = take(&id) && pg_atomic_read_u64(&shared->next_tick) == next + 1;
	}
	tap_check(ok && pg_atomic_read_u64(&slot.issued) == 10,
			  "flakeid.cache 64 with the IDs 20 ms ahead of the clock: one tick a call, each counted once",
			  "next tick moved by %lld, %llu counted",
			  (long long) (pg_atomic_read_u64(&shared->next_tick) - next),
			  (unsigned long long) pg_atomic_read_u64(&slot.issued));
}

/* one nextflakes(n) as the executor runs it, the rows fetched up to stop */
static int64 batch_ids[64];
static int	batch_rows;
static bool batch_ended;

static bool
fetch_batch(int32 n, int stop)
{
	FmgrInfo	flinfo;
	ReturnSetInfo rsi;
	sigjmp_buf	jump;

	LOCAL_FCINFO(fcinfo, 1);

	memset(&flinfo, 0, sizeof(flinfo));
	memset(&rsi, 0, sizeof(rsi));
	rsi.type = T_ReturnSetInfo;
	fcinfo->flinfo = &flinfo;
	fcinfo->resultinfo = (Node *) &rsi;
	fcinfo->nargs = 1;
	fcinfo->args[0].value = Int32GetDatum(n);
	fcinfo->args[0].isnull = false;
	batch_rows = 0;
	batch_ended = false;
	error_fmt = NULL;
	on_error = &jump;
	if (sigsetjmp(jump, 0) == 0)
	{
		while (batch_rows < stop)
		{
			Datum		d;

			fcinfo->isnull = false;
			d = nextflakes(fcinfo);
			if (rsi.isDone == ExprEndResult)
			{
				batch_ended = fcinfo->isnull && flinfo.fn_extra == NULL;
				break;
			}
			if (rsi.isDone != ExprMultipleResult || fcinfo->isnull)
				tap_bail("nextflakes() returned a row that is not one");
			if (batch_rows < (int) lengthof(batch_ids))
				batch_ids[batch_rows] = DatumGetInt64(d);
			batch_rows++;
		}
		on_error = NULL;
		return true;
	}
	on_error = NULL;
	return false;
}

/* the tick an ID was made of */
static uint64
id_tick(int64 id)
{
	return FlakeTickOfMs(&layout, FlakeMs(id)) + (uint64) FlakeSeq(&layout, id);
}

/* the rows of a batch rise one tick at a time, above after, of node 5 */
static bool
batch_follows(int64 after)
{
	for (int i = 0; i < batch_rows && i < (int) lengthof(batch_ids); i++)
	{
		int64		id = batch_ids[i];

		if (FlakeNode(&layout, id) != 5)
			return false;
		if (i == 0 ? id <= after :
			id_tick(id) != id_tick(batch_ids[i - 1]) + 1)
			return false;
	}
	return true;
}

/* nextflakes(): its size checks, its rows, and what it learns first */
static void
check_batches(void)
{
	int64		id,
				last;
	uint64		issued,
				next;
	bool		ok;

	set_up();
	ok = fetch_batch(-1, 10);
	tap_check(!ok && failed_with("number of flakeid values must not be negative",
								 ERRCODE_INVALID_PARAMETER_VALUE),
			  "nextflakes(-1): refused", "error %s", error_fmt ? error_fmt : "none");

	/* no IDs: no row, and nothing asked of the generator */
	set_up();
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_NOT_SET_UP, 5));
	srf_ends = 0;
	ok = fetch_batch(0, 10);
	tap_check(ok && batch_rows == 0 && batch_ended && srf_ends == 1 && setups == 0 &&
			  my_word == 0,
			  "nextflakes(0): no row, the generator not set up",
			  "ok %d, %d rows, ended %d, %d set-ups", ok, batch_rows, batch_ended, setups);

	/* after a nextflake(), n rows one tick apart, counted once */
	set_up();
	done = take(&id);
	issued = pg_atomic_read_u64(&slot.issued);
	srf_ends = 0;
	ok = fetch_batch(5, 10);
	tap_check(done && ok && batch_rows == 5 && batch_ended && srf_ends == 1 &&
			  batch_follows(id) &&
			  pg_atomic_read_u64(&slot.issued) == issued + 5 &&
			  pg_atomic_read_u64(&shared->next_tick) == (uint64) id_tick(batch_ids[4]) + 1,
			  "nextflakes(5): five rows rising from the ID before, counted",
			  "ok %d, %d rows, ended %d, issued %llu", ok, batch_rows, batch_ended,
			  (unsigned long long) (pg_atomic_read_u64(&slot.issued) - issued));
	done = take(&last);
	tap_check(done && last > batch_ids[4], "a nextflake() after a batch: above it",
			  "%lld after %lld", (long long) last, (long long) batch_ids[4]);

	/* with flakeid.cache, the block before a batch gives no ID after it */
	set_up();
	flake_cache = 16;
	done = take(&id);
	ok = fetch_batch(3, 10);
	done = done && take(&last);
	tap_check(done && ok && batch_rows == 3 && batch_follows(id) && last > batch_ids[2],
			  "flakeid.cache: a batch above the block's ID, the next call above the batch",
			  "%lld, batch from %lld to %lld, then %lld", (long long) id,
			  (long long) batch_ids[0], (long long) batch_ids[2], (long long) last);

	/* flakeid.max_batch, for a role without superuser only */
	set_up();
	flake_max_batch = 4;
	ok = fetch_batch(4, 10);
	tap_check(ok && batch_rows == 4, "flakeid.max_batch = 4: nextflakes(4) allowed",
			  "error %s", error_fmt ? error_fmt : "none");
	next = pg_atomic_read_u64(&shared->next_tick);
	ok = fetch_batch(5, 10);
	tap_check(!ok && failed_with("cannot reserve %d flakeid values in one call",
								 ERRCODE_PROGRAM_LIMIT_EXCEEDED) &&
			  strcmp(error_detail, "flakeid.max_batch allows roles without superuser at most 4 per call.") == 0 &&
			  pg_atomic_read_u64(&shared->next_tick) == next,
			  "flakeid.max_batch = 4: nextflakes(5) refused before it reserves",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);
	is_superuser = true;
	ok = fetch_batch(5, 10);
	tap_check(ok && batch_rows == 5, "flakeid.max_batch = 4: a superuser's nextflakes(5) allowed",
			  "error %s", error_fmt ? error_fmt : "none");

	/* flakeid.max_lead bounds a batch: per_ms() IDs a millisecond */
	set_up();
	flake_max_lead_ms = 2;
	ok = fetch_batch((int32) (2 * per_ms()), 1);
	tap_check(ok && batch_rows == 1, "flakeid.max_lead = 2ms: a batch of two milliseconds allowed",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);
	next = pg_atomic_read_u64(&shared->next_tick);
	ok = fetch_batch((int32) (2 * per_ms() + 1), 1);
	tap_check(!ok && failed_with("cannot reserve %d flakeid values in one call",
								 ERRCODE_PROGRAM_LIMIT_EXCEEDED) &&
			  strcmp(error_detail, "With flakeid.node_bits = 10 a node makes 4096 IDs per millisecond, "
					 "and flakeid.max_lead (2 ms) allows at most 8192 at once.") == 0 &&
			  pg_atomic_read_u64(&shared->next_tick) == next,
			  "flakeid.max_lead = 2ms: one ID more refused before it reserves",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);

	/*
	 * Not preloaded, the layout settings reloaded since the last call: the
	 * batch checks them first, as nextflake() does, whatever its size.
	 */
	set_up();
	layout_fixed = false;
	ok = fetch_batch(1, 10);
	settings_layout.node_bits = 12;
	flake_layout_settings_gen++;
	next = pg_atomic_read_u64(&shared->next_tick);
	done = fetch_batch(1, 10);
	tap_check(ok && !done &&
			  failed_with("flakeid layout settings changed while the server was running",
						  ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) &&
			  pg_atomic_read_u64(&shared->next_tick) == next,
			  "not preloaded, flakeid.node_bits reloaded after a batch: the next refused",
			  "first %d, error %s", ok, error_fmt ? error_fmt : "none");
	flake_max_lead_ms = 2;
	done = fetch_batch((int32) (2 * per_ms() + 1), 1);
	tap_check(!done &&
			  failed_with("flakeid layout settings changed while the server was running",
						  ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			  "and a batch too large for flakeid.max_lead: refused for the settings first",
			  "error %s", error_fmt ? error_fmt : "none");
	flake_max_lead_ms = 5000;
	settings_layout.node_bits = 10;
	flake_layout_settings_gen++;
	ok = fetch_batch(1, 10);
	tap_check(ok && batch_rows == 1, "the setting restored and reloaded: a batch again",
			  "error %s", error_fmt ? error_fmt : "none");

	/* another node id since the last batch: the next carries it */
	pg_atomic_write_u32(&shared->word, FlakeWord(FlakeWordGen(pg_atomic_read_u32(&shared->word)) % 255 + 1,
												 FLAKE_GEN_READY, 6));
	ok = fetch_batch(2, 10);
	tap_check(ok && batch_rows == 2 && FlakeNode(&layout, batch_ids[0]) == 6 &&
			  FlakeNode(&layout, batch_ids[1]) == 6,
			  "node id 6 since the last batch: the next of node 6",
			  "error %s", error_fmt ? error_fmt : "none");

	/*
	 * The generator's layout is not the one this process last learnt (a
	 * layout accepted after a restart, say): the size check reads the
	 * generator's, whose millisecond holds fewer IDs.
	 */
	set_up();
	shared->layout.node_bits = 12;
	shared->configured.node_bits = 12;
	settings_layout.node_bits = 12;
	flake_max_lead_ms = 2;
	next = pg_atomic_read_u64(&shared->next_tick);
	ok = fetch_batch((int32) (2 * per_ms() / 4 + 1), 1);
	tap_check(!ok && failed_with("cannot reserve %d flakeid values in one call",
								 ERRCODE_PROGRAM_LIMIT_EXCEEDED) &&
			  pg_atomic_read_u64(&shared->next_tick) == next,
			  "a layout of 12 node bits since this process's last call: 2049 IDs refused in 2 ms",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);
	ok = fetch_batch((int32) (2 * per_ms() / 4), 1);
	tap_check(ok && batch_rows == 1, "and 2048 allowed", "error %s: %s",
			  error_fmt ? error_fmt : "none", error_detail);

	/* a process's first call: it knows no layout yet */
	set_up();
	memset(&my_layout, 0, sizeof(my_layout));
	flake_max_lead_ms = 2;
	ok = fetch_batch((int32) (2 * per_ms() + 1), 1);
	tap_check(!ok && failed_with("cannot reserve %d flakeid values in one call",
								 ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			  "a process's first call: 8193 IDs refused in 2 ms by the generator's layout",
			  "error %s: %s", error_fmt ? error_fmt : "none", error_detail);
}

/* flakeid_status()'s columns, in the order of its SQL definition */
static const char *const status_columns[] = {
	"state", "node_id", "node_bits", "epoch", "last_id", "last_time",
	"lead_ms", "lease_end", "issued", "waits", "clock_steps_back", "started"
};

static TupleDesc
make_desc(const char *const *names, int n)
{
	struct TupleDescData probe;
	TupleDesc	desc;

	probe.natts = n;
	desc = calloc(1, TupleDescSize(&probe));
	desc->natts = n;
	for (int i = 0; i < n; i++)
		snprintf(NameStr(TupleDescAttr(desc, i)->attname), NAMEDATALEN, "%s", names[i]);
	return desc;
}

/* one flakeid_status(): false on an ERROR */
static bool
call_status(void)
{
	sigjmp_buf	jump;

	LOCAL_FCINFO(fcinfo, 0);

	formed_natts = -1;
	error_fmt = NULL;
	on_error = &jump;
	if (sigsetjmp(jump, 0) == 0)
	{
		(void) flakeid_status(fcinfo);
		on_error = NULL;
		return formed_natts == status_desc->natts;
	}
	on_error = NULL;
	return false;
}

/* the value of a column of the row formed; null shown by *isnull */
static Datum
column(const char *name, bool *isnull)
{
	for (int i = 0; i < status_desc->natts; i++)
		if (strcmp(NameStr(TupleDescAttr(status_desc, i)->attname), name) == 0)
		{
			*isnull = formed_nulls[i];
			return formed_values[i];
		}
	tap_bail("no such column");
	return (Datum) 0;
}

static bool
column_is(const char *name, int64 value)
{
	bool		isnull;
	Datum		d = column(name, &isnull);

	return !isnull && DatumGetInt64(d) == value;
}

static bool
column_null(const char *name)
{
	bool		isnull;

	(void) column(name, &isnull);
	return isnull;
}

static bool
state_is(const char *want)
{
	bool		isnull;
	text	   *t = (text *) DatumGetPointer(column("state", &isnull));

	return !isnull && VARSIZE_ANY_EXHDR(t) == strlen(want) &&
		memcmp(VARDATA_ANY(t), want, strlen(want)) == 0;
}

/* what flakeid_status() shows, from the shared state */
static void
check_status(void)
{
	static const struct
	{
		FlakeStatus status;
		const char *name;
	}			names[] = {
		{FLAKE_GEN_CHANGING, "changing"},
		{FLAKE_GEN_NOT_SET_UP, "not set up"},
		{FLAKE_GEN_NODE_UNSET, "node id not set"},
		{FLAKE_GEN_LAYOUT_CHANGED, "layout changed"},
		{FLAKE_GEN_LAYOUT_INVALID, "layout setting invalid"},
		{FLAKE_GEN_FILE_DAMAGED, "state file damaged"},
		{FLAKE_GEN_FILE_UNREADABLE, "state file unreadable"},
		{FLAKE_GEN_FILE_BEHIND, "state file behind"},
	};
	const char *reversed[lengthof(status_columns)];
	int64		now_ms;
	uint64		tick;
	bool		ok;

	status_desc = make_desc(status_columns, lengthof(status_columns));

	/* no ID yet: the figures of the last ID are null */
	set_up();
	shared->nslots = 3;
	shared->node_id = 5;
	shared->started = 123456789;
	pg_atomic_write_u64(&shared->waits, 7);
	pg_atomic_write_u64(&shared->clock_steps_back, 2);
	monitor_checks = 0;
	ok = call_status();
	tap_check(ok && monitor_checks == 1 && state_is("ready") && column_is("node_id", 5) &&
			  column_is("node_bits", 10) &&
			  column_is("epoch", (layout.epoch_ms - INT64CONST(946684800000)) * 1000) &&
			  column_null("last_id") && column_null("last_time") && column_null("lead_ms") &&
			  column_is("lease_end", FlakeTimestamp(&layout, start_ms + FLAKE_LEASE_MS)) &&
			  column_is("issued", 0) && column_is("waits", 7) &&
			  column_is("clock_steps_back", 2) && column_is("started", 123456789),
			  "flakeid_status() before any ID: ready, its counters, no last ID",
			  "ok %d, %d checks, error %s", ok, monitor_checks, error_fmt ? error_fmt : "none");

	/* IDs of three processes; the last 300 ms ahead of the clock */
	now_ms = clock_ms();
	pg_atomic_write_u64(&shared->slots[0].issued, 1);
	pg_atomic_write_u64(&shared->slots[1].issued, 2);
	pg_atomic_write_u64(&shared->slots[2].issued, 4);
	/* memory past the slots holds no count */
	pg_atomic_write_u64(&shared->slots[3].issued, 1000);
	tick = FlakeTickOfMs(&layout, now_ms + 300);	/* its millisecond's first */
	pg_atomic_write_u64(&shared->next_tick, tick + 1);
	ok = call_status();
	tap_check(ok && column_is("issued", 7) &&
			  column_is("last_id", FlakeIdOfTick(&layout, tick, 5)) &&
			  column_is("last_time", FlakeTimestamp(&layout, now_ms + 300)) &&
			  column_is("lead_ms", 300),
			  "IDs of three processes: all counted, none past their slots, the last ID 300 ms ahead",
			  "ok %d, error %s", ok, error_fmt ? error_fmt : "none");
	/* the last tick of its millisecond */
	tick = FlakeTickOfMs(&layout, now_ms + 2) - 1;
	pg_atomic_write_u64(&shared->next_tick, tick + 1);
	ok = call_status();
	tap_check(ok && column_is("last_id", FlakeIdOfTick(&layout, tick, 5)) &&
			  column_is("last_time", FlakeTimestamp(&layout, now_ms + 1)) &&
			  column_is("lead_ms", 1),
			  "the last ID at the end of a millisecond: that millisecond",
			  "ok %d", ok);
	/* behind the clock: no lead */
	pg_atomic_write_u64(&shared->next_tick, FlakeTickOfMs(&layout, now_ms - 40));
	ok = call_status();
	tap_check(ok && column_is("lead_ms", 0) &&
			  column_is("last_time", FlakeTimestamp(&layout, now_ms - 41)),
			  "the last ID behind the clock: a lead of 0", "ok %d", ok);

	/* one ID, the first tick: shown */
	pg_atomic_write_u64(&shared->slots[1].issued, 0);
	pg_atomic_write_u64(&shared->slots[2].issued, 0);
	pg_atomic_write_u64(&shared->next_tick, 1);
	ok = call_status();
	tap_check(ok && column_is("issued", 1) && column_is("last_id", FlakeIdOfTick(&layout, 0, 5)),
			  "one ID, of the first tick: shown", "ok %d", ok);
	/* a tick taken but no ID counted yet, or counted before a restart */
	pg_atomic_write_u64(&shared->slots[0].issued, 0);
	ok = call_status();
	tap_check(ok && column_null("last_id") && column_null("lead_ms"),
			  "ticks taken, no ID counted: no last ID", "ok %d", ok);
	pg_atomic_write_u64(&shared->slots[2].issued, 3);
	pg_atomic_write_u64(&shared->next_tick, 0);
	ok = call_status();
	tap_check(ok && column_is("issued", 3) && column_null("last_id") &&
			  column_null("last_time"),
			  "IDs counted, no tick taken: no last ID", "ok %d", ok);

	/* a node id that the layout cannot hold is null */
	shared->node_id = 1024;
	ok = call_status();
	tap_check(ok && column_null("node_id"), "a node id past the layout: null", "ok %d", ok);
	shared->node_id = 1023;
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_READY, 1023));
	ok = call_status();
	tap_check(ok && column_is("node_id", 1023), "node id 1023, the layout's last: shown",
			  "ok %d", ok);

	/* each state's name */
	for (int i = 0; i < (int) lengthof(names); i++)
	{
		pg_atomic_write_u32(&shared->word, FlakeWord(gen, names[i].status, 5));
		ok = call_status();
		tap_check(ok && state_is(names[i].name), names[i].name, "ok %d", ok);
	}
	pg_atomic_write_u32(&shared->word, FlakeWord(gen, FLAKE_GEN_READY, 5));
	shared->lease_failing = true;
	ok = call_status();
	tap_check(ok && state_is("lease failing"), "lease failing", "ok %d", ok);
	in_recovery = true;
	ok = call_status();
	tap_check(ok && state_is("recovery"), "recovery, ahead of a failing lease", "ok %d", ok);
	in_recovery = false;

	/* the columns are found by name, whatever their order */
	for (int i = 0; i < (int) lengthof(status_columns); i++)
		reversed[i] = status_columns[lengthof(status_columns) - 1 - i];
	status_desc = make_desc(reversed, lengthof(status_columns));
	ok = call_status();
	tap_check(ok && state_is("lease failing") && column_is("issued", 3) &&
			  column_is("started", 123456789),
			  "the columns in another order: each value in its column", "ok %d", ok);

	/* a row type without a column, or none */
	status_desc = make_desc(status_columns, lengthof(status_columns) - 1);
	ok = call_status();
	tap_check(!ok && error_fmt != NULL &&
			  strcmp(error_fmt, "flakeid_status() has no column \"%s\"") == 0,
			  "a row type without \"started\": an error", "error %s",
			  error_fmt ? error_fmt : "none");
	status_desc = make_desc(status_columns, lengthof(status_columns));
	status_class = TYPEFUNC_SCALAR;
	ok = call_status();
	tap_check(!ok && error_fmt != NULL &&
			  strcmp(error_fmt, "return type must be a row type") == 0,
			  "a scalar return type: an error", "error %s", error_fmt ? error_fmt : "none");
	status_class = TYPEFUNC_COMPOSITE;
}

int
main(void)
{
	initial_block = my_block;
	check_singles();
	check_hot_path();
	check_ahead();
	check_clock_waits();
	check_lease_waits();
	check_standbys();
	check_standby_burst();
	check_changes();
	check_file_waits();
	check_settings();
	check_range();
	check_cache();
	check_batches();
	check_status();
	return tap_done();
}
