/*-------------------------------------------------------------------------
 *
 * generator.c
 *	  nextflake(), nextflakes() and flakeid_status(): reserving IDs from the
 *	  shared generator.
 *
 * The generator counts ticks (see layout.h) in one 64-bit word of shared
 * memory, next_tick.  A call reads the clock and takes ticks with one
 * fetch-and-add, which never fails and never retries, however many
 * backends call at once; when the clock has moved past next_tick it
 * starts the clock's millisecond with one compare-and-swap instead (see
 * FlakeReserve for the order of the two).  Every reservation is ordered by
 * that one word, so the IDs of a server are strictly increasing across
 * backends.  No lock, no I/O, no allocation.
 *
 * Around the reservation, a call reads the generator's word (status,
 * node id, generation) before and after: when it changed in between (a
 * node id, layout or lease taken in), the ticks are dropped; it starts over.
 * After it, the call checks what the ticks may not be: past the layout's
 * time range (an error), further ahead of the clock than flakeid.max_lead
 * (it sleeps), or at or past the durable lease (it waits for the lease
 * worker).  Ticks reserved by a call that fails or is cancelled are never
 * issued: IDs may have gaps, never repeats.
 *
 * With flakeid.cache above 1, nextflake() reserves a block of ticks that
 * way and hands them out from this process's memory within the clock's
 * millisecond (see FlakeBlock): IDs strictly increasing per backend, and
 * across backends from one millisecond of the clock to the next.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "clock.h"
#include "confirm.h"
#include "guc.h"
#include "layout.h"
#include "lease.h"
#include "mode.h"
#include "shmem.h"
#include "wal.h"
#include "worker.h"

PG_FUNCTION_INFO_V1(nextflake);
PG_FUNCTION_INFO_V1(nextflakes);
PG_FUNCTION_INFO_V1(flakeid_status);

/* The longest one sleep for the clock lasts before the call looks again. */
#define FLAKE_CLOCK_SLEEP_MAX_MS	100

/* How often a call waiting for the lease looks at the lease worker. */
#define FLAKE_LEASE_POLL_MS		100

/* Ticks reserved by one call, and what they become IDs with. */
typedef struct FlakeIssue
{
	uint64		first;			/* the first tick */
	FlakeLayout layout;			/* the generator's layout then */
	int32		node;			/* and its node id */
} FlakeIssue;

/*
 * What this process learnt the last time it found the generator ready:
 * the word then (0, never published, until the first call) and the
 * layout.  It is learnt again whenever the word or, without preloading,
 * this process's layout settings change.
 */
static uint32 my_word = 0;
static uint64 my_settings_gen = 0;
static FlakeLayout my_layout;
static FlakeSlot *my_slot = NULL;

/* How far the coarse clock may lag the precise one, in ms. */
static int64 coarse_slack_ms = 0;

/* Whether this process's last call found the IDs ahead of the clock. */
static bool ids_ahead = false;

/*
 * With flakeid.cache above 1, the block of ticks nextflake() reserved last
 * in this process.  Its ticks are handed out one per call while the word
 * is the one they were reserved under and the rest of the millisecond the
 * wall clock read just before the reservation has not passed, as the
 * monotonic clock measures it, which no step of the wall clock stretches.
 * A call after that millisecond reserves anew, after every call that
 * returned before it ended, so its ID is above theirs.  Ticks left over
 * are gaps.
 */
typedef struct FlakeBlock
{
	FlakeIssue	issue;			/* issue.first: the next tick to hand out */
	uint64		end;			/* past the block's last tick */
	int64		until;			/* monotonic ns: valid before this */
	int64		size;			/* ticks the next reservation takes */
} FlakeBlock;

static FlakeBlock my_block = {.size = 1};

/* No tick of the block is handed out any more; ticks left make it smaller. */
static inline void
FlakeDropBlock(void)
{
	if (unlikely(my_block.issue.first < my_block.end))
	{
		my_block.end = my_block.issue.first;
		my_block.size = Max(my_block.size / 2, 1);
	}
}

/* This process issued n more IDs, as flakeid_status() counts them. */
static inline void
FlakeCountIssued(int64 n)
{
	pg_atomic_write_u64(&my_slot->issued,
						pg_atomic_read_u64(&my_slot->issued) + (uint64) n);
}

/* The generator where there can be none, or on PostgreSQL 15 without preloading. */
static void
ReportNoGenerator(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flakeid must be loaded via \"shared_preload_libraries\" to generate IDs"),
			 errhint("Add flakeid to \"shared_preload_libraries\" in postgresql.conf, "
					 "set flakeid.node_id, and restart the server.")));
}

static void
ReportRecovery(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot generate flakeid values during recovery"),
			 errdetail("A standby shares its primary's node id, so only the primary generates IDs."),
			 errhint("Call nextflake() on the primary server.")));
}

/* The layout change that keeps the generator from generating, in words. */
static char *
DescribeLayoutChange(const FlakeLayout *was, const FlakeLayout *now)
{
	if (was->node_bits != now->node_bits)
		return psprintf("flakeid.node_bits was %d and is now %d.",
						was->node_bits, now->node_bits);
	return psprintf("flakeid.epoch was %s and is now %s.",
					pstrdup(timestamptz_to_str(FlakeTimestamp(was, 0))),
					pstrdup(timestamptz_to_str(FlakeTimestamp(now, 0))));
}

