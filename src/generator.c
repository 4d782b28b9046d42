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
 * node id, generation) before and after: when a node id or layout was
 * adopted in between, the ticks are dropped and the call starts over.
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
#include "guc.h"
#include "layout.h"
#include "mode.h"
#include "shmem.h"
#include "worker.h"

PG_FUNCTION_INFO_V1(nextflake);
PG_FUNCTION_INFO_V1(nextflakes);
PG_FUNCTION_INFO_V1(flakeid_status);

/* The longest one sleep for the clock lasts before the call looks again. */
#define FLAKE_CLOCK_SLEEP_MAX_MS	100

/* How often a call waiting for the lease looks at the lease worker. */
#define FLAKE_LEASE_POLL_MS		100

/* The longest a call waits for a lease worker that is not running. */
#define FLAKE_WORKER_WAIT_MS	10000

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

/* Why the generator does not issue IDs, as an error. */
static void
ReportNotReady(FlakeShared *s, FlakeStatus status)
{
	switch (status)
	{
		case FLAKE_GEN_READY:
		case FLAKE_GEN_CHANGING:
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
 * Without preloading, this session's layout settings must still be the
 * ones the generator started with: a reload that changes them takes effect
 * only at a restart.
 */
static void
CheckSettingsUnchanged(FlakeShared *s)
{
	FlakeLayout mine;
	const char *bad;

	if (FlakeLayoutFixed())
		return;
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

/*
 * Learn the generator's word and layout again: the first call of this
 * process, or after a change.  Fails when it does not generate; waits out
 * a change in progress.
 */
static pg_noinline void
FlakeRefresh(FlakeShared *s)
{
	FlakeLayout layout;
	uint32		word = FlakeSnapshot(s, &layout);

	if (RecoveryInProgress())
		ReportRecovery();
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

static void
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

static void
ReportClockBehind(int64 behind)
{
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("system clock is %lld ms behind the last flakeid issued",
					(long long) behind),
			 errdetail("The clock moved backwards. flakeid.max_lead allows IDs %d ms ahead of the clock, "
					   "and waiting for the rest would take longer than flakeid.max_clock_wait (%d ms).",
					   flake_max_lead_ms, flake_max_clock_wait_ms),
			 errhint("Correct the system clock, or raise flakeid.max_clock_wait to wait for it.")));
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
 * The clock, for a call that finds next_tick as it is.  While the IDs are
 * ahead of even the precise clock the clock cannot change the next one,
 * and the cheaper coarse clock says so; whether to try it is guessed from
 * this process's last call.
 */
static inline int64
FlakeNow(uint64 next)
{
	int64		next_ms = FlakeTickMs(&my_layout, next);
	int64		now;

	if (ids_ahead)
	{
		now = FlakeCoarseClockMs(&my_layout);
		if (next_ms >= now + coarse_slack_ms && FlakeClockInRange(now))
			return now;
	}
	now = PreciseNow();
	ids_ahead = next_ms >= now + coarse_slack_ms;
	return now;
}

/* Sleep on the latch for ms milliseconds; cancel and timeouts still work. */
static void
FlakeSleep(FlakeShared *s, int64 ms)
{
	pg_atomic_fetch_add_u64(&s->waits, 1);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) Max(Min(ms, FLAKE_CLOCK_SLEEP_MAX_MS), 1),
					 PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Before reserving: the ticks next .. next + n - 1 would be further ahead
 * of the clock than flakeid.max_lead allows.  Sleep a while for the clock.
 * When even the IDs already issued are that far ahead, the clock was set
 * back: wait at most flakeid.max_clock_wait in all, then fail.
 */
static pg_noinline void
FlakeWaitForLead(FlakeShared *s, uint64 next, int64 n, instr_time *since)
{
	int64		now = PreciseNow();
	int64		end_ms = FlakeTickMs(&my_layout, next + n - 1);
	int64		behind = FlakeTickMs(&my_layout, next - 1) - now;
	int64		wait = end_ms - now - flake_max_lead_ms;

	if (end_ms > FLAKE_MAX_MS)
		ReportRangeUsedUp(&my_layout);
	if (wait <= 0)
		return;
	if (behind > flake_max_lead_ms)
	{
		instr_time	elapsed;

		if (INSTR_TIME_IS_ZERO(*since))
			INSTR_TIME_SET_CURRENT(*since);
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, *since);
		if (INSTR_TIME_GET_MILLISEC(elapsed) + wait > flake_max_clock_wait_ms)
			ReportClockBehind(behind);
	}
	FlakeSleep(s, wait);
}

/* Wait until the durable lease covers end_ms, or fail. */
static void
FlakeAwaitLease(FlakeShared *s, int64 end_ms)
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
	while (pg_atomic_read_u64(&s->lease_end) <= (uint64) end_ms)
	{
		if (s->lease_failing)
		{
			ConditionVariableCancelSleep();
			errno = s->lease_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not renew the flakeid time lease in file \"%s\": %m",
							FLAKE_STATE_FILE),
					 errdetail("IDs are issued only within a lease recorded on disk, so that none is issued twice after a restart."),
					 errhint("Make the file writable and make sure the disk has space.")));
		}
		if (s->worker_latch != NULL)
			INSTR_TIME_SET_ZERO(no_worker_since);
		else
		{
			instr_time	elapsed;

			if (INSTR_TIME_IS_ZERO(no_worker_since))
				INSTR_TIME_SET_CURRENT(no_worker_since);
			INSTR_TIME_SET_CURRENT(elapsed);
			INSTR_TIME_SUBTRACT(elapsed, no_worker_since);
			if (INSTR_TIME_GET_MILLISEC(elapsed) > FLAKE_WORKER_WAIT_MS)
			{
				ConditionVariableCancelSleep();
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("timed out waiting for the flakeid lease worker"),
						 errhint("Check the server log, and that max_worker_processes leaves room for the flakeid lease worker.")));
			}
		}
		FlakeWakeWorker(s);
		(void) ConditionVariableTimedSleep(&s->lease_cv, FLAKE_LEASE_POLL_MS,
										   PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}

