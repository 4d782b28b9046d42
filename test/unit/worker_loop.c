/*
 * The lease worker and how backends start and wake it (src/worker.c), at
 * a clock set here, its loop driven one wait at a time:
 * - one worker claims the generator, a second exits at once (code 0),
 *   and the first lets go of it on exit; a shutdown exits with 1, which
 *   has the postmaster start it again;
 * - a reload takes the settings in (the wait settings, the synchronous
 *   standbys' number and method, the node id) and logs a layout change;
 * - a backward step of the wall clock of more than 1 ms is counted and
 *   logged, a smaller one or a forward step is not;
 * - with synchronous standbys, each turn checks what they have, not
 *   standing by its reading while a reload waits, and wakes the calls
 *   when it rose;
 * - how long it sleeps: 5 ms while the standbys lack its lease and a call
 *   may wait for it, 10 ms while IDs are issued with synchronous
 *   standbys, 100 ms while IDs are issued, the lease fails or the
 *   generator is not ready, and otherwise until a call or a reload wakes
 *   it;
 * - a wake-up sets its latch once until it renews; without preloading, a
 *   backend launches it at most once a second, and logs why it could not;
 * - a call that may not set the generator up waits for the worker to,
 *   FLAKE_WORKER_WAIT_MS at most.
 * The generator's other files are stubs that count what the worker asks
 * of them.
 */
#include "postgres.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "port/atomics.h"

static bool swap_then(volatile pg_atomic_uint64 *ptr, uint64 *expected, uint64 newval);

#define pg_atomic_compare_exchange_u64(ptr, expected, newval) \
	swap_then(ptr, expected, newval)

#include "../../src/worker.c"
#include "tap.h"
#include "stubs.h"

/* the settings that src/worker.c reads */
int			flake_node_id = 5;
int			flake_max_lease_wait_ms = 10000;

#if PG_VERSION_NUM >= 190000
/* instr_time in ns of the system clock, not in TSC ticks */
uint64		ticks_per_ns_scaled = 0;
uint64		max_ticks_no_overflow = 0;
bool		timing_tsc_enabled = false;
#endif

volatile sig_atomic_t InterruptPending = false;
volatile sig_atomic_t ConfigReloadPending = false;
volatile sig_atomic_t ShutdownRequestPending = false;
static Latch my_latch;
static Latch other_latch;
struct Latch *MyLatch = &my_latch;
int			MyProcPid = 4242;

static const FlakeLayout layout = {INT64CONST(1735689600000), 10};


/* the clocks, in ns: the wall clock and the monotonic one */
static int64 wall_ns;
static int64 mono_ns;

int
clock_gettime(clockid_t clock, struct timespec *ts)
{
	int64		v = clock == CLOCK_REALTIME ? wall_ns : mono_ns;

	ts->tv_sec = v / 1000000000;
	ts->tv_nsec = v % 1000000000;
	return 0;
}

/* the layout's millisecond on the wall clock */
static int64
clock_ms(void)
{
	return wall_ns / 1000000 - layout.epoch_ms;
}

/* what the worker asked of the rest of the generator */
static FlakeShared shared;
static int	setups;
static int	claims;				/* lock acquisitions */
static int	exit_callbacks;
static pg_on_exit_callback exit_callback;
static int	publishes;
static int	adopted;
static int32 adopted_node;
static int	reloads;
static int	wait_setting_checks;
static int	renewals;
static uint64 first_renewed;	/* the tick the first renewal counts from */
static int	stand_bys;
static int	checks;
static int	off_clock;			/* checks at another time than the clock's */
static int	broadcasts;
static bool standbys;			/* the server has synchronous standbys */
static bool check_rose;			/* a check finds more confirmed */
static bool settings_valid;
static FlakeLayout settings_layout;
static void (*on_renew) (void); /* during a renewal */

#if PG_VERSION_NUM >= 180000
void
pqsignal(int signo, pqsigfunc func)
{
	(void) signo;
	(void) func;
}
#else
pqsigfunc
pqsignal(int signo, pqsigfunc func)
{
	(void) signo;
	(void) func;
	return NULL;
}
#endif

void
SignalHandlerForConfigReload(SIGNAL_ARGS)
{
}