/*
 * The newest lease, replayed from WAL, is not in the state file, whose
 * writes fail.
 */
static void
ReportFileBehind(FlakeShared *s)
{
	errno = s->lease_errno;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not write flakeid state file \"%s\": %m", FLAKE_STATE_FILE),
			 errdetail("The newest time lease, replayed from WAL, is not in the file yet; "
					   "IDs are generated again once the file holds it."),
			 errhint("Make the file writable and make sure the disk has space. Do not remove the file.")));
}

/* Why the generator does not issue IDs, as an error. */
static void
ReportNotReady(FlakeShared *s, FlakeStatus status)
{
	switch (status)
	{
		case FLAKE_GEN_READY:
		case FLAKE_GEN_CHANGING:
		case FLAKE_GEN_NOT_SET_UP:
			break;
		case FLAKE_GEN_FILE_BEHIND:
			ReportFileBehind(s);
			break;
		case FLAKE_GEN_NODE_UNSET:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("flakeid.node_id is not set"),
					 errdetail("Every server whose IDs meet needs a node id of its own; flakeid does not guess one."),
					 errhint("Set flakeid.node_id in postgresql.conf or with ALTER SYSTEM, and reload the configuration.")));
			break;
		case FLAKE_GEN_LAYOUT_INVALID:
			{
				const char *bad;
				FlakeLayout layout;

				(void) FlakeConfiguredLayout(&layout, &bad);
				FlakeReportInvalidLayout(bad);
			}
			break;
		case FLAKE_GEN_LAYOUT_CHANGED:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("flakeid layout has changed since this server last generated IDs"),
					 errdetail_internal("%s", DescribeLayoutChange(&s->layout, &s->configured)),
					 errhint("Restore the previous setting and restart, or, if every server whose IDs meet uses the new layout, "
							 "run SELECT flakeid_accept_layout() as a superuser.")));
			break;
		case FLAKE_GEN_FILE_DAMAGED:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("flakeid state file \"%s\" is damaged", FLAKE_STATE_FILE),
					 errdetail("Neither copy of the time lease in it is valid, so the last ID issued is unknown."),
					 errhint("Once the system clock is past every ID this server issued, remove the file and restart the server.")));
			break;
		case FLAKE_GEN_FILE_UNREADABLE:
			errno = s->file_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read flakeid state file \"%s\": %m", FLAKE_STATE_FILE),
					 errdetail("The file holds the time lease, below which every ID of this server lies."),
					 errhint("Let the server's operating system user read and write the file, then restart the server. "
							 "Do not remove the file.")));
			break;
	}
	elog(ERROR, "flakeid generator in unexpected status %d", (int) status);
}

/*
 * This session generates with the generator's node id and layout, which
 * are the server's configuration's.  A session whose own view of them is
 * not the configuration's (given from elsewhere before the library was
 * loaded) does not generate: it would show one node id or layout and
 * generate with another.  Without preloading, the same holds after a
 * reload that changed the layout settings: they take effect only at a
 * restart.
 */
static void
CheckSettingsUnchanged(FlakeShared *s)
{
	FlakeLayout mine;
	const char *bad;

	if (FlakeLayoutFixed())
		return;
	if (!FlakeSettingsFromConfig())
		FlakeReportForeignSetting();
	if (!FlakeConfiguredLayout(&mine, &bad))
		FlakeReportInvalidLayout(bad);
	if (!FlakeSameLayout(&mine, &s->configured))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flakeid layout settings changed while the server was running"),
				 errdetail_internal("The generator started with %s",
									DescribeLayoutChange(&s->configured, &mine)),
				 errhint("Restore the settings and reload, or restart the server; "
						 "preloading flakeid fixes the layout for the life of the server.")));
}

static void FlakeAwaitFileWritten(FlakeShared *s);
static void FlakeAwaitFloor(FlakeShared *s);

/*
 * Learn the generator's word and layout again: the first call of this
 * process, or after a change.  Fails when it does not generate; waits out
 * a change in progress, and sees the generator set up first.  Every
 * process passes here before its first reservation, and on a server that
 * ended archive recovery only once the floor is written: no call reserves
 * a tick below it.
 */
static pg_noinline void
FlakeRefresh(FlakeShared *s)
{
	FlakeLayout layout;
	uint32		word = FlakeSnapshot(s, &layout);

	if (FlakeWordStatus(word) == FLAKE_GEN_NOT_SET_UP)
	{
		FlakeEnsureSetUp(s);
		word = FlakeSnapshot(s, &layout);
	}
	if (RecoveryInProgress())
		ReportRecovery();
	if (FlakeWordStatus(word) == FLAKE_GEN_FILE_BEHIND)
	{
		FlakeAwaitFileWritten(s);
		word = FlakeSnapshot(s, &layout);
	}
	if (FlakeWordStatus(word) == FLAKE_GEN_READY && FlakeFloorPending(s))
	{
		FlakeAwaitFloor(s);
		word = FlakeSnapshot(s, &layout);
	}
	if (FlakeWordStatus(word) != FLAKE_GEN_READY)
		ReportNotReady(s, FlakeWordStatus(word));
	CheckSettingsUnchanged(s);

	/* a block is of the word it was reserved under: none is left */
	FlakeDropBlock();
	my_block.until = 0;
	my_layout = layout;
	my_word = word;
	my_settings_gen = flake_layout_settings_gen;
	if (my_slot == NULL)
	{
		my_slot = FlakeMySlot();
		coarse_slack_ms = FlakeCoarseSlackMs();
	}
}

