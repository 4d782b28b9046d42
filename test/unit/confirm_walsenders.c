/*
 * Which standbys the confirmation counts (FlakeConfirmCheck() in
 * src/confirm.c), read from a WAL sender array made here: only the
 * max_wal_senders slots of the array, never the memory on either side of
 * it, which is filled with what a streaming synchronous standby that has
 * every lease record looks like; only streaming standbys with a priority;
 * FIRST n among the n of highest priority, ANY n the n-th highest flush
 * position; fewer connected than a commit waits for confirm nothing; a
 * reading of the worker's that is not trusted asks every named standby;
 * of the lease records, only those flushed to their end count, and of
 * the dropped ones only the newest; and a call checks again only once the
 * last check is FLAKE_CONFIRM_FRESH_MS old, and then no call takes the old
 * end for a young one while another checks.
 * The lock and memory functions of the server are stubs: one process, in
 * which another process's step can be run at a chosen point (when the
 * lock is taken, or after the first read or write of the confirmed end
 * or the check's time).  The barriers between those reads and between
 * those writes, which keep their order on other CPUs, no test in one
 * process can miss.
 */
#include "postgres.h"

#include <stdio.h>
#include <time.h>

#include "port/atomics.h"

/* another process's step, run once when this one next takes the lock */
static void (*other_at_lock) (void) = NULL;

/* ... or once after this one's next read of the confirmed end or time */
static void (*other_at_read) (void) = NULL;

/* ... or once after this one's next write of either */
static void (*other_at_write) (void) = NULL;

/* ... or after every write of this one's */
static void (*other_at_every_write) (void) = NULL;

/* the time-stamp counter at the last read of the precise wall clock */
static uint64 cycles_at_clock;
static int	clock_gettime_counted(clockid_t clock, struct timespec *ts);

#define clock_gettime(clock, ts) clock_gettime_counted(clock, ts)

static uint64 read_then_other(volatile pg_atomic_uint64 *ptr);
static void write_then_other(volatile pg_atomic_uint64 *ptr, uint64 value);

#define pg_atomic_read_u64(ptr) read_then_other(ptr)
#define pg_atomic_write_u64(ptr, value) write_then_other(ptr, value)

/* the kernel's clock source, as a file this test writes */
static char clocksource_file[64];

#define FLAKE_CLOCKSOURCE_FILE clocksource_file

#include "../../src/confirm.c"
#include "tap.h"
#include "stubs.h"

WalSndCtlData *WalSndCtl = NULL;
int			max_wal_senders = 0;
SyncRepConfigData *SyncRepConfig = NULL;
MemoryContext TopMemoryContext = NULL;

static FlakeConfirm confirm;

/* Run a step of another process, once. */
static void
run_other(void (**step) (void))
{
	void		(*run) (void) = *step;

	*step = NULL;
	if (run)
		run();
}

static uint64
read_then_other(volatile pg_atomic_uint64 *ptr)
{
	uint64		value = (pg_atomic_read_u64) (ptr);

	if (ptr == &confirm.sync_end || ptr == &confirm.checked ||
		ptr == &confirm.checked_cycles)
		run_other(&other_at_read);
	return value;
}

static void
write_then_other(volatile pg_atomic_uint64 *ptr, uint64 value)
{
	(pg_atomic_write_u64) (ptr, value);
	if (other_at_every_write)
		other_at_every_write();
	if (ptr == &confirm.sync_end || ptr == &confirm.checked ||
		ptr == &confirm.checked_cycles)
		run_other(&other_at_write);
}

/* where set, what the precise wall clock reads */
static const struct timespec *wall_clock_set = NULL;

static int
clock_gettime_counted(clockid_t clock, struct timespec *ts)
{
	if (clock == CLOCK_REALTIME)
	{
		cycles_at_clock = FlakeCycles();
		if (wall_clock_set)
		{
			*ts = *wall_clock_set;
			return 0;
		}
	}
	return (clock_gettime) (clock, ts);
}

bool
LWLockAcquire(LWLock *lock, LWLockMode mode)
{
	(void) lock;
	(void) mode;
	run_other(&other_at_lock);
	return true;
}

/* how many next LWLockAcquireOrWait() calls find the lock held, and wait */
static int	lock_held = 0;

bool
LWLockAcquireOrWait(LWLock *lock, LWLockMode mode)
{
	if (lock_held > 0)
	{
		lock_held--;
		return false;
	}
	return LWLockAcquire(lock, mode);
}