void
SignalHandlerForShutdownRequest(SIGNAL_ARGS)
{
}

void
BackgroundWorkerUnblockSignals(void)
{
}

/* whether the worker connected to a database, or with a flag */
static int	connections_odd;

void
BackgroundWorkerInitializeConnection(const char *dbname, const char *username, uint32 flags)
{
	connections_odd += dbname != NULL || username != NULL || flags != 0;
}

void
ProcessInterrupts(void)
{
}

FlakeShared *
FlakeAttach(void)
{
	return &shared;
}

void
FlakeSetUp(FlakeShared *s)
{
	if (s != &shared)
		tap_bail("another generator set up");
	setups++;
}

bool
LWLockAcquire(LWLock *lock, LWLockMode mode)
{
	(void) lock;
	(void) mode;
	claims++;
	return true;
}

void
before_shmem_exit(pg_on_exit_callback function, Datum arg)
{
	(void) arg;
	exit_callbacks++;
	exit_callback = function;
}

/* proc_exit() returns to the test that ran the worker */
static sigjmp_buf *on_exit_jump;
static int	exit_code;

void
proc_exit(int code)
{
	exit_code = code;
	if (on_exit_jump == NULL)
		tap_bail("the worker exited outside a run");
	siglongjmp(*on_exit_jump, 1);
}

void
FlakeConfirmPublishConfig(FlakeConfirm *c)
{
	if (c != &shared.confirm)
		tap_bail("another confirmation published");
	publishes++;
}

void
FlakeAdoptNode(FlakeShared *s, int32 node_id)
{
	(void) s;
	adopted++;
	adopted_node = node_id;
}

void
ProcessConfigFile(GucContext context)
{
	if (context != PGC_SIGHUP)
		tap_bail("the configuration read in another context");
	reloads++;
}

void
FlakeCheckWaitSettings(void)
{
	wait_setting_checks++;
}

bool
FlakeConfiguredLayout(FlakeLayout *out, const char **bad)
{
	*out = settings_layout;
	if (bad != NULL)
		*bad = settings_valid ? NULL : "flakeid.node_bits";
	return settings_valid;
}

void
FlakeLeaseRenew(FlakeShared *s, uint64 *renewed_tick)
{
	(void) s;
	if (++renewals == 1)
		first_renewed = *renewed_tick;
	if (on_renew != NULL)
		on_renew();
}

bool
FlakeStandbyConfirms(void)
{
	return standbys;
}

uint32
FlakeSnapshot(FlakeShared *s, FlakeLayout *out)
{
	*out = s->layout;
	return pg_atomic_read_u32(&s->word);
}

void
FlakeConfirmStandBy(FlakeConfirm *c, int64 now)
{
	(void) c;
	stand_bys++;
	off_clock += now != clock_ms();
}

bool
FlakeConfirmCheck(FlakeConfirm *c, int64 now)
{
	(void) c;
	checks++;
	off_clock += now != clock_ms();
	return check_rose;
}

void
ConditionVariableBroadcast(ConditionVariable *cv)
{
	if (cv != &shared.lease_cv)
		tap_bail("another condition variable woken");
	broadcasts++;
}

/*
 * The worker's waits: what it asked for, and what happens meanwhile (the
 * script, given the wait's number), which also says whether the latch was
 * set; the shutdown comes at the wait stop_at.
 */
#define MAX_WAITS 2048
static int	waits;
static long naps[MAX_WAITS];
static uint32 nap_events[MAX_WAITS];
static int	nap_flags[MAX_WAITS];
static int	stop_at;
static bool (*script) (int n);
static int	resets;

int
WaitLatch(Latch *latch, int wakeEvents, long timeout, uint32 wait_event_info)
{
	bool		set = false;

	if (latch != MyLatch)
		tap_bail("a wait on another latch");
	if (waits < MAX_WAITS)
	{
		naps[waits] = timeout;
		nap_events[waits] = wait_event_info;
		nap_flags[waits] = wakeEvents;
	}
	waits++;
	if (script != NULL)
		set = script(waits);
	if (!set)
	{
		mono_ns += (int64) timeout * 1000000;
		wall_ns += (int64) timeout * 1000000;
	}
	if (waits == stop_at)
		ShutdownRequestPending = true;
	if (waits > MAX_WAITS)
		tap_bail("the worker waited too often");
	return set ? WL_LATCH_SET : WL_TIMEOUT;
}