static void
ReportClockRange(int64 now)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("system clock is outside the range of flakeid timestamps"),
			 now < 0 ?
			 errdetail("The clock reads before flakeid.epoch (%s).",
					   timestamptz_to_str(FlakeTimestamp(&my_layout, 0))) :
			 errdetail("The %d-bit time field counted from flakeid.epoch (%s) ended at %s.",
					   FLAKE_TIME_BITS,
					   pstrdup(timestamptz_to_str(FlakeTimestamp(&my_layout, 0))),
					   pstrdup(timestamptz_to_str(FlakeTimestamp(&my_layout, FLAKE_MAX_MS + 1)))),
			 errhint("Check the system clock and flakeid.epoch.")));
}

static pg_noinline void
ReportRangeUsedUp(const FlakeLayout *layout)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("flakeid values would pass the end of the layout's time range"),
			 errdetail("The %d-bit time field counted from flakeid.epoch (%s) ends at %s.",
					   FLAKE_TIME_BITS,
					   pstrdup(timestamptz_to_str(FlakeTimestamp(layout, 0))),
					   pstrdup(timestamptz_to_str(FlakeTimestamp(layout, FLAKE_MAX_MS + 1)))),
			 errhint("Request fewer IDs, or move every server whose IDs meet to a new layout.")));
}

/* Ticks whose last millisecond is end_ms must lie within the layout's range. */
static inline void
FlakeCheckRange(int64 end_ms)
{
	if (unlikely(end_ms > FLAKE_MAX_MS))
		ReportRangeUsedUp(&my_layout);
}

/*
 * The precise clock, which must lie within the layout's range; ns_left,
 * when given, as for FlakeReadClock().
 */
static inline int64
PreciseNowLeft(int64 *ns_left)
{
	int64		now = FlakeClockMsLeft(&my_layout, ns_left);

	if (unlikely(!FlakeClockInRange(now)))
		ReportClockRange(now);
	return now;
}

static inline int64
PreciseNow(void)
{
	return PreciseNowLeft(NULL);
}

/*
 * The clock, for a call that finds next_tick as it is; *cycles is the
 * time-stamp counter where the call read it, else 0.  While the IDs are
 * ahead of even the precise clock the clock cannot change the next one,
 * and a cheaper lower bound of it says so: the coarse clock, or, while the
 * server has synchronous standbys, the clock of their last check where the
 * counter finds that check young (FlakeConfirmedClock()), the counter
 * being read for the check anyway.  Whether to try it is guessed from
 * this process's last call.
 */
static inline int64
FlakeNow(FlakeShared *s, uint64 next, bool standbys, uint64 *cycles)
{
	int64		next_ms = FlakeTickMs(&my_layout, next);
	int64		now;

	*cycles = 0;
	if (ids_ahead)
	{
		if (likely(!standbys))
		{
			now = FlakeCoarseClockMs(&my_layout);
			if (next_ms >= now + coarse_slack_ms && FlakeClockInRange(now))
				return now;
		}
		else
		{
			/* an old check gives -1: before the epoch, out of range */
			*cycles = FlakeCycles();
			now = FlakeConfirmedClock(&s->confirm, *cycles) - my_layout.epoch_ms;
			if (next_ms >= now + FLAKE_CONFIRM_FRESH_MS && FlakeClockInRange(now))
				return now;
		}
	}
	now = PreciseNow();
	ids_ahead = next_ms >= now + coarse_slack_ms;
	return now;
}

/*
 * How long a call has waited, on the monotonic clock: for the clock
 * (bounded by flakeid.max_clock_wait) and for the lease (bounded by
 * flakeid.max_lease_wait).  Zero until the call first waits.
 */
typedef struct FlakeWaited
{
	instr_time	clock_since;
	instr_time	lease_since;
	bool		counted;		/* in flakeid_status()'s waits */
} FlakeWaited;

/* Milliseconds since *since, which is set now if it was zero. */
static int64
WaitedMs(instr_time *since)
{
	instr_time	elapsed;

	if (INSTR_TIME_IS_ZERO(*since))
	{
		INSTR_TIME_SET_CURRENT(*since);
		return 0;
	}
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, *since);
	return (int64) INSTR_TIME_GET_MILLISEC(elapsed);
}

/*
 * A call would wait longer for the clock than flakeid.max_clock_wait
 * allows.  ahead: how far the IDs before this call's run ahead of the
 * clock; wait: how long this call would still wait.  Demand alone keeps
 * the IDs at most flakeid.max_lead plus flakeid.max_clock_wait ahead of
 * the clock (no call reserves further), and a restart at most max_lead
 * plus a lease: further ahead, the clock itself went back.
 */