void *
MemoryContextAlloc(MemoryContext context, Size size)
{
	(void) context;
	return calloc(1, size);
}

int
s_lock(volatile slock_t *lock, const char *file, int line, const char *func)
{
	(void) lock;
	(void) file;
	(void) line;
	(void) func;
	tap_bail("a WAL sender's spinlock was held");
}

#define SLOTS	8

static WalSnd *before_array;
static WalSnd *after_array;
static int64 now = 100000;

static void
expect(int64 got, int64 want, const char *what)
{
	tap_check(got == want, what, "confirmed end %lld, expected %lld",
			  (long long) got, (long long) want);
}

static void
expect_bool(bool got, bool want, const char *what)
{
	tap_check(got == want, what, "got %s", got ? "true" : "false");
}

/* A slot as a walsender in the given state fills it. */
static void
set_slot(WalSnd *w, pid_t pid, WalSndState state, int priority, XLogRecPtr flush)
{
	SpinLockInit(&w->mutex);
	w->pid = pid;
	w->state = state;
	w->sync_standby_priority = priority;
	w->flush = flush;
}

/* slot i: a streaming standby of this priority, flushed this far */
static void
streaming(int i, int priority, XLogRecPtr flush)
{
	set_slot(&WalSndCtl->walsnds[i], 100 + i, WALSNDSTATE_STREAMING, priority, flush);
}

/* slot i: no WAL sender */
static void
gone(int i)
{
	set_slot(&WalSndCtl->walsnds[i], 0, WALSNDSTATE_STARTUP, 0, InvalidXLogRecPtr);
}

/* every slot: a streaming standby of this priority, flushed this far */
static void
all_streaming(int priority, XLogRecPtr flush)
{
	for (int i = 0; i < SLOTS; i++)
		streaming(i, priority, flush);
}

static void
clear_slots(void)
{
	for (int i = 0; i < SLOTS; i++)
		gone(i);
}

/* The worker read synchronous_standby_names as num_sync and method. */
static void
configure(int num_sync, int method)
{
	SyncRepConfig->num_sync = num_sync;
	SyncRepConfig->syncrep_method = method;
	FlakeConfirmPublishConfig(&confirm);
	FlakeConfirmStandBy(&confirm, now);
}

static int64
checked_end(void)
{
	now++;
	(void) FlakeConfirmCheck(&confirm, now);
	return FlakeConfirmedEnd(&confirm);
}

/*
 * The one standby catches up, a check finds it so, and it falls behind
 * again once that check is old.
 */
static void
behind_again(void)
{
	streaming(1, 1, 800);
	expect(checked_end(), 8000, "the standby caught up again");
	now += FLAKE_CONFIRM_FRESH_MS;
	streaming(1, 1, 600);
}

/*
 * The same on the time-stamp counter: the check that found the standby
 * caught up is made older than fresh_cycles by its stamp.
 */
static void
behind_again_by_counter(const char *what)
{
	streaming(1, 1, 800);
	expect(checked_end(), 8000, what);
	pg_atomic_write_u64(&confirm.checked_cycles,
						FlakeCycles() - 2 * confirm.fresh_cycles);
	streaming(1, 1, 600);
}

/* another call's answer, asked at now for 7500 */
static bool other_covers;

static void
other_call(void)
{
	other_covers = FlakeConfirmedCovers(&confirm, 7500, now);
}

static void
other_check(void)
{
	(void) FlakeConfirmCheck(&confirm, now);
}

/* the same, timed on the time-stamp counter */
static void
other_call_by_cycles(void)
{
	other_covers = FlakeConfirmedCoversByCycles(&confirm, 7500, FlakeCycles());
}

/*
 * A call at each write of a check: whether it finds the check young by
 * that check's stamp (written_stamp unlike old_stamp) with the wall clock
 * of the check before (old_clock).
 */
static uint64 old_stamp;
static int64 old_clock;
static int	calls_at_writes;
static int	calls_mixed;

static void
call_at_write(void)
{
	uint64		stamp = (pg_atomic_read_u64) (&confirm.checked_cycles);

	calls_at_writes++;
	if (stamp != old_stamp && FlakeConfirmedClock(&confirm, stamp) == old_clock)
		calls_mixed++;
}