void
ResetLatch(Latch *latch)
{
	if (latch != MyLatch)
		tap_bail("another latch reset");
	resets++;
}

static int	latch_sets;

void
SetLatch(Latch *latch)
{
	if (latch != shared.worker_latch)
		tap_bail("a latch set that is not the worker's");
	latch_sets++;
}

/* how backends start the worker */
static bool preloaded;
static bool may_set_up;
static bool register_fails;
static BgwHandleStatus startup_status;
static BackgroundWorker registered;
static int	registrations;
static int	dynamic_registrations;
static int	startup_waits;
static void (*on_startup) (void);	/* while a backend waits for the start */
static void (*other_swap) (void);	/* another backend, before a swap */

bool
FlakeWorkerStartsWithServer(void)
{
	return preloaded;
}

bool
FlakeMaySetUp(void)
{
	return may_set_up;
}

void
RegisterBackgroundWorker(BackgroundWorker *worker)
{
	registrations++;
	registered = *worker;
}

bool
RegisterDynamicBackgroundWorker(BackgroundWorker *worker, BackgroundWorkerHandle **handle)
{
	dynamic_registrations++;
	registered = *worker;
	*handle = (BackgroundWorkerHandle *) &registered;
	return !register_fails;
}

BgwHandleStatus
WaitForBackgroundWorkerStartup(BackgroundWorkerHandle *handle, pid_t *pid)
{
	if (handle != (BackgroundWorkerHandle *) &registered)
		tap_bail("a wait for another worker");
	startup_waits++;
	*pid = 77;
	if (on_startup != NULL)
		on_startup();
	return startup_status;
}

static bool
swap_then(volatile pg_atomic_uint64 *ptr, uint64 *expected, uint64 newval)
{
	if (other_swap != NULL)
	{
		void		(*step) (void) = other_swap;

		other_swap = NULL;
		step();
	}
	return (pg_atomic_compare_exchange_u64) (ptr, expected, newval);
}

/* a generator ready with node 5, no worker, no call */
static void
set_up(void)
{
	memset(&shared, 0, sizeof(shared));
	shared.layout = layout;
	shared.configured = layout;
	shared.configured_valid = true;
	pg_atomic_init_u32(&shared.word, FlakeWord(1, FLAKE_GEN_READY, 5));
	pg_atomic_init_u32(&shared.renew_asked, 0);
	pg_atomic_init_u64(&shared.next_tick, 1000);
	pg_atomic_init_u64(&shared.lease_end, 0);
	pg_atomic_init_u64(&shared.clock_steps_back, 0);
	pg_atomic_init_u64(&shared.worker_launched_at, 0);
	pg_atomic_init_u64(&shared.confirm.sync_end, 0);
	wall_ns = (layout.epoch_ms + INT64CONST(100000000)) * 1000000;
	mono_ns = INT64CONST(5000000000000);
	flake_node_id = 5;
	flake_max_lease_wait_ms = 10000;
	ConfigReloadPending = false;
	ShutdownRequestPending = false;
	setups = claims = exit_callbacks = publishes = adopted = reloads = connections_odd = 0;
	wait_setting_checks = renewals = stand_bys = checks = broadcasts = off_clock = 0;
	exit_callback = NULL;
	adopted_node = -1;
	first_renewed = 0;
	standbys = false;
	check_rose = false;
	settings_valid = true;
	settings_layout = layout;
	on_renew = NULL;
	waits = 0;
	stop_at = 1;
	script = NULL;
	resets = 0;
	latch_sets = 0;
	preloaded = false;
	may_set_up = false;
	register_fails = false;
	startup_status = BGWH_STARTED;
	memset(&registered, 0, sizeof(registered));
	registrations = dynamic_registrations = startup_waits = 0;
	on_startup = NULL;
	other_swap = NULL;
	stub_nmessages = 0;
}