static void
ReportWaitTooLong(FlakeShared *s, int64 now, int64 ahead, int64 wait)
{
	int64		floor_ms = (int64) pg_atomic_read_u64(&s->promotion_floor);

	/* the floor after archive recovery is what the IDs wait for */
	if (floor_ms - now > flake_max_lead_ms)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("waiting %lld ms more for the promotion floor would exceed flakeid.max_clock_wait (%d ms)",
						(long long) wait, flake_max_clock_wait_ms),
				 errdetail("After the end of archive recovery IDs continue from %s, above every ID the old primary can have returned, "
						   "%lld ms ahead of the clock. They are returned only within flakeid.max_lead (%d ms) of the clock.",
						   timestamptz_to_str(FlakeTimestamp(&my_layout, floor_ms)),
						   (long long) (floor_ms - now), flake_max_lead_ms),
				 errhint("Call again once the clock is within flakeid.max_lead of the floor, "
						 "or raise flakeid.max_clock_wait to wait for it.")));
	if (ahead > (int64) flake_max_lead_ms + flake_max_clock_wait_ms + FLAKE_LEASE_MS)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("system clock is %lld ms behind the last flakeid issued",
						(long long) ahead),
				 errdetail("The clock moved backwards. flakeid.max_lead allows IDs %d ms ahead of the clock, "
						   "and waiting for the rest would take longer than flakeid.max_clock_wait (%d ms).",
						   flake_max_lead_ms, flake_max_clock_wait_ms),
				 errhint("Correct the system clock, or raise flakeid.max_clock_wait to wait for it.")));
	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("waiting %lld ms more for the system clock would exceed flakeid.max_clock_wait (%d ms)",
					(long long) wait, flake_max_clock_wait_ms),
			 errdetail("IDs are returned only within flakeid.max_lead (%d ms) of the clock, and the last ones run %lld ms ahead of it. "
					   "IDs run ahead of the clock when more are asked for than the node makes, "
					   "%lld per millisecond, or when the clock is set back.",
					   flake_max_lead_ms, (long long) ahead,
					   (long long) FlakeSeqPerMs(&my_layout)),
			 errhint("Ask for fewer IDs at a time, or raise flakeid.max_clock_wait.")));
}

/*
 * Before a call reserves the ticks next .. next + n - 1 (or after it did,
 * with next its first tick): how long it has to wait for the clock before
 * they are within flakeid.max_lead of it, which fails when that would take
 * it past flakeid.max_clock_wait in all.  Returns the wait in ms, or 0.
 */
static int64
FlakeClockWait(FlakeShared *s, uint64 next, int64 n, int64 now, FlakeWaited *waited)
{
	int64		wait = FlakeTickMs(&my_layout, next + n - 1) - now - flake_max_lead_ms;

	if (wait <= 0)
		return 0;
	if (WaitedMs(&waited->clock_since) + wait > flake_max_clock_wait_ms)
		ReportWaitTooLong(s, now, next > 0 ? FlakeTickMs(&my_layout, next - 1) - now : 0,
						  wait);
	return wait;
}

/*
 * Sleep on the latch for ms milliseconds, at most FLAKE_CLOCK_SLEEP_MAX_MS;
 * cancel and timeouts still work.  A call's first sleep counts it in
 * flakeid_status()'s waits, however many sleeps its wait takes.
 */
static void
FlakeSleep(FlakeShared *s, int64 ms, FlakeWaited *waited)
{
	if (!waited->counted)
	{
		pg_atomic_fetch_add_u64(&s->waits, 1);
		waited->counted = true;
	}
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) Max(Min(ms, FLAKE_CLOCK_SLEEP_MAX_MS), 1),
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Whether IDs up to end_ms may be returned under the lease: below the
 * durable lease end, and, while the server has synchronous standbys,
 * below the part of it that the standbys synchronous now have (see
 * confirm.c).  lease_end is the durable end, as read; standbys is
 * FlakeStandbyConfirms(), as read; now is the precise clock, or -1 for
 * "read it when needed": then the time-stamp counter, cheaper, is asked
 * first, where the last check was timed on it: cycles, where the call
 * read it already (before it reserved, as it read the clock), else 0.
 */
static pg_noinline bool
FlakeSyncCoversByClock(FlakeShared *s, int64 end_ms, int64 now)
{
	return FlakeConfirmedCovers(&s->confirm, end_ms, now >= 0 ? now : PreciseNow());
}

static inline bool
FlakeSyncCovers(FlakeShared *s, int64 end_ms, int64 now, uint64 cycles)
{
	return (now < 0 &&
			FlakeConfirmedCoversByCycles(&s->confirm, end_ms,
										 cycles != 0 ? cycles : FlakeCycles())) ||
		FlakeSyncCoversByClock(s, end_ms, now);
}

static inline bool
FlakeLeaseCoversMs(FlakeShared *s, int64 end_ms, int64 lease_end, bool standbys,
				   int64 now, uint64 cycles)
{
	return end_ms < lease_end &&
		(likely(!standbys) || FlakeSyncCovers(s, end_ms, now, cycles));
}

