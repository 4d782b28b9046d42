/*-------------------------------------------------------------------------
 *
 * confirm.c
 *	  Which part of the time lease the synchronous standbys have.
 *
 * While the server has synchronous standbys, an ID is returned only under
 * a lease whose WAL record the standbys that are synchronous at that
 * moment have flushed: the rule a commit that starts at that moment obeys.
 * PostgreSQL's own count of what the standbys confirmed (WalSndCtl->lsn)
 * only ever rises, whichever standbys raised it, so it cannot tell: after
 * a synchronous standby dies and one that is behind takes its place, it
 * still covers records the new one lacks.  Instead the confirmed lease end
 * (sync_end) is worked out afresh from the walsenders: the flush positions
 * of the standbys that are synchronous now, chosen as PostgreSQL chooses
 * them (FIRST n: the n connected ones of highest priority; ANY n: the
 * n-th highest position of all named ones), against the newest lease
 * records and where each ends in WAL.  However the synchronous set
 * changed (a reload, a standby leaving or joining, another quorum member,
 * any process restarted), the next check sees it.
 *
 * A call uses sync_end only while the last check is younger than
 * FLAKE_CONFIRM_FRESH_MS, and otherwise checks itself (one caller at a
 * time, under the lock; the others wait for its end, never taking the
 * end of the check before for a young one); so neither a lease worker
 * that is stopped, restarting or busy writing the state file nor one
 * that has not read a new list yet lets an old confirmation be used.
 * The hot path reads the time of the check and sync_end, on one cache
 * line, and only while the server has synchronous standbys.
 *
 * A call that read the precise clock times the check on it, in ms.  One
 * that did not (its IDs ran ahead of the clock) reads the processor's
 * time-stamp counter instead, cheaper, where the check was timed on it
 * too: each check reads which clock source the kernel's clocks run on,
 * and stamps the counter only where it is the counter ("tsc"), which the
 * kernel uses only while it runs at one rate and in step on every CPU.
 * The counter's rate is measured as the generator is made, against the
 * raw monotonic clock, and a check counts for FLAKE_CYCLES_FRESH_PART of
 * FLAKE_CONFIRM_FRESH_MS of its cycles; a call that finds it old or not
 * covering asks the clock.  Just after its stamp a check reads the wall
 * clock too, and such a call takes that for its clock: at most
 * FLAKE_CONFIRM_FRESH_MS behind the clock's millisecond at the call's
 * read of the counter, and never ahead of it (unless the clock was set
 * back meanwhile).
 *
 * Which standbys are named, and their order, come from each walsender's
 * own priority, which the walsender sets as it takes a reload in.  Their
 * number and method are not in shared memory: they are the lease worker's
 * reading of synchronous_standby_names, published at its start and after
 * each reload.  The worker wakes on every reload, and while the server has
 * synchronous standbys it stamps its reading at least every
 * FLAKE_WORKER_SYNC_NAPTIME_MS; a reading not stamped for
 * FLAKE_CONFIG_FRESH_MS (a worker stopped, busy, gone or not yet
 * restarted, which may have missed a reload that changed the number or
 * the method), or one that differs from the checking process's own, is
 * not used: the check then asks every standby that a walsender counts as
 * named for the lease, which covers the synchronous set under any number
 * and method.  What remains: a statement that began before a reload and
 * checks within FLAKE_CONFIG_FRESH_MS of the worker's last stamp, the
 * worker not having taken the reload in, counts the old way; PostgreSQL's
 * own walsenders, too, each take a reload in at their own moment.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "utils/memutils.h"

#include "clock.h"
#include "confirm.h"

/* Where the kernel names the clock source its clocks run on. */
#ifndef FLAKE_CLOCKSOURCE_FILE
#define FLAKE_CLOCKSOURCE_FILE "/sys/devices/system/clocksource/clocksource0/current_clocksource"
#endif

/* How the time-stamp counter's rate is measured: tries of how many us. */
#define FLAKE_CYCLES_TRIES		3
#define FLAKE_CYCLES_TRY_US		2000

/* The part of FLAKE_CONFIRM_FRESH_MS that a check counts on the counter. */
#define FLAKE_CYCLES_FRESH_PART		0.9

