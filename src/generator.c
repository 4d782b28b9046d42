/*-------------------------------------------------------------------------
 *
 * generator.c
 *	  nextflake(), nextflakes() and flakeid_status(): the shared generator.
 *
 * One 64-bit word in shared memory holds the last issued ID.  A call reads
 * the clock, computes the next ID from that word and installs it with a
 * compare-and-swap: no lock, no I/O, no allocation.  The slow paths (the
 * clock behind the last ID, the lead bound reached, the time lease running
 * out) sleep on a latch and try again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "access/htup_details.h"
#include "access/twophase.h"
#include "access/xlog.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "flakeid.h"
#include "state.h"

PG_FUNCTION_INFO_V1(nextflake);
PG_FUNCTION_INFO_V1(nextflakes);
PG_FUNCTION_INFO_V1(flakeid_status);

#if PG_VERSION_NUM >= 170000
#define FlakeMyProcNumber() MyProcNumber
#else
#define FlakeMyProcNumber() (MyProc->pgprocno)
#endif

FlakeShared *flake_shared = NULL;

/* Whether this library was preloaded; else the state is in a DSM segment. */
bool		flake_preloaded = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* This process's counter of issued IDs. */
static FlakeSlot *my_slot = NULL;

/*
 * This process has seen the generator ready and recovery over; neither can
 * go back without a restart, so the check is made once.
 */
static bool my_ready = false;

/*
 * How far the precise clock may be ahead of the coarse one, which the
 * kernel updates once a tick: a few ticks, to be safe.  Set on first use.
 */
static int64 coarse_slack_ms = -1;

/* Whether this process's last call found the IDs ahead of the clock. */
static bool ids_ahead = false;

static int
FlakeSlotCount(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
FlakeShmemSize(void)
{
	return add_size(offsetof(FlakeShared, slots),
					mul_size(FlakeSlotCount(), sizeof(FlakeSlot)));
}

static void
FlakeShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(FlakeShmemSize());
}

/* Initialise the shared state and read the state file. */
static void
FlakeInitShared(void *ptr)
{
	FlakeShared *s = (FlakeShared *) ptr;

	memset(s, 0, FlakeShmemSize());
	pg_atomic_init_u64(&s->last, 0);
	pg_atomic_init_u64(&s->lease_end, 0);
	pg_atomic_init_u32(&s->state, FLAKE_READY);
	pg_atomic_init_u32(&s->renew_asked, 0);
	pg_atomic_init_u64(&s->lease_wanted, 0);
	pg_atomic_init_u64(&s->waits, 0);
	pg_atomic_init_u64(&s->clock_steps_back, 0);
	pg_atomic_init_u32(&s->worker_launching, 0);
	ConditionVariableInit(&s->lease_cv);
	s->worker_latch = NULL;
	LWLockInitialize(&s->lock, LWLockNewTrancheId());
	s->layout = flake_layout;
	s->started = GetCurrentTimestamp();
	s->nslots = FlakeSlotCount();
	for (int i = 0; i < s->nslots; i++)
		pg_atomic_init_u64(&s->slots[i].issued, 0);
	FlakeStateLoad(s);
}

/* Set up the shared state in the postmaster, when preloaded. */
static void
FlakeShmemStartup(void)
{
	bool		found;
	FlakeShared *s;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	s = ShmemInitStruct("flakeid", FlakeShmemSize(), &found);
	if (!found)
		FlakeInitShared(s);
	flake_shared = s;
	LWLockRelease(AddinShmemInitLock);
	LWLockRegisterTranche(s->lock.tranche, "flakeid");
}

/*
 * The shared state.  When the library was preloaded it is in the main shared
 * memory; without preloading, PostgreSQL 17 and later keep it in a segment
 * of the dynamic shared memory registry, and older versions have none.
 */
FlakeShared *
FlakeGetShared(void)
{
#if PG_VERSION_NUM >= 170000
	if (unlikely(flake_shared == NULL))
	{
		bool		found;
		FlakeShared *s;

		s = GetNamedDSMSegment("flakeid", FlakeShmemSize(), FlakeInitShared, &found);
		LWLockRegisterTranche(s->lock.tranche, "flakeid");
		flake_shared = s;
	}
#endif
	return flake_shared;
}