static void
ReportLeaseFailing(FlakeShared *s)
{
	errno = s->lease_errno;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not renew the flakeid time lease in file \"%s\": %m",
					FLAKE_STATE_FILE),
			 errdetail("IDs are issued only within a lease recorded on disk, so that none is issued twice after a restart."),
			 errhint("Make the file writable and make sure the disk has space.")));
}

/* The wait for the lease took longer than flakeid.max_lease_wait. */
static void
ReportLeaseWait(bool standbys)
{
	if (standbys)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("timed out waiting for the synchronous standbys to confirm the flakeid time lease"),
				 errdetail("While synchronous_standby_names names standbys, IDs are returned only under a lease they confirmed, "
						   "and none did within flakeid.max_lease_wait (%d ms).", flake_max_lease_wait_ms),
				 errhint("Check that the synchronous standbys are connected and streaming (pg_stat_replication), "
						 "or change synchronous_standby_names.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("timed out waiting for the flakeid time lease"),
			 errdetail("The lease worker did not make a longer lease durable within flakeid.max_lease_wait (%d ms).",
					   flake_max_lease_wait_ms),
			 errhint("Check the server log, the disk of the data directory, and the flakeid lease worker in pg_stat_activity.")));
}

/*
 * Wait, at most flakeid.max_lease_wait, until the lease worker has written
 * the state file that done() asks for, and fail with the file's error once
 * the worker tried and could not.
 */