/* the worker run until it exits; its exit code */
static int
run_worker(void)
{
	sigjmp_buf	jump;

	on_exit_jump = &jump;
	if (sigsetjmp(jump, 0) == 0)
	{
		flakeid_lease_worker_main((Datum) 0);
		tap_bail("the worker returned");
	}
	on_exit_jump = NULL;
	return exit_code;
}

/* the message of the worker's shutdown, at DEBUG1 */
int
errmsg_internal(const char *fmt,...)
{
	if (stub_nmessages > 0 && stub_nmessages <= STUB_MESSAGES)
		stub_format[stub_nmessages - 1] = fmt;
	return 0;
}

/* whether a message of a level with a format that begins so was logged */
static bool
logged(int elevel, const char *start)
{
	for (int i = 0; i < stub_nmessages && i < STUB_MESSAGES; i++)
		if (stub_level[i] == elevel && stub_message_is(i, start))
			return true;
	return false;
}

static void
check_claim(void)
{
	int			code;

	set_up();
	stop_at = 1;
	code = run_worker();
	tap_check(code == 1 && setups == 1 && exit_callbacks == 1 &&
			  shared.worker_latch == MyLatch && publishes == 1 && adopted == 1 &&
			  adopted_node == 5 && renewals == 1 && waits == 1 && resets == 1 &&
			  connections_odd == 0,
			  "the first worker connects to no database, claims the generator, sets it up, "
			  "takes the settings, renews; a shutdown exits with 1",
			  "code %d, %d set-ups, %d callbacks, latch %s, %d publishes, node %d, %d renewals, %d waits",
			  code, setups, exit_callbacks, shared.worker_latch == MyLatch ? "mine" : "not mine",
			  publishes, adopted_node, renewals, waits);
	tap_check(first_renewed == 1000,
			  "its first renewal counts from the next tick at its start", "%llu",
			  (unsigned long long) first_renewed);
	pg_atomic_write_u64(&shared.worker_launched_at, 12345);
	if (exit_callback != NULL)
		exit_callback(0, (Datum) 0);
	tap_check(exit_callback != NULL && shared.worker_latch == NULL &&
			  pg_atomic_read_u64(&shared.worker_launched_at) == 0,
			  "on exit it lets go of the generator and of the launch time", "latch %p",
			  (void *) shared.worker_latch);

	/* another worker's latch: this one exits at once, with 0 */
	set_up();
	shared.worker_latch = &other_latch;
	code = run_worker();
	tap_check(code == 0 && waits == 0 && exit_callbacks == 0 && renewals == 0 &&
			  shared.worker_latch == &other_latch,
			  "a second worker exits at once with 0, the first's latch kept",
			  "code %d, %d waits, %d callbacks", code, waits, exit_callbacks);

	/* a worker whose latch another one took meanwhile leaves it */
	set_up();
	code = run_worker();
	shared.worker_latch = &other_latch;
	pg_atomic_write_u64(&shared.worker_launched_at, 12345);
	if (exit_callback != NULL)
		exit_callback(0, (Datum) 0);
	tap_check(shared.worker_latch == &other_latch &&
			  pg_atomic_read_u64(&shared.worker_launched_at) == 0,
			  "on exit it leaves another worker's latch", "latch %p",
			  (void *) shared.worker_latch);
}

/* a reload comes during the first wait; a different node id with it */
static bool
reload_at_1(int n)
{
	if (n == 1)
	{
		ConfigReloadPending = true;
		flake_node_id = 7;
		return true;
	}
	return false;
}