void
FlakeInstallShmemHooks(void)
{
	flake_preloaded = true;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = FlakeShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = FlakeShmemStartup;
}

/*
 * Make the next ID at least floor_ms.  Only while nothing is generated:
 * at startup and when a new layout is accepted.
 */
void
FlakeSetFloor(FlakeShared *s, int64 floor_ms)
{
	floor_ms = Max(floor_ms, 1);
	/* ms floor_ms - 1 with every low bit set: the next ID is at floor_ms */
	pg_atomic_write_u64(&s->last, (uint64) ((floor_ms << FLAKE_LOW_BITS) - 1));
	pg_atomic_write_u64(&s->lease_end, (uint64) floor_ms);
}

/* Milliseconds since the flakeid epoch, by one of the system's clocks. */
static inline int64
ReadClockMs(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
		flake_layout.epoch_ms;
}

/* The precise wall clock. */
static inline int64
ClockMs(void)
{
	return ReadClockMs(CLOCK_REALTIME);
}

/* The same, for the other files. */
int64
FlakeClockMs(void)
{
	return ClockMs();
}

/* The coarse clock: cheaper, and behind the precise one by < slack. */
static inline int64
CoarseClockMs(void)
{
	return ReadClockMs(CLOCK_REALTIME_COARSE);
}

static void
SetCoarseSlack(void)
{
	struct timespec res;

	if (clock_getres(CLOCK_REALTIME_COARSE, &res) != 0)
		coarse_slack_ms = PG_INT64_MAX / 4; /* never trust it */
	else
		coarse_slack_ms = 4 * ((int64) res.tv_sec * 1000 +
							   res.tv_nsec / 1000000 + 1);
}

/* Ask the lease worker to renew the lease now. */
void
FlakeWakeWorker(FlakeShared *s)
{
	Latch	   *latch = s->worker_latch;

	if (latch == NULL)
	{
		/* a preloaded server starts its worker itself */
		if (!flake_preloaded)
			FlakeLaunchWorker(s);
		return;
	}
	if (pg_atomic_read_u32(&s->renew_asked) != 0 ||
		pg_atomic_exchange_u32(&s->renew_asked, 1) != 0)
		return;
	SetLatch(latch);
}

/*
 * The tick of the ID after last for this node: the next sequence number, or
 * the next millisecond when the node changed, and never before the clock.
 */
static inline int64
NextTick(const FlakeLayout *layout, int64 last, int32 node, int64 now)
{
	int64		tick;

	if (FlakeNode(layout, last) == node)
		tick = FlakeTick(layout, last) + 1;
	else
		tick = (FlakeMs(last) + 1) << FlakeSeqBits(layout);
	if (now > 0)
		tick = Max(tick, now << FlakeSeqBits(layout));
	return tick;
}