static void
FlakeAwaitWritten(FlakeShared *s, bool (*done) (FlakeShared *s),
				  void (*report_failed) (FlakeShared *s))
{
	uint64		writes = pg_atomic_read_u64(&s->file_writes);
	instr_time	since;

	INSTR_TIME_SET_ZERO(since);
	(void) WaitedMs(&since);
	ConditionVariablePrepareToSleep(&s->lease_cv);
	while (!done(s))
	{
		bool		failed = s->lease_failing &&
			pg_atomic_read_u64(&s->file_writes) != writes;

		if (failed || WaitedMs(&since) > flake_max_lease_wait_ms)
		{
			ConditionVariableCancelSleep();
			if (s->lease_failing)
				report_failed(s);
			ReportLeaseWait(false);
		}
		FlakeWakeWorker(s);
		(void) ConditionVariableTimedSleep(&s->lease_cv, FLAKE_LEASE_POLL_MS,
										   PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}

static bool
FileWritten(FlakeShared *s)
{
	return FlakeWordStatus(pg_atomic_read_u32(&s->word)) != FLAKE_GEN_FILE_BEHIND;
}

/*
 * The newest lease was replayed from WAL while the state file could not be
 * written: wait for the lease worker to write it.
 */
static void
FlakeAwaitFileWritten(FlakeShared *s)
{
	FlakeAwaitWritten(s, FileWritten, ReportFileBehind);
}

static bool
FloorWritten(FlakeShared *s)
{
	return !FlakeFloorPending(s);
}

/*
 * The server ended archive recovery and the lease worker has yet to write
 * the floor of its new timeline: wait for it.
 */
static void
FlakeAwaitFloor(FlakeShared *s)
{
	FlakeAwaitWritten(s, FloorWritten, ReportLeaseFailing);
}

/*
 * Wait until the usable lease covers end_ms, or fail: the lease worker
 * makes a longer one durable, and confirmed where it has to be.
 */
static void
FlakeAwaitLease(FlakeShared *s, int64 end_ms, FlakeWaited *waited)
{
	uint64		wanted = pg_atomic_read_u64(&s->lease_wanted);
	instr_time	no_worker_since;

	while (wanted <= (uint64) end_ms &&
		   !pg_atomic_compare_exchange_u64(&s->lease_wanted, &wanted,
										   (uint64) end_ms + 1))
		;
	FlakeWakeWorker(s);

	INSTR_TIME_SET_ZERO(no_worker_since);
	ConditionVariablePrepareToSleep(&s->lease_cv);
	for (;;)
	{
		int64		lease_end = (int64) pg_atomic_read_u64(&s->lease_end);

		if (FlakeLeaseCoversMs(s, end_ms, lease_end, FlakeStandbyConfirms(), -1, 0))
			break;
		if (s->lease_failing && end_ms >= lease_end)
		{
			ConditionVariableCancelSleep();
			ReportLeaseFailing(s);
		}
		if (s->worker_latch != NULL)
			INSTR_TIME_SET_ZERO(no_worker_since);
		if ((s->worker_latch == NULL &&
			 WaitedMs(&no_worker_since) > FLAKE_WORKER_WAIT_MS) ||
			WaitedMs(&waited->lease_since) > flake_max_lease_wait_ms)
		{
			ConditionVariableCancelSleep();
			if (s->worker_latch == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("timed out waiting for the flakeid lease worker"),
						 errhint("Check the server log, and that max_worker_processes leaves room for the flakeid lease worker.")));
			ReportLeaseWait(end_ms < lease_end);
		}
		FlakeWakeWorker(s);
		(void) ConditionVariableTimedSleep(&s->lease_cv, FLAKE_LEASE_POLL_MS,
										   PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}

/*
 * After reserving: the ticks first .. up to end_ms are this call's, but
 * they may be further ahead of the clock than flakeid.max_lead (calls
 * before it reserved up to there), or past the usable lease.  Wait for
 * both, each within its bound.  Calls reserve in the order they come and
 * wait only for the clock, so no later call can keep an earlier one from
 * its IDs.
 */
static pg_noinline void
FlakeAwaitIssue(FlakeShared *s, uint64 first, int64 n, FlakeWaited *waited)
{
	int64		end_ms = FlakeTickMs(&my_layout, first + n - 1);

	for (;;)
	{
		int64		wait = FlakeClockWait(s, first, n, PreciseNow(), waited);
		int64		lease_end;

		if (wait > 0)
		{
			FlakeSleep(s, wait, waited);
			continue;
		}
		lease_end = (int64) pg_atomic_read_u64(&s->lease_end);
		if (!FlakeLeaseCoversMs(s, end_ms, lease_end, FlakeStandbyConfirms(), -1, 0))
		{
			FlakeAwaitLease(s, end_ms, waited);
			continue;
		}
		break;
	}
}

/*
 * Reserve n consecutive ticks.  While the IDs keep up with the clock, the
 * hot path is a clock read and one fetch-and-add on next_tick: the tick it
 * takes is kept unless it lies behind the clock, in which case it is
 * skipped (a gap, never a duplicate) and the call goes the careful way.
 * That way reads next_tick first, then starts the clock's millisecond with
 * a compare-and-swap, or takes the ticks with fetch-and-add once it knows
 * that it will not wait longer for them than flakeid.max_clock_wait; it
 * serves batches, and calls while the IDs are ahead of the clock.  Taking
 * the tick first moves next_tick's cache line to the caller once per call
 * instead of twice (a read, then the write), which is what decides the
 * rate when many backends call at once.
 *
 * The ticks are taken at once, in the order the calls come; a call whose
 * ticks lie further ahead of the clock than flakeid.max_lead then waits
 * for the clock before it returns them (see FlakeAwaitIssue).
 */
static inline void
FlakeReserve(FlakeShared *s, int64 n, FlakeIssue *issue)
{
	FlakeWaited waited;
	uint64		first;
	int64		now;
	int64		end_ms;
	int64		lease_end;
	uint64		cycles = 0;
	bool		standbys = false;
	bool		quick = (n == 1 && !ids_ahead);

	INSTR_TIME_SET_ZERO(waited.clock_since);
	INSTR_TIME_SET_ZERO(waited.lease_since);
	waited.counted = false;
	for (;;)
	{
		uint32		word = pg_atomic_read_u32(&s->word);
		uint64		next;
		uint64		now_tick;

		if (unlikely(word != my_word ||
					 my_settings_gen != flake_layout_settings_gen))
		{
			FlakeRefresh(s);
			continue;
		}
		if (likely(quick))
		{
			now = PreciseNow();
			first = pg_atomic_fetch_add_u64(&s->next_tick, 1);
			ids_ahead = FlakeTickMs(&my_layout, first) >= now + coarse_slack_ms;
			/* behind the clock: skipped, and the clock's millisecond started */
			if (unlikely(FlakeTickMs(&my_layout, first) < now))
			{
				quick = false;
				continue;
			}
		}
		else
		{
			next = pg_atomic_read_u64(&s->next_tick);
			standbys = FlakeStandbyConfirms();
			now = FlakeNow(s, next, standbys, &cycles);
			now_tick = FlakeTickOfMs(&my_layout, now);
			if (next < now_tick)
			{
				/* the clock moved on: start its millisecond */
				if (!pg_atomic_compare_exchange_u64(&s->next_tick, &next,
													now_tick + (uint64) n))
					continue;
				first = now_tick;
			}
			else
			{
				FlakeCheckRange(FlakeTickMs(&my_layout, next + n - 1));
				(void) FlakeClockWait(s, next, n, now, &waited);
				first = pg_atomic_fetch_add_u64(&s->next_tick, (uint64) n);
			}
		}
		/* a full barrier came before: the word is read afresh */
		if (likely(pg_atomic_read_u32(&s->word) == word))
			break;
		/* the node id or layout changed meanwhile: these ticks are skipped */
	}

	issue->first = first;
	issue->layout = my_layout;
	issue->node = FlakeWordNode(my_word);

	end_ms = FlakeTickMs(&my_layout, first + n - 1);
	FlakeCheckRange(end_ms);
	lease_end = (int64) pg_atomic_read_u64(&s->lease_end);
	/*
	 * The quick way read the precise clock, and reads whether the server
	 * has synchronous standbys now; the other read that before it
	 * reserved, and may have a lower bound of the clock.
	 */
	if (quick)
		standbys = FlakeStandbyConfirms();
	if (unlikely(end_ms - now > flake_max_lead_ms ||
				 !FlakeLeaseCoversMs(s, end_ms, lease_end, standbys,
									 quick ? now : -1, cycles)))
	{
		FlakeAwaitIssue(s, first, n, &waited);
		lease_end = (int64) pg_atomic_read_u64(&s->lease_end);
	}
	/* keep the lease ahead, so that no call has to wait for it */
	if (unlikely(end_ms + FLAKE_LEASE_MS / 2 >= lease_end))
		FlakeWakeWorker(s);
}

/* The generator, or an error where this server has none. */
static inline FlakeShared *
FlakeGenerator(void)
{
	static FlakeShared *generator = NULL;

	if (unlikely(generator == NULL))
	{
		generator = FlakeAttach();
		if (generator == NULL)
			ReportNoGenerator();
	}
	return generator;
}

/*
 * Reserve the next block for nextflake() with flakeid.cache above 1, and
 * take its first tick.  The block doubles, up to flakeid.cache, while one
 * millisecond uses it up, and halves when ticks are left over (see
 * FlakeDropBlock), so that a backend that calls seldom leaves few gaps.
 */
static pg_noinline void
FlakeNextBlock(FlakeShared *s, FlakeIssue *issue)
{
	bool		left_over = my_block.issue.first < my_block.end;
	int64		size;
	int64		mono;
	int64		ns_left;
	uint32		word;

	FlakeDropBlock();
	if (pg_atomic_read_u32(&s->word) != my_word ||
		my_settings_gen != flake_layout_settings_gen)
		FlakeRefresh(s);

	/*
	 * The monotonic clock first: measured from it, the rest of the wall
	 * clock's millisecond ends no later than the millisecond does.
	 */
	mono = FlakeMonotonicNs();
	(void) PreciseNowLeft(&ns_left);
	size = my_block.size;
	if (!left_over && mono < my_block.until)
		size *= 2;

	/*
	 * At most the setting, and never more than flakeid.max_lead holds.
	 * One tick while the IDs are ahead of the clock: then the sequence,
	 * not the shared word, bounds the rate, and ticks left over would only
	 * push the IDs further ahead.
	 */
	size = Min(size, (int64) flake_cache);
	size = Min(size, FlakeSeqPerMs(&my_layout) * (int64) flake_max_lead_ms);
	if (ids_ahead)
		size = 1;

	word = my_word;
	FlakeReserve(s, size, issue);
	FlakeCountIssued(1);

	my_block.issue = *issue;
	my_block.issue.first++;
	my_block.end = issue->first + (uint64) size;
	/* learnt again meanwhile: the block serves this call only */
	my_block.until = (my_word == word) ? mono + ns_left : 0;
	my_block.size = size;
}

/*
 * The next ID of this server.  With flakeid.cache above 1, the next tick
 * of this process's block, while it lasts and within its millisecond.
 */
Datum
nextflake(PG_FUNCTION_ARGS)
{
	FlakeShared *s = FlakeGenerator();
	FlakeIssue	issue;

	if (flake_cache > 1)
	{
		if (likely(my_block.issue.first < my_block.end &&
				   pg_atomic_read_u32(&s->word) == my_word &&
				   my_settings_gen == flake_layout_settings_gen &&
				   FlakeMonotonicNs() < my_block.until))
		{
			issue = my_block.issue;
			my_block.issue.first++;
			FlakeCountIssued(1);
		}
		else
			FlakeNextBlock(s, &issue);
	}
	else
	{
		FlakeDropBlock();
		FlakeReserve(s, 1, &issue);
		FlakeCountIssued(1);
	}
	PG_RETURN_INT64(FlakeIdOfTick(&issue.layout, issue.first, issue.node));
}

/* Refuse a reservation that is too large, before anything is reserved. */
static void
CheckReservationSize(int32 n, const FlakeLayout *layout)
{
	int64		per_ms = FlakeSeqPerMs(layout);

	if (n > flake_max_batch && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot reserve %d flakeid values in one call", n),
				 errdetail("flakeid.max_batch allows roles without superuser at most %d per call.",
						   flake_max_batch),
				 errhint("Request fewer IDs per call, or ask a superuser to raise flakeid.max_batch.")));
	if ((n + per_ms - 1) / per_ms > flake_max_lead_ms)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot reserve %d flakeid values in one call", n),
				 errdetail("With flakeid.node_bits = %d a node makes %lld IDs per millisecond, "
						   "and flakeid.max_lead (%d ms) allows at most %lld at once.",
						   layout->node_bits, (long long) per_ms,
						   flake_max_lead_ms, (long long) (per_ms * flake_max_lead_ms)),
				 errhint("Request fewer IDs per call, or raise flakeid.max_lead.")));
}