/* ms since 1970 of a wall clock reading */
static int64
unix_ms(const struct timespec *ts)
{
	return (int64) ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

/* Say which clock source the kernel's clocks run on: NULL for none. */
static void
set_clocksource(const char *source)
{
	FILE	   *f;

	if (source == NULL)
	{
		(void) unlink(clocksource_file);
		return;
	}
	f = fopen(clocksource_file, "w");
	if (f == NULL || fputs(source, f) < 0 || fclose(f) != 0)
		tap_bail("cannot write the clock source file");
}

/* The counter's stamp of a check made now, and whether it lies within the counter's reads around it. */
static uint64
check_cycles(bool *within)
{
	uint64		before = FlakeCycles();
	uint64		stamp;

	(void) checked_end();
	stamp = pg_atomic_read_u64(&confirm.checked_cycles);
	*within = stamp >= before && stamp <= FlakeCycles();
	return stamp;
}

/*
 * Checks timed on the time-stamp counter: only where the kernel's clocks
 * run on it, as it says at the check; its rate as the generator was made;
 * and the same order of the reads and the writes as on the clock.
 */
static void
check_counter(void)
{
	uint64		cycles = FlakeCycles();
	double		rate;
	uint64		c0;
	struct timespec t0;
	struct timespec t1;
	bool		within;
	uint64		stamp;
	int64		clock_ms;

	if (cycles == 0)
	{
		tap_check(confirm.fresh_cycles == 0, "no time-stamp counter: no rate for one",
				  "fresh_cycles %llu", (unsigned long long) confirm.fresh_cycles);
		return;
	}

	/*
	 * The rate, against the counter's cycles in 2 ms measured the other way
	 * round (the clock's reads within the counter's): never above those.
	 */
	c0 = FlakeCycles();
	clock_gettime(CLOCK_MONOTONIC_RAW, &t0);
	usleep(20000);
	clock_gettime(CLOCK_MONOTONIC_RAW, &t1);
	rate = (double) (FlakeCycles() - c0) /
		((double) (t1.tv_sec - t0.tv_sec) * 1e9 + (double) (t1.tv_nsec - t0.tv_nsec));
	tap_check(confirm.fresh_cycles < rate * FLAKE_CONFIRM_FRESH_MS * 1e6 &&
			  confirm.fresh_cycles > rate * FLAKE_CONFIRM_FRESH_MS * 1e6 / 3,
			  "the counter's cycles that a check counts for: fewer than in FLAKE_CONFIRM_FRESH_MS",
			  "fresh_cycles %llu, %.0f cycles in %d ms", (unsigned long long) confirm.fresh_cycles,
			  rate * FLAKE_CONFIRM_FRESH_MS * 1e6, FLAKE_CONFIRM_FRESH_MS);

	set_clocksource(NULL);
	tap_check(check_cycles(&within) == 0, "no clock source file: a check is not timed on the counter",
			  "stamp %llu", (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));
	set_clocksource("tsc\n");
	tap_check(check_cycles(&within) != 0 && within,
			  "the kernel's clocks on the counter: a check is timed on it, at the check",
			  "stamp %llu", (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));

	/*
	 * The wall clock of a check timed on the counter: read after its
	 * stamp, within the clock's reads around the check; and written before
	 * the stamp, so that no call takes the new stamp with the old clock.
	 */
	(clock_gettime) (CLOCK_REALTIME, &t0);
	stamp = check_cycles(&within);
	(clock_gettime) (CLOCK_REALTIME, &t1);
	clock_ms = (int64) pg_atomic_read_u64(&confirm.cycles_clock);
	tap_check(stamp != 0 && cycles_at_clock >= stamp &&
			  clock_ms >= unix_ms(&t0) && clock_ms <= unix_ms(&t1),
			  "a check timed on the counter reads the wall clock after its stamp",
			  "stamp %llu, counter at the clock %llu; clock %lld, around it %lld to %lld",
			  (unsigned long long) stamp, (unsigned long long) cycles_at_clock,
			  (long long) clock_ms, (long long) unix_ms(&t0), (long long) unix_ms(&t1));
	tap_check(FlakeConfirmedClock(&confirm, stamp + confirm.fresh_cycles - 1) == clock_ms &&
			  FlakeConfirmedClock(&confirm, stamp + confirm.fresh_cycles) == -1,
			  "the check's wall clock, for a call that finds it young by the counter only",
			  "at its last young cycle %lld, one later %lld",
			  (long long) FlakeConfirmedClock(&confirm, stamp + confirm.fresh_cycles - 1),
			  (long long) FlakeConfirmedClock(&confirm, stamp + confirm.fresh_cycles));
	{
		static const struct
		{
			struct timespec ts;
			int64		ms;
		}			reads[] = {
			{{1796660036, 0}, INT64CONST(1796660036000)},
			{{1796660036, 999000000}, INT64CONST(1796660036999)},
			{{1796660036, 998999999}, INT64CONST(1796660036998)},
			{{1796660036, 999999999}, INT64CONST(1796660036999)},
		};

		for (int i = 0; i < (int) lengthof(reads); i++)
		{
			wall_clock_set = &reads[i].ts;
			clock_ms = UnixClockMs();
			wall_clock_set = NULL;
			tap_check(clock_ms == reads[i].ms, "the check's wall clock in ms since 1970",
					  "%lld s %ld ns: %lld ms, expected %lld", (long long) reads[i].ts.tv_sec,
					  reads[i].ts.tv_nsec, (long long) clock_ms, (long long) reads[i].ms);
		}
	}
	old_stamp = stamp;
	old_clock = 5;
	pg_atomic_write_u64(&confirm.cycles_clock, (uint64) old_clock);
	calls_at_writes = calls_mixed = 0;
	other_at_every_write = call_at_write;
	(void) check_cycles(&within);
	other_at_every_write = NULL;
	tap_check(calls_at_writes >= 4 && calls_mixed == 0,
			  "a call between a check's writes never finds its stamp with the clock of the check before",
			  "%d calls, %d mixed", calls_at_writes, calls_mixed);

	set_clocksource("kvm-clock\n");
	tap_check(check_cycles(&within) == 0,
			  "the kernel gave the counter up: the next check is not timed on it", "stamp %llu",
			  (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));
	set_clocksource("tsc");
	tap_check(check_cycles(&within) == 0, "a clock source \"tsc\" without its line's end is not the counter",
			  "stamp %llu", (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));
	set_clocksource("tscx");
	tap_check(check_cycles(&within) == 0, "a clock source of four bytes other than \"tsc\" and its line's end is not the counter",
			  "stamp %llu", (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));
	set_clocksource("tsc2\n");
	tap_check(check_cycles(&within) == 0, "a clock source named \"tsc2\" is not the counter",
			  "stamp %llu", (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));
	set_clocksource("tsc\n");
	tap_check(check_cycles(&within) != 0 && within, "the counter again", "stamp %llu",
			  (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));

	/*
	 * A check made between a call's reads of the counter's stamp and of
	 * the end: the call's stamp is the old one, which is old, and the young
	 * one's end is not taken with it.  A check counts for about a minute
	 * here, and the standby's last check is made older than that; the
	 * call's counter is read after the other check stamped its own (which
	 * it does as it begins), as where that check began before the call.
	 */
	confirm.fresh_cycles = UINT64CONST(200000000000);
	behind_again_by_counter("by the counter: the standby caught up");
	other_at_read = other_check;
	expect_bool(FlakeConfirmedCoversByCycles(&confirm, 7500, FlakeCycles() + confirm.fresh_cycles / 2), false,
				"by the counter: a check made between a call's reads does not pass the old end for young");
	expect_bool(other_at_read == NULL, true, "by the counter: the other check came between the reads");
	expect_bool(FlakeConfirmedCoversByCycles(&confirm, 5500, FlakeCycles()), true,
				"by the counter: the young check covers what the standby has");

	/* a call between a check's writes: not covered by the old end either */
	behind_again_by_counter("by the counter: the standby caught up again");
	other_covers = true;
	other_at_write = other_call_by_cycles;
	expect(checked_end(), 6000, "by the counter: a check after the standby fell behind");
	expect_bool(other_at_write == NULL, true, "by the counter: the other call came between the check's writes");
	expect_bool(other_covers, false,
				"by the counter: a call between a check's two writes is not covered by the old end");

	FlakeConfirmReset(&confirm);
	tap_check(pg_atomic_read_u64(&confirm.checked_cycles) == 0,
			  "a reset: no check timed on the counter", "stamp %llu",
			  (unsigned long long) pg_atomic_read_u64(&confirm.checked_cycles));
	unlink(clocksource_file);
}

int
main(void)
{
	char	   *memory;
	Size		header = offsetof(WalSndCtlData, walsnds);

	/*
	 * One slot's worth of memory before the array (and its header), one
	 * after it.
	 */
	memory = calloc(1, sizeof(WalSnd) + header + sizeof(WalSnd) * (SLOTS + 1));
	WalSndCtl = (WalSndCtlData *) (memory + sizeof(WalSnd));
	before_array = (WalSnd *) ((char *) WalSndCtl + header - sizeof(WalSnd));
	after_array = (WalSnd *) ((char *) WalSndCtl + header + sizeof(WalSnd) * SLOTS);
	max_wal_senders = SLOTS;
	SyncRepConfig = calloc(1, sizeof(SyncRepConfigData) + 16);

	snprintf(clocksource_file, sizeof(clocksource_file), "/tmp/flakeid-clocksource.%d", (int) getpid());
	FlakeConfirmInit(&confirm, 0);
	FlakeConfirmRecord(&confirm, 1000, 5000);
	FlakeConfirmRecord(&confirm, 2000, 6000);
	FlakeConfirmRecord(&confirm, 3000, 7000);

	configure(1, SYNC_REP_PRIORITY);
	clear_slots();
	set_slot(before_array, 4242, WALSNDSTATE_STREAMING, 1, 3000);
	set_slot(after_array, 4243, WALSNDSTATE_STREAMING, 1, 3000);
	expect(checked_end(), 0,
		   "no standby in the array: what lies before and after it is not read");

	streaming(2, 1, 2000);
	expect(checked_end(), 6000, "FIRST 1: the one streaming standby's flush");

	set_slot(&WalSndCtl->walsnds[2], 101, WALSNDSTATE_CATCHUP, 1, 2000);
	expect(checked_end(), 0, "a standby that is catching up confirms nothing");

	streaming(2, 0, 2000);
	expect(checked_end(), 0, "a standby without a priority (not named) confirms nothing");

	set_slot(&WalSndCtl->walsnds[2], 0, WALSNDSTATE_STREAMING, 1, 2000);
	expect(checked_end(), 0,
		   "a slot whose WAL sender exited (no pid) confirms nothing, whatever else it holds");

	set_slot(&WalSndCtl->walsnds[2], 101, WALSNDSTATE_STOPPING, 1, 1000);
	expect(checked_end(), 5000, "a stopping standby still counts");

	streaming(2, 1, 999);
	expect(checked_end(), 0, "a flush short of the first record's end confirms nothing");

	/* FIRST n: the n connected standbys of highest priority */
	streaming(0, 2, 3000);
	streaming(2, 1, 2000);
	streaming(3, 3, 1000);
	configure(1, SYNC_REP_PRIORITY);
	expect(checked_end(), 6000, "FIRST 1 counts the standby of priority 1 alone");
	configure(2, SYNC_REP_PRIORITY);
	expect(checked_end(), 6000,
		   "FIRST 2 counts the lesser flush of priorities 1 and 2, not priority 3's");
	gone(2);
	expect(checked_end(), 5000,
		   "FIRST 2 with priority 1 gone counts priorities 2 and 3");
	gone(3);
	expect(checked_end(), 0, "FIRST 2 with one standby connected confirms nothing");

	/* ANY n: the n-th highest flush of all named standbys */
	clear_slots();
	streaming(0, 1, 3000);
	streaming(1, 1, 1000);
	streaming(3, 1, 2000);
	configure(2, SYNC_REP_QUORUM);
	expect(checked_end(), 6000, "ANY 2 counts the second highest flush");
	configure(3, SYNC_REP_QUORUM);
	expect(checked_end(), 5000, "ANY 3 counts the third highest flush");
	configure(1, SYNC_REP_QUORUM);
	expect(checked_end(), 7000, "ANY 1 counts the highest flush");
	gone(0);
	configure(3, SYNC_REP_QUORUM);
	expect(checked_end(), 0, "ANY 3 with two standbys connected confirms nothing");

	/*
	 * Eight standbys, out of order: qsort() sorts seven or more by
	 * partitioning, fewer by insertion, and each reads the comparisons
	 * its own way.
	 */
	for (int i = 0; i < SLOTS; i++)
		streaming(i, SLOTS - i, 3000);
	streaming(SLOTS - 1, 1, 1000);
	streaming(2, 2, 2000);
	streaming(SLOTS - 2, SLOTS - 2, 3000);
	configure(2, SYNC_REP_PRIORITY);
	expect(checked_end(), 5000, "FIRST 2 of eight standbys counts priorities 1 and 2");
	configure(1, SYNC_REP_PRIORITY);
	expect(checked_end(), 5000, "FIRST 1 of eight standbys counts priority 1");
	streaming(SLOTS - 1, 1, 3000);
	configure(2, SYNC_REP_PRIORITY);
	expect(checked_end(), 6000, "FIRST 2 of eight, priority 2 behind the rest");
	/*
	 * Among equal priorities the lowest slot, as PostgreSQL: here the
	 * first slot's priority 2 makes qsort() move the seven of priority 1.
	 */
	all_streaming(1, 3000);
	streaming(0, 2, 3000);
	streaming(1, 1, 1000);
	configure(1, SYNC_REP_PRIORITY);
	expect(checked_end(), 5000, "FIRST 1, seven of priority 1: the lowest slot of them, behind");
	streaming(1, 1, 3000);
	streaming(SLOTS - 1, 1, 1000);
	expect(checked_end(), 7000, "FIRST 1, seven of priority 1: not the highest slot, behind");

	all_streaming(1, 1000);
	streaming(5, 1, 2000);
	streaming(1, 1, 3000);
	configure(2, SYNC_REP_QUORUM);
	expect(checked_end(), 6000, "ANY 2 of eight counts the second highest flush");
	configure(3, SYNC_REP_QUORUM);
	expect(checked_end(), 5000, "ANY 3 of eight counts the third highest flush");
	clear_slots();
	streaming(0, 1, 3000);
	streaming(1, 1, 1000);
	streaming(3, 1, 2000);

	/*
	 * A reading the worker has not stood by lately is not trusted: every
	 * named standby must have the lease, whatever the number and method.
	 */
	streaming(0, 1, 3000);
	configure(1, SYNC_REP_QUORUM);
	now += FLAKE_CONFIG_FRESH_MS - 2;
	expect(checked_end(), 7000,
		   "a reading stood by FLAKE_CONFIG_FRESH_MS - 1 ms ago is trusted");
	expect(checked_end(), 5000,
		   "one stood by FLAKE_CONFIG_FRESH_MS ago is not: the least flush of all named");
	configure(1, SYNC_REP_QUORUM);
	expect(checked_end(), 7000, "the same reading, stood by again, is trusted");
	SyncRepConfig->syncrep_method = SYNC_REP_PRIORITY;
	expect(checked_end(), 5000,
		   "a reading that differs from this process's own: the least flush of all named");
	gone(1);
	streaming(3, 1, 3000);
	expect(checked_end(), 7000,
		   "the least flush of the named standbys there now, not of one read before");

	/*
	 * A process that reads no synchronous_standby_names (its statement
	 * began before a reload named standbys) does not trust the worker's
	 * reading: every named standby must have the lease, and one named
	 * standby there is enough.
	 */
	{
		SyncRepConfigData *mine = SyncRepConfig;

		clear_slots();
		streaming(2, 1, 3000);
		configure(1, SYNC_REP_PRIORITY);
		SyncRepConfig = NULL;
		expect(checked_end(), 7000,
			   "a process that reads no standbys named: the one named standby there confirms");
		streaming(4, 2, 1000);
		expect(checked_end(), 5000,
			   "a process that reads no standbys named: the least flush of all named");
		/* nor has the worker read any yet (it took no reload in since) */
		FlakeConfirmPublishConfig(&confirm);
		clear_slots();
		streaming(2, 1, 3000);
		expect(checked_end(), 7000,
			   "neither the worker nor the process reads standbys named: the one named there confirms");
		clear_slots();
		streaming(1, 1, 1000);
		streaming(3, 2, 3000);
		expect(checked_end(), 5000,
			   "the least flush of all named, in the first WAL sender's slot");
		SyncRepConfig = mine;
	}

	/*
	 * Of more than FLAKE_CONFIRM_RECORDS records the newest dropped one
	 * still counts, the older ones not: a standby that far behind
	 * confirms less than it has, never more.
	 */
	FlakeConfirmReset(&confirm);
	expect(checked_end(), 0, "after a reset no record counts");
	for (int k = 1; k <= FLAKE_CONFIRM_RECORDS + 6; k++)
		FlakeConfirmRecord(&confirm, 100 * k, 1000 * k);
	clear_slots();
	configure(1, SYNC_REP_PRIORITY);
	streaming(1, 1, 599);
	expect(checked_end(), 0, "the records dropped before the newest dropped one do not count");
	streaming(1, 1, 600);
	expect(checked_end(), 6000, "the newest dropped record counts once flushed");
	streaming(1, 1, 699);
	expect(checked_end(), 6000, "a record flushed short of its end does not count");
	streaming(1, 1, 100 * (FLAKE_CONFIRM_RECORDS + 5));
	expect(checked_end(), 1000 * (FLAKE_CONFIRM_RECORDS + 5),
		   "the record before the newest counts once flushed: each drop keeps the rest");
	streaming(1, 1, 100 * (FLAKE_CONFIRM_RECORDS + 6));
	expect(checked_end(), 1000 * (FLAKE_CONFIRM_RECORDS + 6), "the newest record counts once flushed");

	/* whether the check says the confirmed end rose */
	now++;
	expect_bool(FlakeConfirmCheck(&confirm, now), false,
				"a check that finds the same end does not say it rose");
	streaming(1, 1, 600);
	expect(checked_end(), 6000, "a standby replaced by one behind: the end falls");
	streaming(1, 1, 700);
	now++;
	expect_bool(FlakeConfirmCheck(&confirm, now), true,
				"a check that finds a higher end says it rose");

	/*
	 * The slow path of a call: a check younger than FLAKE_CONFIRM_FRESH_MS
	 * is not made again, an older one is.
	 */
	streaming(1, 1, 800);
	configure(1, SYNC_REP_PRIORITY);
	expect_bool(FlakeConfirmRecheckCovers(&confirm, 7500, now + FLAKE_CONFIRM_FRESH_MS - 1),
				false, "a check FLAKE_CONFIRM_FRESH_MS - 1 ms old is not made again");
	expect(FlakeConfirmedEnd(&confirm), 7000, "so the end stays");
	expect_bool(FlakeConfirmRecheckCovers(&confirm, 7500, now + FLAKE_CONFIRM_FRESH_MS),
				true, "a check FLAKE_CONFIRM_FRESH_MS old is made again, and covers");
	expect(FlakeConfirmedEnd(&confirm), 8000, "with the standby's new flush");

	/* the slow path's answer: the confirmed end's own millisecond is past it */
	expect_bool(FlakeConfirmRecheckCovers(&confirm, 7999, now + FLAKE_CONFIRM_FRESH_MS),
				true, "the slow path covers the millisecond before the confirmed end");
	expect_bool(FlakeConfirmRecheckCovers(&confirm, 8000, now + FLAKE_CONFIRM_FRESH_MS),
				false, "the slow path does not cover the confirmed end's own millisecond");

	/*
	 * The synchronous standby is replaced by one behind once the check is
	 * old: a call that comes while another checks again must not take the
	 * old end for a young one, whether it comes before the other has
	 * read the walsenders or between its own two reads.
	 */
	now += 2 * FLAKE_CONFIRM_FRESH_MS;	/* the calls above checked at now + FRESH */
	streaming(1, 1, 600);
	other_covers = true;
	other_at_lock = other_call;
	expect_bool(FlakeConfirmedCovers(&confirm, 7500, now), false,
				"a call that checks again after the standby fell behind is not covered");
	expect_bool(other_at_lock == NULL, true, "the other call came while this one checked");
	expect_bool(other_covers, false,
				"a call that comes while another checks is not covered by the old end");

	behind_again();
	other_at_read = other_check;
	expect_bool(FlakeConfirmedCovers(&confirm, 7500, now), false,
				"a check made between a call's reads of the end and of its time does not pass the old end for young");
	expect_bool(other_at_read == NULL, true, "the other check came between the reads");

	behind_again();
	other_covers = true;
	other_at_write = other_call;
	expect(checked_end(), 6000, "a check after the standby fell behind");
	expect_bool(other_at_write == NULL, true, "the other call came between the check's writes");
	expect_bool(other_covers, false,
				"a call between a check's two writes is not covered by the old end");

	/*
	 * A call that waited while another process held the lock for
	 * something else than a check finds the check still old, and checks.
	 */
	behind_again();
	lock_held = 1;
	expect_bool(FlakeConfirmedCovers(&confirm, 7500, now), false,
				"a call that waited for the lock held for something else checks, and is not covered");
	expect_bool(lock_held == 0, true, "the call waited for the lock");
	expect(FlakeConfirmedEnd(&confirm), 6000, "its check found the standby behind");

	check_counter();
	return tap_done();
}