static void
check_reload(void)
{
	set_up();
	script = reload_at_1;
	stop_at = 2;
	(void) run_worker();
	tap_check(reloads == 1 && wait_setting_checks == 1 && publishes == 2 && adopted == 2 &&
			  adopted_node == 7 && !ConfigReloadPending && stub_count(LOG) == 0,
			  "a reload: the settings and node id taken in, nothing logged",
			  "%d reloads, %d checks, %d publishes, node %d, pending %d, %d messages",
			  reloads, wait_setting_checks, publishes, adopted_node, (int) ConfigReloadPending,
			  stub_nmessages);

	set_up();
	script = reload_at_1;
	stop_at = 2;
	settings_layout.node_bits = 12;
	(void) run_worker();
	tap_check(reloads == 1 && stub_count(LOG) == 1 &&
			  logged(LOG, "flakeid layout settings changed; they take effect at the next restart"),
			  "a reload that changes the layout: logged once", "%d messages", stub_nmessages);

	set_up();
	script = reload_at_1;
	stop_at = 2;
	settings_layout.node_bits = 12;
	settings_valid = false;
	(void) run_worker();
	tap_check(reloads == 1 && stub_count(LOG) == 0,
			  "a reload to an invalid layout setting: no change logged", "%d messages",
			  stub_nmessages);

	set_up();
	script = reload_at_1;
	stop_at = 2;
	settings_layout.node_bits = 12;
	shared.configured_valid = false;
	(void) run_worker();
	tap_check(reloads == 1 && stub_count(LOG) == 0,
			  "a reload where the server started with an invalid setting: no change logged",
			  "%d messages", stub_nmessages);
}

/* the wall clock steps: back 1 ms, back 1 ms and 1 ns, on 5 s, back an hour */
static bool
steps(int n)
{
	static const int64 step[] = {0, -1000000, -1000001, INT64CONST(5000000000),
	-INT64CONST(3600000000000)};

	if (n < (int) lengthof(step))
		wall_ns += step[n];
	return false;
}

static void
check_clock_steps(void)
{
	set_up();
	script = steps;
	stop_at = 5;
	(void) run_worker();
	tap_check(pg_atomic_read_u64(&shared.clock_steps_back) == 2 && stub_count(LOG) == 2 &&
			  strcmp(stub_text[0], "system clock moved backwards by 1 ms") == 0 &&
			  strcmp(stub_text[1], "system clock moved backwards by 3600000 ms") == 0,
			  "clock steps: back by over 1 ms counted and logged, 1 ms and forward not",
			  "%llu steps, %d lines: %s / %s",
			  (unsigned long long) pg_atomic_read_u64(&shared.clock_steps_back),
			  stub_count(LOG), stub_nmessages > 0 ? stub_text[0] : "",
			  stub_nmessages > 1 ? stub_text[1] : "");
}

/* a reload arrives while the worker renews, in its second turn */
static void
reload_in_renewal(void)
{
	if (renewals == 2)
		ConfigReloadPending = true;
}

static void
check_confirm(void)
{
	set_up();
	stop_at = 3;
	(void) run_worker();
	tap_check(stand_bys == 0 && checks == 0 && broadcasts == 0,
			  "no synchronous standbys: none checked", "%d checks", checks);

	set_up();
	standbys = true;
	stop_at = 3;
	(void) run_worker();
	tap_check(stand_bys == 3 && checks == 3 && broadcasts == 0 && off_clock == 0,
			  "synchronous standbys: checked each turn at the clock, no one woken",
			  "%d stand-bys, %d checks, %d broadcasts, %d off the clock", stand_bys,
			  checks, broadcasts, off_clock);

	set_up();
	standbys = true;
	check_rose = true;
	stop_at = 2;
	(void) run_worker();
	tap_check(checks == 2 && broadcasts == 2,
			  "the standbys have more: the calls woken each time", "%d broadcasts", broadcasts);

	set_up();
	standbys = true;
	on_renew = reload_in_renewal;
	stop_at = 3;
	(void) run_worker();
	tap_check(checks == 3 && stand_bys == 2 && reloads == 1,
			  "a reload during a renewal: that turn checks but does not stand by its reading",
			  "%d checks, %d stand-bys, %d reloads", checks, stand_bys, reloads);
}

/*
 * How long each turn sleeps.  The first turn counts as woken (the worker
 * starts so) and finds no new ID: idle.  IDs issued during the first two
 * waits make the next two turns look sooner; the turn after is idle again.
 */
static bool
issue_during(int n)
{
	/* IDs issued during the first and second waits */
	if (n == 1 || n == 2)
		pg_atomic_fetch_add_u64(&shared.next_tick, 10);
	return false;
}