/*
 * n IDs reserved in one step, ascending.  They are made from the ticks,
 * the layout and the node id of the reservation, so a row fetched later
 * (from a cursor, say) is the ID that was reserved for it.
 */
Datum
nextflakes(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	FlakeIssue *issue;

	if (SRF_IS_FIRSTCALL())
	{
		int32		n = PG_GETARG_INT32(0);
		FlakeShared *s;

		if (n < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("number of flakeid values must not be negative")));
		funcctx = SRF_FIRSTCALL_INIT();
		issue = MemoryContextAllocZero(funcctx->multi_call_memory_ctx,
									   sizeof(FlakeIssue));
		if (n > 0)
		{
			s = FlakeGenerator();
			if (pg_atomic_read_u32(&s->word) != my_word ||
				my_settings_gen != flake_layout_settings_gen)
				FlakeRefresh(s);
			CheckReservationSize(n, &my_layout);
			/* this process's IDs keep rising: none from the block after */
			FlakeDropBlock();
			FlakeReserve(s, n, issue);
			FlakeCountIssued(n);
		}
		funcctx->user_fctx = issue;
		funcctx->max_calls = n;
	}

	funcctx = SRF_PERCALL_SETUP();
	issue = funcctx->user_fctx;
	if (funcctx->call_cntr < funcctx->max_calls)
	{
		/* before SRF_RETURN_NEXT, which advances call_cntr */
		int64		id = FlakeIdOfTick(&issue->layout,
									   issue->first + funcctx->call_cntr,
									   issue->node);

		SRF_RETURN_NEXT(funcctx, Int64GetDatum(id));
	}
	SRF_RETURN_DONE(funcctx);
}