/*
 * After reserving: ticks up to end_ms are this call's, but they may be
 * further ahead of the clock than flakeid.max_lead (other calls reserved
 * at the same time) or past the durable lease.  Wait for both.
 */
static pg_noinline void
FlakeAwaitIssue(FlakeShared *s, int64 end_ms)
{
	instr_time	since;
	int64		prev = PG_INT64_MIN;

	INSTR_TIME_SET_ZERO(since);
	for (;;)
	{
		int64		now = PreciseNow();
		int64		wait = end_ms - now - flake_max_lead_ms;

		if (wait > 0)
		{
			/* a clock that steps back meanwhile is waited for only so long */
			if (now < prev || !INSTR_TIME_IS_ZERO(since))
			{
				instr_time	elapsed;

				if (INSTR_TIME_IS_ZERO(since))
					INSTR_TIME_SET_CURRENT(since);
				INSTR_TIME_SET_CURRENT(elapsed);
				INSTR_TIME_SUBTRACT(elapsed, since);
				if (INSTR_TIME_GET_MILLISEC(elapsed) + wait > flake_max_clock_wait_ms)
					ReportClockBehind(end_ms - now);
			}
			prev = now;
			FlakeSleep(s, wait);
			continue;
		}
		if ((int64) pg_atomic_read_u64(&s->lease_end) <= end_ms)
		{
			FlakeAwaitLease(s, end_ms);
			continue;
		}
		break;
	}
}

/*
 * Reserve n consecutive ticks.  While the IDs keep up with the clock, the
 * hot path is a clock read and one fetch-and-add on next_tick: the tick it
 * takes is kept when it lies between the clock and the lead bound, and
 * skipped (a gap, never a duplicate) otherwise, and the call goes the
 * careful way.  That way reads next_tick first, then starts the clock's
 * millisecond with a compare-and-swap, waits for the clock, or takes the
 * ticks with fetch-and-add; it serves batches, and calls while the IDs are
 * ahead of the clock.  Taking the tick first moves next_tick's cache line
 * to the caller once per call instead of twice (a read, then the write),
 * which is what decides the rate when many backends call at once.
 */
static inline void
FlakeReserve(FlakeShared *s, int64 n, FlakeIssue *issue)
{
	instr_time	since;
	uint64		first;
	int64		now;
	int64		end_ms;
	int64		lease_end;
	bool		quick = (n == 1 && !ids_ahead);

	INSTR_TIME_SET_ZERO(since);
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
			int64		first_ms;

			now = PreciseNow();
			first = pg_atomic_fetch_add_u64(&s->next_tick, 1);
			first_ms = FlakeTickMs(&my_layout, first);
			ids_ahead = first_ms >= now + coarse_slack_ms;

			/*
			 * Kept: not behind the clock, and within the lead bound, or the
			 * first tick past it (the wait for it below is short).
			 * Skipped: behind the clock, which has to be caught up with, or
			 * further ahead than the bound, where the careful way tells a
			 * clock set back from a busy millisecond.
			 */
			if (unlikely(first_ms < now ||
						 (first_ms - now > flake_max_lead_ms &&
						  FlakeTickMs(&my_layout, first - 1) - now > flake_max_lead_ms)))
			{
				quick = false;
				continue;
			}
		}
		else
		{
			next = pg_atomic_read_u64(&s->next_tick);
			now = FlakeNow(next);
			now_tick = FlakeTickOfMs(&my_layout, now);
			if (next < now_tick)
			{
				/* the clock moved on: start its millisecond */
				if (!pg_atomic_compare_exchange_u64(&s->next_tick, &next,
													now_tick + (uint64) n))
					continue;
				first = now_tick;
			}
			else if (likely(FlakeTickMs(&my_layout, next + n - 1) - now <=
							flake_max_lead_ms))
				first = pg_atomic_fetch_add_u64(&s->next_tick, (uint64) n);
			else
			{
				FlakeWaitForLead(s, next, n, &since);
				continue;
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
	if (unlikely(end_ms > FLAKE_MAX_MS))
		ReportRangeUsedUp(&my_layout);
	lease_end = (int64) pg_atomic_read_u64(&s->lease_end);
	if (unlikely(end_ms - now > flake_max_lead_ms || end_ms >= lease_end))
	{
		FlakeAwaitIssue(s, end_ms);
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
			FlakeLayout layout;

			s = FlakeGenerator();
			(void) FlakeSnapshot(s, &layout);
			CheckReservationSize(n, &layout);
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