static void
check_naps(void)
{
	set_up();
	stop_at = 1;
	(void) run_worker();
	tap_check(naps[0] == FLAKE_WORKER_IDLE_NAPTIME_MS && nap_events[0] == PG_WAIT_EXTENSION &&
			  nap_flags[0] == (WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH),
			  "idle: it sleeps until woken", "%ld ms, flags %d", naps[0], nap_flags[0]);

	set_up();
	script = issue_during;
	stop_at = 3;
	(void) run_worker();
	tap_check(naps[0] == FLAKE_WORKER_IDLE_NAPTIME_MS && naps[1] == FLAKE_WORKER_NAPTIME_MS &&
			  naps[2] == FLAKE_WORKER_NAPTIME_MS,
			  "IDs issued since the last turn: 100 ms", "%ld, %ld, %ld", naps[0], naps[1], naps[2]);

	set_up();
	script = issue_during;
	standbys = true;
	pg_atomic_write_u64(&shared.lease_end, 500);
	pg_atomic_write_u64(&shared.confirm.sync_end, 500);
	stop_at = 4;
	(void) run_worker();
	tap_check(naps[0] == FLAKE_WORKER_IDLE_NAPTIME_MS && naps[1] == FLAKE_WORKER_SYNC_NAPTIME_MS &&
			  naps[2] == FLAKE_WORKER_SYNC_NAPTIME_MS && naps[3] == FLAKE_WORKER_IDLE_NAPTIME_MS,
			  "IDs issued with synchronous standbys that have the lease: 10 ms, then idle",
			  "%ld, %ld, %ld, %ld", naps[0], naps[1], naps[2], naps[3]);

	set_up();
	shared.lease_failing = true;
	stop_at = 1;
	(void) run_worker();
	tap_check(naps[0] == FLAKE_WORKER_NAPTIME_MS, "the lease failing: 100 ms", "%ld", naps[0]);

	set_up();
	pg_atomic_write_u32(&shared.word, FlakeWord(1, FLAKE_GEN_FILE_BEHIND, 5));
	stop_at = 1;
	(void) run_worker();
	tap_check(naps[0] == FLAKE_WORKER_NAPTIME_MS, "the generator not ready: 100 ms", "%ld",
			  naps[0]);
}

/*
 * Standbys that lack the lease: the worker looks every 5 ms while a call
 * may wait (flakeid.max_lease_wait since it was woken or IDs were issued),
 * and not after.
 */
static bool
no_news(int n)
{
	(void) n;
	return false;
}

static bool
woken_at_3(int n)
{
	return n == 3;
}

/* the fourth wait ends 1 ns short of its 5 ms */
static bool
short_4th(int n)
{
	if (n == 4)
		mono_ns -= 1;
	return false;
}

static void
check_unconfirmed(void)
{
	int			polls;
	int			first_idle;

	set_up();
	standbys = true;
	pg_atomic_write_u64(&shared.lease_end, 500);
	pg_atomic_write_u64(&shared.confirm.sync_end, 499);
	flake_max_lease_wait_ms = 20;
	script = no_news;
	stop_at = 8;
	(void) run_worker();
	/* woken at the start: 20 ms of 5 ms looks (0, 5, 10, 15), then idle */
	polls = 0;
	while (polls < waits && naps[polls] == FLAKE_WORKER_CONFIRM_POLL_MS &&
		   nap_events[polls] == WAIT_EVENT_SYNC_REP)
		polls++;
	tap_check(polls == 4 && naps[4] == FLAKE_WORKER_IDLE_NAPTIME_MS &&
			  nap_events[4] == WAIT_EVENT_SYNC_REP,
			  "the standbys lack the lease: 5 ms looks for flakeid.max_lease_wait, then idle",
			  "%d looks, then %ld ms", polls, naps[polls]);

	set_up();
	standbys = true;
	pg_atomic_write_u64(&shared.lease_end, 500);
	pg_atomic_write_u64(&shared.confirm.sync_end, 499);
	flake_max_lease_wait_ms = 20;
	script = short_4th;
	stop_at = 8;
	(void) run_worker();
	polls = 0;
	while (polls < waits && naps[polls] == FLAKE_WORKER_CONFIRM_POLL_MS)
		polls++;
	tap_check(polls == 5, "1 ns before flakeid.max_lease_wait is over: it looks again",
			  "%d looks", polls);

	set_up();
	standbys = true;
	pg_atomic_write_u64(&shared.lease_end, 500);
	pg_atomic_write_u64(&shared.confirm.sync_end, 499);
	flake_max_lease_wait_ms = 20;
	script = woken_at_3;
	stop_at = 10;
	(void) run_worker();
	first_idle = 0;
	while (first_idle < waits && naps[first_idle] == FLAKE_WORKER_CONFIRM_POLL_MS)
		first_idle++;
	/* looks at 0, 5, 10; woken at once; 20 ms more: 10, 15, 20, 25; idle */
	tap_check(first_idle == 7,
			  "woken while the standbys lack the lease: 5 ms looks for another flakeid.max_lease_wait",
			  "%d looks", first_idle);

	set_up();
	standbys = true;
	pg_atomic_write_u64(&shared.lease_end, 500);
	pg_atomic_write_u64(&shared.confirm.sync_end, 500);
	stop_at = 1;
	(void) run_worker();
	tap_check(naps[0] == FLAKE_WORKER_IDLE_NAPTIME_MS && nap_events[0] == PG_WAIT_EXTENSION,
			  "the standbys have all of the lease: idle, not waiting for them", "%ld ms",
			  naps[0]);
}