/* The name of a status, as flakeid_status() shows it. */
static const char *
StatusName(FlakeShared *s, FlakeStatus status)
{
	switch (status)
	{
		case FLAKE_GEN_READY:
			if (RecoveryInProgress())
				return "recovery";
			return s->lease_failing ? "lease failing" : "ready";
		case FLAKE_GEN_CHANGING:
			return "changing";
		case FLAKE_GEN_NOT_SET_UP:
			return "not set up";
		case FLAKE_GEN_NODE_UNSET:
			return "node id not set";
		case FLAKE_GEN_LAYOUT_CHANGED:
			return "layout changed";
		case FLAKE_GEN_LAYOUT_INVALID:
			return "layout setting invalid";
		case FLAKE_GEN_FILE_DAMAGED:
			return "state file damaged";
		case FLAKE_GEN_FILE_UNREADABLE:
			return "state file unreadable";
		case FLAKE_GEN_FILE_BEHIND:
			return "state file behind";
	}
	return "unknown";
}

/* Set the column of a result row that has the given name. */
static void
SetColumn(TupleDesc tupdesc, Datum *values, bool *nulls, const char *name,
		  Datum value, bool isnull)
{
	for (int i = 0; i < tupdesc->natts; i++)
	{
		if (strcmp(NameStr(TupleDescAttr(tupdesc, i)->attname), name) == 0)
		{
			values[i] = value;
			nulls[i] = isnull;
			return;
		}
	}
	elog(ERROR, "flakeid_status() has no column \"%s\"", name);
}

/* What an operator wants to know about this server's generator. */
Datum
flakeid_status(PG_FUNCTION_ARGS)
{
	FlakeShared *s = FlakeGenerator();
	TupleDesc	tupdesc;
	Datum	   *values;
	bool	   *nulls;
	FlakeLayout layout;
	uint32		word;
	uint64		next;
	int64		last_id = 0,
				last_ms = 0,
				issued = 0;
	bool		none;

	FlakeCheckMonitor("flakeid_status");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values = palloc0(tupdesc->natts * sizeof(Datum));
	nulls = palloc(tupdesc->natts * sizeof(bool));
	memset(nulls, true, tupdesc->natts * sizeof(bool));

	word = FlakeSnapshot(s, &layout);
	next = pg_atomic_read_u64(&s->next_tick);
	for (int i = 0; i < s->nslots; i++)
		issued += (int64) pg_atomic_read_u64(&s->slots[i].issued);
	none = (issued == 0 || next == 0);
	if (!none)
	{
		last_ms = FlakeTickMs(&layout, next - 1);
		last_id = FlakeIdOfTick(&layout, next - 1, FlakeWordNode(word));
	}

#define COLUMN(name, value, isnull) \
	SetColumn(tupdesc, values, nulls, (name), (value), (isnull))
	COLUMN("state", CStringGetTextDatum(StatusName(s, FlakeWordStatus(word))), false);
	COLUMN("node_id", Int32GetDatum(FlakeWordNode(word)),
		   !FlakeNodeFits(&layout, s->node_id));
	COLUMN("node_bits", Int32GetDatum(layout.node_bits), false);
	COLUMN("epoch", TimestampTzGetDatum(FlakeTimestamp(&layout, 0)), false);
	COLUMN("last_id", Int64GetDatum(last_id), none);
	COLUMN("last_time", TimestampTzGetDatum(FlakeTimestamp(&layout, last_ms)), none);
	COLUMN("lead_ms", Int64GetDatum(Max(last_ms - FlakeClockMs(&layout), 0)), none);
	COLUMN("lease_end",
		   TimestampTzGetDatum(FlakeTimestamp(&layout,
											  (int64) pg_atomic_read_u64(&s->lease_end))),
		   false);
	COLUMN("issued", Int64GetDatum(issued), false);
	COLUMN("waits", Int64GetDatum((int64) pg_atomic_read_u64(&s->waits)), false);
	COLUMN("clock_steps_back",
		   Int64GetDatum((int64) pg_atomic_read_u64(&s->clock_steps_back)), false);
	COLUMN("started", TimestampTzGetDatum(s->started), false);
#undef COLUMN

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