/* Why this server cannot generate, as an error. */
static void
ReportCannotGenerate(void)
{
	FlakeShared *s = flake_shared;

	if (s == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flakeid must be loaded via \"shared_preload_libraries\" to generate IDs"),
				 errhint("Add flakeid to \"shared_preload_libraries\" in postgresql.conf, "
						 "set flakeid.node_id, and restart the server.")));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot generate flakeid values during recovery"),
				 errdetail("A standby shares its primary's node id, so only the primary generates IDs."),
				 errhint("Call nextflake() on the primary server.")));
	if (flake_layout.node_bits != s->layout.node_bits ||
		flake_layout.epoch_ms != s->layout.epoch_ms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flakeid layout settings changed while the server was running"),
				 errdetail("The generator started with flakeid.node_bits = %d and flakeid.epoch = %s.",
						   s->layout.node_bits,
						   timestamptz_to_str(FlakeTimestamp(&s->layout, 0))),
				 errhint("Restore the settings and reload, or restart the server; "
						 "preloading flakeid fixes the layout for the life of the server.")));
	if (pg_atomic_read_u32(&s->state) == FLAKE_STATE_UNREADABLE)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flakeid state file \"%s\" is damaged", FLAKE_STATE_FILE),
				 errdetail("Neither copy of the time lease in it is valid, so the last ID issued is unknown."),
				 errhint("Once the system clock is past every ID this server issued, remove the file and restart the server.")));
	if (pg_atomic_read_u32(&s->state) == FLAKE_LAYOUT_CHANGED)
	{
		char		detail[256];

		if (s->recorded.node_bits != s->layout.node_bits)
			snprintf(detail, sizeof(detail),
					 "flakeid.node_bits was %d and is now %d.",
					 s->recorded.node_bits, s->layout.node_bits);
		else
		{
			char	   *was = pstrdup(timestamptz_to_str(FlakeTimestamp(&s->recorded, 0)));
			char	   *now = pstrdup(timestamptz_to_str(FlakeTimestamp(&s->layout, 0)));

			snprintf(detail, sizeof(detail),
					 "flakeid.epoch was %s and is now %s.", was, now);
		}
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flakeid layout has changed since this server last generated IDs"),
				 errdetail_internal("%s", detail),
				 errhint("Restore the previous setting and restart, or, if every server whose IDs meet uses the new layout, "
						 "run SELECT flakeid_accept_layout() as a superuser.")));
	}
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

static void
ReportClockRange(int64 now)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("system clock is outside the range of flakeid timestamps"),
			 errdetail(now < 0 ?
					   "The clock reads before flakeid.epoch (%s)." :
					   "The 41-bit time field counted from flakeid.epoch (%s) is used up.",
					   FlakeEpochString()),
			 errhint("Check the system clock and flakeid.epoch.")));
}

/* Sleep on the latch for ms milliseconds; cancel and timeouts still work. */
static void
FlakeSleep(FlakeShared *s, long ms)
{
	pg_atomic_fetch_add_u64(&s->waits, 1);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 Max(ms, 1), PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* Wait until the lease covers end_ms, or fail. */
static void
FlakeAwaitLease(FlakeShared *s, int64 end_ms)
{
	uint64		wanted = pg_atomic_read_u64(&s->lease_wanted);
	instr_time	start,
				now;

	while (wanted <= (uint64) end_ms &&
		   !pg_atomic_compare_exchange_u64(&s->lease_wanted, &wanted,
										   (uint64) end_ms + 1))
		;
	FlakeWakeWorker(s);

	INSTR_TIME_SET_CURRENT(start);
	ConditionVariablePrepareToSleep(&s->lease_cv);
	while (pg_atomic_read_u64(&s->lease_end) <= (uint64) end_ms)
	{
		if (s->lease_failing)
		{
			int			save_errno = s->lease_errno;

			ConditionVariableCancelSleep();
			errno = save_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not renew the flakeid time lease in file \"%s\": %m",
							FLAKE_STATE_FILE),
					 errdetail("IDs are issued only within a lease recorded on disk, so that none is issued twice after a restart."),
					 errhint("Make the file writable and make sure the disk has space.")));
		}
		INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (INSTR_TIME_GET_MILLISEC(now) > FLAKE_LEASE_WAIT_MS)
		{
			ConditionVariableCancelSleep();
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("timed out waiting for the flakeid lease worker"),
					 errhint("Check the server log, and that max_worker_processes leaves room for the flakeid lease worker.")));
		}
		FlakeWakeWorker(s);
		(void) ConditionVariableTimedSleep(&s->lease_cv, 100, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}

/*
 * The slow path: the reservation [first tick, end_ms] could not be issued
 * now.  Fail, or wait for the clock or the lease; the caller then retries.
 * waited_ms counts this call's waits for a clock that was set back.
 */