/* a backend's wake-up, and a launch where none runs */
static void
another_launch(void)
{
	pg_atomic_write_u64(&shared.worker_launched_at, (uint64) (wall_ns / 1000000));
}

static void
worker_appears(void)
{
	shared.worker_latch = &other_latch;
}

static void
check_wake(void)
{
	int64		now;

	set_up();
	shared.worker_latch = &other_latch;
	FlakeWakeWorker(&shared);
	FlakeWakeWorker(&shared);
	tap_check(latch_sets == 1 && pg_atomic_read_u32(&shared.renew_asked) == 1 &&
			  dynamic_registrations == 0,
			  "two wake-ups before a renewal: the latch set once", "%d sets", latch_sets);

	set_up();
	shared.worker_latch = &other_latch;
	pg_atomic_write_u32(&shared.renew_asked, 1);
	FlakeWakeWorker(&shared);
	tap_check(latch_sets == 0, "a renewal already asked for: the latch not set again",
			  "%d sets", latch_sets);

	set_up();
	preloaded = true;
	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 0 && latch_sets == 0,
			  "preloaded, no worker: none launched (the postmaster starts it)",
			  "%d registrations", dynamic_registrations);

	set_up();
	now = wall_ns / 1000000;
	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 1 && startup_waits == 1 &&
			  registered.bgw_start_time == BgWorkerStart_ConsistentState &&
			  registered.bgw_restart_time == BGW_NEVER_RESTART &&
			  registered.bgw_notify_pid == MyProcPid &&
			  registered.bgw_flags == (BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION) &&
			  strcmp(registered.bgw_library_name, "flakeid") == 0 &&
			  strcmp(registered.bgw_function_name, "flakeid_lease_worker_main") == 0 &&
			  strcmp(registered.bgw_type, "flakeid lease worker") == 0 &&
			  (int64) pg_atomic_read_u64(&shared.worker_launched_at) == now &&
			  stub_nmessages == 0,
			  "not preloaded, no worker: launched once the server is consistent, never restarted, "
			  "the launch time kept",
			  "%d registrations, start %d, restart %d, at %llu", dynamic_registrations,
			  (int) registered.bgw_start_time, registered.bgw_restart_time,
			  (unsigned long long) pg_atomic_read_u64(&shared.worker_launched_at));

	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 1, "in the launch's millisecond: none again", "%d",
			  dynamic_registrations);
	wall_ns += INT64CONST(999) * 1000000;
	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 1, "999 ms after a launch: none again", "%d",
			  dynamic_registrations);
	wall_ns += 1000000;
	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 2 &&
			  (int64) pg_atomic_read_u64(&shared.worker_launched_at) == now + 1000,
			  "1000 ms after a launch: launched again", "%d", dynamic_registrations);
	wall_ns -= INT64CONST(5000) * 1000000;
	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 3,
			  "the clock set back before the last launch: launched again", "%d",
			  dynamic_registrations);

	set_up();
	other_swap = another_launch;
	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 0,
			  "another backend launched it just before: none launched", "%d",
			  dynamic_registrations);

	set_up();
	register_fails = true;
	FlakeWakeWorker(&shared);
	tap_check(dynamic_registrations == 1 && startup_waits == 0 && stub_count(LOG) == 1 &&
			  logged(LOG, "could not register the flakeid lease worker"),
			  "no background worker slot: logged, no wait", "%d waits, %d lines", startup_waits,
			  stub_count(LOG));

	set_up();
	startup_status = BGWH_STOPPED;
	FlakeWakeWorker(&shared);
	tap_check(stub_count(LOG) == 1 && logged(LOG, "the flakeid lease worker could not be started"),
			  "the worker stopped before it ran: logged", "%d lines", stub_count(LOG));

	set_up();
	startup_status = BGWH_STOPPED;
	on_startup = worker_appears;
	FlakeWakeWorker(&shared);
	tap_check(stub_count(LOG) == 0,
			  "it stopped as a second worker, another one running: nothing logged", "%d lines",
			  stub_count(LOG));

	set_up();
	FlakeRegisterLeaseWorker();
	tap_check(registrations == 1 && registered.bgw_start_time == BgWorkerStart_RecoveryFinished &&
			  registered.bgw_restart_time == FLAKE_WORKER_RESTART_S &&
			  registered.bgw_notify_pid == 0 &&
			  strcmp(registered.bgw_name, "flakeid lease worker") == 0,
			  "preloaded: started with the server once recovery is over, restarted after 1 s",
			  "start %d, restart %d", (int) registered.bgw_start_time,
			  registered.bgw_restart_time);
}