/* A synchronous standby candidate, as PostgreSQL ranks them. */
typedef struct FlakeCandidate
{
	XLogRecPtr	flush;
	int			priority;
	int			index;
} FlakeCandidate;

/* Forget every lease record; the caller holds the lock, or is alone. */
static void
ForgetRecords(FlakeConfirm *c)
{
	c->nlogged = 0;
	c->dropped.lsn = InvalidXLogRecPtr;
	c->dropped.lease_end = 0;
	pg_atomic_write_u64(&c->sync_end, 0);
	pg_atomic_write_u64(&c->checked, 0);
	pg_atomic_write_u64(&c->checked_cycles, 0);
}

/*
 * How many cycles of the time-stamp counter pass in less than
 * FLAKE_CONFIRM_FRESH_MS.  Each of FLAKE_CYCLES_TRIES tries counts the
 * cycles of FLAKE_CYCLES_TRY_US against CLOCK_MONOTONIC_RAW, the counter's
 * reads within the clock's, so that a pause between them makes the rate
 * seem lower, never higher; the highest rate counts, and of the cycles in
 * FLAKE_CONFIRM_FRESH_MS at that rate, FLAKE_CYCLES_FRESH_PART (for the
 * NTP's slewing of the wall clock, and to spare).  0 without a counter
 * that rises.
 */
static uint64
FreshCycles(void)
{
	double		rate = 0;

	if (FlakeCycles() == 0)
		return 0;
	for (int i = 0; i < FLAKE_CYCLES_TRIES; i++)
	{
		struct timespec t0;
		struct timespec t1;
		uint64		c0;
		uint64		c1;
		double		ns;

		clock_gettime(CLOCK_MONOTONIC_RAW, &t0);
		c0 = FlakeCycles();
		pg_usleep(FLAKE_CYCLES_TRY_US);
		c1 = FlakeCycles();
		clock_gettime(CLOCK_MONOTONIC_RAW, &t1);
		ns = (double) (t1.tv_sec - t0.tv_sec) * 1e9 +
			(double) (t1.tv_nsec - t0.tv_nsec);
		if (c1 > c0 && ns > 0)
			rate = Max(rate, (double) (c1 - c0) / ns);
	}
	return (uint64) (rate * FLAKE_CONFIRM_FRESH_MS * 1e6 * FLAKE_CYCLES_FRESH_PART);
}

/*
 * The time-stamp counter, where the kernel keeps its clocks on it now (its
 * clock source is "tsc"), else 0 (as FlakeCycles() is where the processor
 * has none).  The kernel does so only while it finds the counter running
 * at one rate and in step on every CPU, and takes another clock source
 * when its watchdog finds otherwise; read at every check, so that no check
 * is timed on a counter the kernel gave up before it.  The file stays
 * open.
 */
static uint64
CyclesIfKernelClock(void)
{
	static int	fd = -1;
	char		source[8];

	if (fd < 0)
		fd = open(FLAKE_CLOCKSOURCE_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, source, sizeof(source), 0) != 4 ||
		memcmp(source, "tsc\n", 4) != 0)
		return 0;
	return FlakeCycles();
}

/* The wall clock in ms since 1970. */
static int64
UnixClockMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Set up the confirmation when the generator is made. */
void
FlakeConfirmInit(FlakeConfirm *c, int tranche)
{
	pg_atomic_init_u64(&c->sync_end, 0);
	pg_atomic_init_u64(&c->checked, 0);
	pg_atomic_init_u64(&c->checked_cycles, 0);
	pg_atomic_init_u64(&c->cycles_clock, 0);
	c->fresh_cycles = FreshCycles();
	pg_atomic_init_u64(&c->config_at, 0);
	LWLockInitialize(&c->lock, tranche);
	c->config_known = false;
	ForgetRecords(c);
}

/* Forget every lease record and confirmation: the layout changed. */
void
FlakeConfirmReset(FlakeConfirm *c)
{
	LWLockAcquire(&c->lock, LW_EXCLUSIVE);
	ForgetRecords(c);
	LWLockRelease(&c->lock);
}