static pg_noinline void
FlakeSlowPath(FlakeShared *s, int64 last, int64 n, int64 end_ms, int64 now,
			  instr_time *start)
{
	int64		behind = FlakeMs(last) - now;
	int64		cap = (int64) FlakeMaxSeq(&flake_layout) + 1;

	if (now < 0 || end_ms > FLAKE_MAX_MS)
		ReportClockRange(now);
	if ((n + cap - 1) / cap > flake_max_lead_ms)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cannot reserve %lld flakeid values in one call", (long long) n),
				 errdetail("With flakeid.node_bits = %d a node makes %lld IDs per millisecond, "
						   "and flakeid.max_lead (%d ms) allows at most %lld at once.",
						   flake_layout.node_bits, (long long) cap,
						   flake_max_lead_ms, (long long) (cap * flake_max_lead_ms)),
				 errhint("Request fewer IDs per call, or raise flakeid.max_lead.")));

	if (end_ms - now > flake_max_lead_ms)
	{
		int64		wait = end_ms - now - flake_max_lead_ms;

		if (behind > flake_max_lead_ms)
		{
			/* The clock was set back: wait only as long as allowed. */
			instr_time	elapsed;

			if (INSTR_TIME_IS_ZERO(*start))
				INSTR_TIME_SET_CURRENT(*start);
			INSTR_TIME_SET_CURRENT(elapsed);
			INSTR_TIME_SUBTRACT(elapsed, *start);
			if (INSTR_TIME_GET_MILLISEC(elapsed) + wait > flake_max_clock_wait_ms)
				ReportClockBehind(behind);
		}
		FlakeSleep(s, (long) Min(wait, 100));
		return;
	}
	FlakeAwaitLease(s, end_ms);
}

/*
 * Reserve n consecutive IDs for node and return the tick of the first.
 * The hot path is the first pass of the loop.
 */
static int64
FlakeReserve(int64 n, int32 node)
{
	FlakeShared *s = flake_shared;
	const FlakeLayout *layout = &flake_layout;
	instr_time	start;
	uint64		last;

	if (unlikely(!my_ready))
	{
		if (s == NULL || RecoveryInProgress() ||
			pg_atomic_read_u32(&s->state) != FLAKE_READY)
			ReportCannotGenerate();
		SetCoarseSlack();
		my_ready = true;
	}
	/* without preloading, a reload may change the layout settings */
	if (unlikely(!flake_preloaded &&
				 (flake_layout.node_bits != s->layout.node_bits ||
				  flake_layout.epoch_ms != s->layout.epoch_ms)))
		ReportCannotGenerate();

	INSTR_TIME_SET_ZERO(start);
	last = pg_atomic_read_u64(&s->last);
	for (;;)
	{
		int64		now;
		int64		first,
					end,
					end_ms,
					lease_end;

		/*
		 * When the last ID is ahead of even the precise clock, the clock
		 * cannot move the next one, and the coarse clock, cheaper to read,
		 * tells that.  Whether to try it is guessed from the last call.
		 */
		if (ids_ahead)
		{
			now = CoarseClockMs();
			if (FlakeMs((int64) last) < now + coarse_slack_ms)
			{
				now = ClockMs();
				ids_ahead = false;
			}
		}
		else
		{
			now = ClockMs();
			ids_ahead = FlakeMs((int64) last) >= now + coarse_slack_ms;
		}
		first = NextTick(layout, (int64) last, node, now);
		end = first + n - 1;
		end_ms = FlakeTickMs(layout, end);
		lease_end = (int64) pg_atomic_read_u64(&s->lease_end);

		if (unlikely(now < 0 || end_ms - now > flake_max_lead_ms ||
					 end_ms >= lease_end))
		{
			/* decide on the precise clock */
			now = ClockMs();
			first = NextTick(layout, (int64) last, node, now);
			end = first + n - 1;
			end_ms = FlakeTickMs(layout, end);
		}
		if (unlikely(now < 0 || end_ms - now > flake_max_lead_ms ||
					 end_ms >= lease_end))
		{
			FlakeSlowPath(s, (int64) last, n, end_ms, now, &start);
			last = pg_atomic_read_u64(&s->last);
			continue;
		}
		if (pg_atomic_compare_exchange_u64(&s->last, &last,
										   (uint64) FlakeFromTick(layout, end, node)))
		{
			if (unlikely(end_ms + FLAKE_LEASE_MS / 2 >= lease_end))
				FlakeWakeWorker(s);
			pg_atomic_write_u64(&my_slot->issued,
								pg_atomic_read_u64(&my_slot->issued) + n);
			return first;
		}
	}
}