/* the worker sets the generator up while a call waits, at the nth wait */
static int	set_up_at;

static bool
worker_sets_up(int n)
{
	if (n == set_up_at)
		pg_atomic_write_u32(&shared.word, FlakeWord(1, FLAKE_GEN_READY, 5));
	return false;
}

static void
check_ensure_set_up(void)
{
	sigjmp_buf	jump;
	bool		failed;

	set_up();
	may_set_up = true;
	pg_atomic_write_u32(&shared.word, FlakeWord(0, FLAKE_GEN_NOT_SET_UP, 0));
	FlakeEnsureSetUp(&shared);
	tap_check(setups == 1 && waits == 0 && dynamic_registrations == 0,
			  "a process that may: sets the generator up itself", "%d set-ups, %d waits",
			  setups, waits);

	set_up();
	shared.worker_latch = &other_latch;
	pg_atomic_write_u32(&shared.word, FlakeWord(0, FLAKE_GEN_NOT_SET_UP, 0));
	script = worker_sets_up;
	set_up_at = 3;
	stop_at = 0;
	FlakeEnsureSetUp(&shared);
	tap_check(setups == 0 && waits == 3 && latch_sets == 1 && naps[0] == 10,
			  "a process that may not: wakes the worker, waits 10 ms at a time until it did",
			  "%d set-ups, %d waits, %d sets", setups, waits, latch_sets);

	set_up();
	shared.worker_latch = &other_latch;
	pg_atomic_write_u32(&shared.word, FlakeWord(0, FLAKE_GEN_NOT_SET_UP, 0));
	script = no_news;
	stop_at = 0;
	PG_exception_stack = &jump;
	failed = sigsetjmp(jump, 0) != 0;
	if (!failed)
		FlakeEnsureSetUp(&shared);
	PG_exception_stack = NULL;
	/* 10 s of 10 ms waits, the error at the first check past 10 s */
	tap_check(failed && stub_error_code == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE &&
			  stub_message_is(stub_nmessages - 1,
							  "timed out waiting for the flakeid lease worker to set up the generator") &&
			  waits == FLAKE_WORKER_WAIT_MS / 10 + 1,
			  "the worker never sets it up: an error after FLAKE_WORKER_WAIT_MS",
			  "failed %d, code %d, %d waits", failed, stub_error_code, waits);
}

int
main(void)
{
	check_claim();
	check_reload();
	check_clock_steps();
	check_confirm();
	check_naps();
	check_unconfirmed();
	check_wake();
	check_ensure_set_up();
	return tap_done();
}