/* Publish this process's reading of synchronous_standby_names. */
void
FlakeConfirmPublishConfig(FlakeConfirm *c)
{
	LWLockAcquire(&c->lock, LW_EXCLUSIVE);
	c->config_known = (SyncRepConfig != NULL);
	if (SyncRepConfig != NULL)
	{
		c->num_sync = SyncRepConfig->num_sync;
		c->method = SyncRepConfig->syncrep_method;
	}
	LWLockRelease(&c->lock);
}

/*
 * The lease worker has taken in every reload so far (now: ms of the
 * layout's clock).
 */
void
FlakeConfirmStandBy(FlakeConfirm *c, int64 now)
{
	pg_atomic_write_u64(&c->config_at, (uint64) Max(now, 1));
}

/* A lease record is in WAL up to lsn, flushed locally. */
void
FlakeConfirmRecord(FlakeConfirm *c, XLogRecPtr lsn, int64 lease_end)
{
	LWLockAcquire(&c->lock, LW_EXCLUSIVE);
	if (c->nlogged == FLAKE_CONFIRM_RECORDS)
	{
		c->dropped = c->logged[0];
		memmove(&c->logged[0], &c->logged[1],
				sizeof(FlakeLoggedLease) * (FLAKE_CONFIRM_RECORDS - 1));
		c->nlogged--;
	}
	c->logged[c->nlogged].lsn = lsn;
	c->logged[c->nlogged].lease_end = lease_end;
	c->nlogged++;
	LWLockRelease(&c->lock);
}

static int
CandidateByPriority(const void *a, const void *b)
{
	const FlakeCandidate *ca = a;
	const FlakeCandidate *cb = b;

	if (ca->priority != cb->priority)
		return ca->priority < cb->priority ? -1 : 1;
	return ca->index < cb->index ? -1 : (ca->index > cb->index);
}

static int
CandidateByFlushDesc(const void *a, const void *b)
{
	const FlakeCandidate *ca = a;
	const FlakeCandidate *cb = b;

	if (ca->flush != cb->flush)
		return ca->flush > cb->flush ? -1 : 1;
	return 0;
}

/*
 * How far the standbys that are synchronous now have flushed WAL, as a
 * commit waiting for num_sync of them by method would count it; invalid
 * when fewer of them are there than it waits for.  The walsenders are read
 * as PostgreSQL's own SyncRepGetCandidateStandbys() reads them.  With
 * every_named, how far all the named standbys have flushed: what any
 * number and method would ask for.
 */
static XLogRecPtr
SyncStandbysFlushed(int num_sync, int method, bool every_named)
{
	static FlakeCandidate *candidates = NULL;
	int			n = 0;

	if (candidates == NULL)
		candidates = MemoryContextAlloc(TopMemoryContext,
										sizeof(FlakeCandidate) * Max(max_wal_senders, 1));
	for (int i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *walsnd = &WalSndCtl->walsnds[i];
		pid_t		pid;
		WalSndState state;
		XLogRecPtr	flush;
		int			priority;

		SpinLockAcquire(&walsnd->mutex);
		pid = walsnd->pid;
		state = walsnd->state;
		flush = walsnd->flush;
		priority = walsnd->sync_standby_priority;
		SpinLockRelease(&walsnd->mutex);

		if (pid == 0 || priority == 0 || XLogRecPtrIsInvalid(flush) ||
			(state != WALSNDSTATE_STREAMING && state != WALSNDSTATE_STOPPING))
			continue;
		candidates[n].flush = flush;
		candidates[n].priority = priority;
		candidates[n].index = i;
		n++;
	}
	if (num_sync < 1 || n < num_sync)
		return InvalidXLogRecPtr;
	if (every_named)
	{
		XLogRecPtr	least = candidates[0].flush;

		for (int i = 1; i < n; i++)
			least = Min(least, candidates[i].flush);
		return least;
	}
	if (method == SYNC_REP_QUORUM)
	{
		qsort(candidates, n, sizeof(FlakeCandidate), CandidateByFlushDesc);
		return candidates[num_sync - 1].flush;
	}
	qsort(candidates, n, sizeof(FlakeCandidate), CandidateByPriority);
	qsort(candidates, num_sync, sizeof(FlakeCandidate), CandidateByFlushDesc);
	return candidates[num_sync - 1].flush;
}