/* Find this process's counter once. */
static inline void
FlakeAttach(void)
{
	if (unlikely(my_slot == NULL) && FlakeGetShared() != NULL)
	{
		Assert(FlakeMyProcNumber() < flake_shared->nslots);
		my_slot = &flake_shared->slots[FlakeMyProcNumber()];
	}
}

/* The next ID of this server. */
Datum
nextflake(PG_FUNCTION_ARGS)
{
	int32		node = flake_node_id;

	FlakeAttach();
	PG_RETURN_INT64(FlakeFromTick(&flake_layout, FlakeReserve(1, node), node));
}

typedef struct NextFlakesState
{
	int64		first;
	int32		node;
} NextFlakesState;

/* n IDs reserved in one step, ascending. */
Datum
nextflakes(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	NextFlakesState *state;

	if (SRF_IS_FIRSTCALL())
	{
		int32		n = PG_GETARG_INT32(0);

		if (n < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("number of flakeid values must not be negative")));
		funcctx = SRF_FIRSTCALL_INIT();
		state = MemoryContextAllocZero(funcctx->multi_call_memory_ctx,
									   sizeof(NextFlakesState));
		state->node = flake_node_id;
		if (n > 0)
		{
			FlakeAttach();
			state->first = FlakeReserve(n, state->node);
		}
		funcctx->user_fctx = state;
		funcctx->max_calls = n;
	}

	funcctx = SRF_PERCALL_SETUP();
	state = funcctx->user_fctx;
	if (funcctx->call_cntr < funcctx->max_calls)
	{
		/* before SRF_RETURN_NEXT, which advances call_cntr */
		int64		id = FlakeFromTick(&flake_layout,
									   state->first + (int64) funcctx->call_cntr,
									   state->node);

		SRF_RETURN_NEXT(funcctx, Int64GetDatum(id));
	}
	SRF_RETURN_DONE(funcctx);
}

/* What an operator wants to know about this server's generator. */
Datum
flakeid_status(PG_FUNCTION_ARGS)
{
	FlakeShared *s = FlakeGetShared();
	TupleDesc	tupdesc;
	Datum		values[12];
	bool		nulls[12] = {0};
	int64		last,
				issued = 0,
				lease_end;
	const char *state;

	if (s == NULL)
		ReportCannotGenerate();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	last = (int64) pg_atomic_read_u64(&s->last);
	lease_end = (int64) pg_atomic_read_u64(&s->lease_end);
	for (int i = 0; i < s->nslots; i++)
		issued += (int64) pg_atomic_read_u64(&s->slots[i].issued);
	switch (pg_atomic_read_u32(&s->state))
	{
		case FLAKE_READY:
			state = RecoveryInProgress() ? "recovery" :
				s->lease_failing ? "lease failing" : "ready";
			break;
		case FLAKE_LAYOUT_CHANGED:
			state = "layout changed";
			break;
		default:
			state = "state file damaged";
			break;
	}

	values[0] = CStringGetTextDatum(state);
	values[1] = Int32GetDatum(flake_node_id);
	values[2] = Int32GetDatum(s->layout.node_bits);
	values[3] = TimestampTzGetDatum(FlakeTimestamp(&s->layout, 0));
	values[4] = Int64GetDatum(last);
	values[5] = TimestampTzGetDatum(FlakeTimestamp(&s->layout, FlakeMs(last)));
	values[6] = Int64GetDatum(Max(FlakeMs(last) - FlakeClockMs(), 0));
	values[7] = TimestampTzGetDatum(FlakeTimestamp(&s->layout, lease_end));
	values[8] = Int64GetDatum(issued);
	values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&s->waits));
	values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&s->clock_steps_back));
	values[11] = TimestampTzGetDatum(s->started);
	if (issued == 0)
		nulls[4] = nulls[5] = nulls[6] = true;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