/*
 * Whether the lease worker's reading of the synchronous standbys' number
 * and method counts: stamped in the last FLAKE_CONFIG_FRESH_MS, and the
 * same as this process's own reading.  A session takes a reload in
 * between statements, the worker at once, so a session that read another
 * number or method than the worker has seen a reload that the worker has
 * not yet (or the other way round); and a worker that did not stamp its
 * reading lately may have missed one that the session has not seen
 * either, when the session's statement began before it.  Caller holds
 * the lock.
 */
static bool
ReadingTrusted(FlakeConfirm *c, int64 now)
{
	if (!c->config_known ||
		(uint64) (now - (int64) pg_atomic_read_u64(&c->config_at)) >=
		FLAKE_CONFIG_FRESH_MS)
		return false;
	return SyncRepConfig != NULL && SyncRepConfig->num_sync == c->num_sync &&
		SyncRepConfig->syncrep_method == c->method;
}

/*
 * Check which part of the lease the synchronous standbys have, as of now
 * (ms of the layout's clock, read before the check); caller holds the lock.
 * The end is written before the time of the check (see
 * FlakeConfirmFresh()).  Returns whether the confirmed end rose.
 */
static bool
CheckLocked(FlakeConfirm *c, int64 now)
{
	uint64		cycles = CyclesIfKernelClock();
	int64		cycles_clock = UnixClockMs();
	XLogRecPtr	flushed = InvalidXLogRecPtr;
	int64		end = 0;
	int64		old;

	if (ReadingTrusted(c, now))
		flushed = SyncStandbysFlushed(c->num_sync, c->method, false);
	else
		flushed = SyncStandbysFlushed(Max(c->config_known ? c->num_sync : 1,
										  SyncRepConfig ? SyncRepConfig->num_sync : 1),
									  c->method, true);
	if (!XLogRecPtrIsInvalid(flushed))
	{
		if (!XLogRecPtrIsInvalid(c->dropped.lsn) && c->dropped.lsn <= flushed)
			end = c->dropped.lease_end;
		for (int i = 0; i < c->nlogged && c->logged[i].lsn <= flushed; i++)
			end = Max(end, c->logged[i].lease_end);
	}
	old = (int64) pg_atomic_read_u64(&c->sync_end);
	pg_atomic_write_u64(&c->sync_end, (uint64) end);
	pg_write_barrier();
	pg_atomic_write_u64(&c->checked, (uint64) now);
	pg_atomic_write_u64(&c->cycles_clock, (uint64) cycles_clock);
	pg_write_barrier();
	pg_atomic_write_u64(&c->checked_cycles, cycles);
	return end > old;
}

/* CheckLocked(), taking the lock. */
bool
FlakeConfirmCheck(FlakeConfirm *c, int64 now)
{
	bool		rose;

	LWLockAcquire(&c->lock, LW_EXCLUSIVE);
	rose = CheckLocked(c, now);
	LWLockRelease(&c->lock);
	return rose;
}

/*
 * The slow path of FlakeConfirmedCovers(): the last check did not cover
 * end_ms, which a young one answers as it is, or it is too old.  Then one
 * caller checks again, holding the lock; the others wait for it to
 * finish (not taking the lock) and find the check young, or, where the
 * holder did something else or its check's time is not within
 * FLAKE_CONFIRM_FRESH_MS before their own clock read, try again.  No call
 * reads the end of the check before while another checks: the time is
 * written only with the new end.
 */
bool
FlakeConfirmRecheckCovers(FlakeConfirm *c, int64 end_ms, int64 now)
{
	while (!FlakeConfirmFresh(c, now))
	{
		if (LWLockAcquireOrWait(&c->lock, LW_EXCLUSIVE))
		{
			if (!FlakeConfirmFresh(c, now))
				(void) CheckLocked(c, now);
			LWLockRelease(&c->lock);
			break;
		}
	}
	return end_ms < FlakeConfirmedEnd(c);
}
