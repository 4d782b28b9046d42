/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  Extending the time lease (renewal), setting a floor and accepting a
 *	  new layout (flakeid_accept_layout()): the ways a lease is made, each
 *	  durable before anything is issued under it; flakeid_state_file().
 *
 * No ID is issued with a millisecond at or past the lease end that is
 * durable: in WAL and flushed (when the library is preloaded), and in the
 * state file; and while the server has synchronous standbys, not at or
 * past the lease end they have (see confirm.c).  The lease worker renews
 * the lease well ahead of use, so that the wait for the disk and the
 * standbys sits on the renewal, not on the calls.
 *
 * A server that ended archive recovery (a promoted standby, a restored
 * backup) finds itself on another timeline than the newest lease it knows
 * was made on.  Leases of the old primary that never reached it may cover
 * IDs it returned, and left the server, so before its own first lease
 * this server sets a floor above every ID the old primary can have
 * returned: the old primary returned no ID more than flakeid.max_lead
 * ahead of its clock (nor past a lease, itself at most a lease's length
 * beyond that), so the floor is this server's clock plus flakeid.max_lead,
 * a lease, and flakeid.max_clock_skew for the clocks' disagreement.  That
 * holds when the old primary stopped generating before the promotion, and
 * the clocks agree within flakeid.max_clock_skew.  A crash restart stays
 * on its timeline, and its state file covers every ID it issued: no floor.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "clock.h"
#include "confirm.h"
#include "guc.h"
#include "layout.h"
#include "lease.h"
#include "mode.h"
#include "record.h"
#include "shmem.h"
#include "statefile.h"
#include "wal.h"

PG_FUNCTION_INFO_V1(flakeid_accept_layout);
PG_FUNCTION_INFO_V1(flakeid_state_file);

/*
 * Make a lease durable: in WAL when this server can log it (the
 * synchronous standbys confirm it once they have flushed the record), then
 * in the state file and the generator.  False when the file could not be
 * written (errno says why).
 */
static bool
FlakeMakeDurable(FlakeShared *s, const FlakeLease *lease, bool is_floor)
{
	if (FlakeCanLogLease())
		FlakeConfirmRecord(&s->confirm, FlakeWalLogLease(lease), lease->lease_end);
	return FlakeStoreLease(s, lease, is_floor);
}

/* The timeline this server is on; it generates, so recovery is over. */
static uint32
CurrentTimeline(void)
{
	return (uint32) GetWALInsertionTimeLine();
}

/*
 * The timeline the newest lease was made on: 1 for a server that never
 * made one, or made it with flakeid 1.2 or older.
 */
static uint32
RecordedTimeline(const FlakeLease *recorded, bool have_recorded)
{
	return have_recorded ? FlakeLeaseTimeline(recorded) : 1;
}

/*
 * The floor, in ms of layout, above every ID an old primary can have
 * returned (see above), when this server is on another timeline than the
 * newest lease was made on; else 0.
 */
static int64
TimelineFloor(const FlakeLayout *layout, const FlakeLease *recorded,
			  bool have_recorded)
{
	if (RecordedTimeline(recorded, have_recorded) == CurrentTimeline())
		return 0;
	return FlakeClockMs(layout) + FlakeFloorLeadMs() + FLAKE_LEASE_MS +
		flake_max_clock_skew_ms;
}

/*
 * Whether this server, out of recovery, still has to write the floor of
 * its new timeline: the newest lease it knows was made on another one.
 * Until it is written no call reserves IDs (see FlakeRefresh()): a tick
 * taken before the floor lies below it, and may be one the old primary
 * returned.
 */
bool
FlakeFloorPending(FlakeShared *s)
{
	FlakeLease	recorded;
	bool		have_recorded = FlakeRecordedLease(s, &recorded);

	return RecordedTimeline(&recorded, have_recorded) != CurrentTimeline();
}

/*
 * The newest lease is in memory only (replayed while the state file could
 * not be written), or the server is on another timeline than the one the
 * newest lease was made on: write a floor lease before any other, on this
 * timeline, above the newest lease and, after a change of timeline, above
 * every ID an old primary can have returned.  The file is enough: every
 * ID needs a renewal past the floor, which goes to WAL too.  Returns
 * whether it is written.
 */
static bool
FlakeWriteFloor(FlakeShared *s, const FlakeLayout *layout, int32 node,
				const FlakeLease *recorded, bool have_recorded)
{
	uint32		timeline = CurrentTimeline();
	uint32		was = RecordedTimeline(recorded, have_recorded);
	int64		clock_floor = TimelineFloor(layout, recorded, have_recorded);
	int64		floor_ms = Max(have_recorded ? recorded->lease_end : 0, clock_floor);
	FlakeLease	lease;

	FlakeLeaseFill(&lease, layout, node, Min(floor_ms, FLAKE_MAX_MS + 1), timeline);
	if (!FlakeStoreLease(s, &lease, true))
		return false;
	if (clock_floor > 0)
		pg_atomic_write_u64(&s->promotion_floor, (uint64) lease.lease_end);
	if (was != timeline)
		ereport(LOG,
				(errmsg("flakeid continues from %s on timeline %u",
						timestamptz_to_str(FlakeTimestamp(layout, lease.lease_end)),
						timeline),
				 errdetail("The newest time lease was made on timeline %u: after the end of archive recovery, "
						   "IDs continue above every ID that the old primary can have returned, "
						   "flakeid.max_lead, a lease and flakeid.max_clock_skew ahead of the clock.",
						   was)));
	return true;
}

/*
 * Whether a floor must be written before the next lease: the newest lease
 * is not in the state file, or was made on another timeline.
 */
static bool
FlakeFloorNeeded(FlakeShared *s, FlakeStatus status, FlakeLease *recorded,
				 bool *have_recorded)
{
	*have_recorded = FlakeRecordedLease(s, recorded);
	return status == FLAKE_GEN_FILE_BEHIND ||
		RecordedTimeline(recorded, *have_recorded) != CurrentTimeline();
}

/*
 * Extend the lease when the IDs or the clock come within half a lease of
 * its end, or a caller asks; first write a floor where one is needed (see
 * FlakeWriteFloor()).  While the server has synchronous standbys, calls
 * use the part of the lease they have flushed, as confirm.c works it out;
 * a lease record already in WAL counts once they flush it, so it is not
 * logged again.  An idle server lets the lease lapse.  The lease reaches
 * no further than the IDs may be returned (flakeid.max_lead ahead of the
 * clock), even when calls reserved further ahead and wait for the clock,
 * so that a restart continues close to the clock.  The lease worker calls
 * this; renewed_tick is its memory of next_tick at the last renewal.
 */
void
FlakeLeaseRenew(FlakeShared *s, uint64 *renewed_tick)
{
	bool		asked = pg_atomic_exchange_u32(&s->renew_asked, 0) != 0;
	uint64		next = pg_atomic_read_u64(&s->next_tick);
	int64		lease_end = (int64) pg_atomic_read_u64(&s->lease_end);
	int64		wanted = (int64) pg_atomic_read_u64(&s->lease_wanted);
	FlakeLayout layout;
	uint32		word = FlakeSnapshot(s, &layout);
	FlakeStatus status = FlakeWordStatus(word);
	FlakeLease	recorded;
	bool		have_recorded;
	int64		now;
	int64		horizon;
	int64		new_end;
	FlakeLease	lease;

	if ((status != FLAKE_GEN_READY && status != FLAKE_GEN_FILE_BEHIND) ||
		RecoveryInProgress())
		return;
	if (FlakeFloorNeeded(s, status, &recorded, &have_recorded))
	{
		if (FlakeWriteFloor(s, &layout, FlakeWordNode(word), &recorded, have_recorded))
			ConditionVariableBroadcast(&s->lease_cv);
		return;
	}
	now = FlakeClockMs(&layout);
	horizon = Max(now, wanted);
	if (next > 0)
		horizon = Max(horizon, Min(FlakeTickMs(&layout, next - 1),
								   now + flake_max_lead_ms) + 1);
	new_end = Min(horizon + FLAKE_LEASE_MS, FLAKE_MAX_MS + 1);
	if (lease_end - horizon >= FLAKE_LEASE_MS / 2 || new_end <= lease_end)
		return;
	if (!asked && wanted <= lease_end && next == *renewed_tick)
		return;

	/* never below the lease on disk: IDs may have been issued under it */
	FlakeLeaseFill(&lease, &layout, FlakeWordNode(word), Max(new_end, lease_end),
				   CurrentTimeline());
	if (!FlakeMakeDurable(s, &lease, false))
		return;
	*renewed_tick = next;
	if (FlakeStandbyConfirms())
		(void) FlakeConfirmCheck(&s->confirm, now);
	ConditionVariableBroadcast(&s->lease_cv);
}

static void
ReportNotAccepting(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flakeid is not generating IDs on this server"),
			 errhint("Preload flakeid through \"shared_preload_libraries\" and restart the server.")));
}

/*
 * The first millisecond under the new layout: above every ID issued under
 * the old one, both as an integer and in time.
 */
static int64
AcceptFloor(const FlakeLease *recorded, const FlakeLayout *layout)
{
	return Max(recorded->lease_end,
			   recorded->epoch_ms + recorded->lease_end - layout->epoch_ms);
}

/* Check that IDs can go on under the new layout from floor_ms. */
static void
CheckAcceptable(const FlakeLayout *layout, int64 floor_ms)
{
	int64		ahead = floor_ms - FlakeClockMs(layout);

	if (floor_ms > FLAKE_MAX_MS)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("cannot accept the new flakeid layout: its time range is used up"),
				 errdetail("To stay above every ID issued under the old layout, IDs under the new one would start at %s, "
						   "past the end of its %d-bit time field (%s).",
						   pstrdup(timestamptz_to_str(FlakeTimestamp(layout, floor_ms))),
						   FLAKE_TIME_BITS,
						   pstrdup(timestamptz_to_str(FlakeTimestamp(layout, FLAKE_MAX_MS + 1)))),
				 errhint("Keep the old flakeid.epoch, or choose a later one.")));
	if (ahead > flake_max_lead_ms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot accept the new flakeid layout yet"),
				 errdetail("To stay above every ID issued under the old layout, the first ID under the new one "
						   "would have to read %s, %lld ms ahead of the clock.",
						   pstrdup(timestamptz_to_str(FlakeTimestamp(layout, floor_ms))),
						   (long long) ahead),
				 errhint("Keep the old flakeid.epoch, or run flakeid_accept_layout() again once the clock "
						 "has reached that time.")));
}

/* End an accept: let another one start. */
static void
AcceptDone(FlakeShared *s)
{
	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	s->accepting = false;
	LWLockRelease(&s->lock);
}

/*
 * Accept the configured layout after it changed: make a lease of it whose
 * end lies above every ID issued under the old one, durable like any
 * renewal; IDs continue from there.
 */
Datum
flakeid_accept_layout(PG_FUNCTION_ARGS)
{
	FlakeShared *s = FlakeAttach();
	FlakeLayout layout;
	FlakeLease	lease;
	int64		floor_ms;
	bool		ok;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to accept a new flakeid layout"),
				 errdetail("Only superusers may change the layout.")));
	if (s == NULL)
		ReportNotAccepting();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot accept a flakeid layout during recovery"),
				 errhint("Run flakeid_accept_layout() on the primary; a standby takes the layout from the primary's WAL.")));

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	layout = s->configured;
	if (FlakeSameLayout(&layout, &s->layout) || !s->configured_valid ||
		!s->have_recorded)
	{
		FlakeStatus status = FlakeWordStatus(pg_atomic_read_u32(&s->word));

		LWLockRelease(&s->lock);
		if (status == FLAKE_GEN_LAYOUT_INVALID)
			FlakeReportInvalidLayout(NULL);
		ereport(NOTICE,
				(errmsg("flakeid layout is unchanged, nothing to accept")));
		PG_RETURN_BOOL(false);
	}
	if (s->accepting)
	{
		LWLockRelease(&s->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("another session is accepting the flakeid layout")));
	}
	floor_ms = AcceptFloor(&s->recorded, &layout);
	PG_TRY();
	{
		CheckAcceptable(&layout, floor_ms);
	}
	PG_CATCH();
	{
		LWLockRelease(&s->lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* on a new timeline, the floor above an old primary's IDs too */
	floor_ms = Max(floor_ms, TimelineFloor(&layout, &s->recorded, true));
	s->accepting = true;
	FlakeLeaseFill(&lease, &layout, s->node_id, floor_ms, CurrentTimeline());
	LWLockRelease(&s->lock);

	PG_TRY();
	{
		ok = FlakeMakeDurable(s, &lease, true);
	}
	PG_CATCH();
	{
		AcceptDone(s);
		PG_RE_THROW();
	}
	PG_END_TRY();
	AcceptDone(s);
	if (!ok)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write flakeid state file \"%s\": %m", FLAKE_STATE_FILE),
				 FlakeCanLogLease() ?
				 errdetail("The new layout's lease went to the write-ahead log first: once the log holds it, "
						   "a crash recovery or a standby that replays it takes the new layout, above every ID "
						   "issued before.") : 0,
				 errhint("Make the state file writable, then run flakeid_accept_layout() again.")));

	ereport(LOG,
			(errmsg("flakeid accepted a new layout: node_bits %d, epoch %s",
					layout.node_bits,
					timestamptz_to_str(FlakeTimestamp(&layout, 0)))));
	PG_RETURN_BOOL(true);
}

/*
 * The copies of the lease in the state file, as they are on disk: for
 * operators, and for tests that must find a copy without knowing the
 * format.
 */
Datum
flakeid_state_file(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FlakeFileCopy copies[FLAKE_FILE_SLOTS];
	int			ncopies;

	FlakeCheckMonitor("flakeid_state_file");
	InitMaterializedSRF(fcinfo, 0);
	ncopies = FlakeStateFileCopies(copies);
	if (ncopies < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read flakeid state file \"%s\": %m", FLAKE_STATE_FILE)));

	for (int i = 0; i < ncopies; i++)
	{
		FlakeFileCopy *copy = &copies[i];
		FlakeLayout layout;
		Datum		values[9];
		bool		nulls[9] = {0};

		if (!copy->present)
			continue;
		FlakeLeaseLayout(&copy->lease, &layout);
		values[0] = Int32GetDatum(copy->offset);
		values[1] = BoolGetDatum(copy->valid);
		values[2] = Int32GetDatum((int32) copy->version);
		values[3] = Int64GetDatum((int64) copy->serial);
		if (copy->valid)
		{
			values[4] = TimestampTzGetDatum(FlakeTimestamp(&layout, 0));
			values[5] = Int32GetDatum(copy->lease.node_bits);
			values[6] = Int32GetDatum(copy->lease.node_id);
			values[7] = Int64GetDatum(copy->lease.lease_end);
			values[8] = TimestampTzGetDatum(FlakeTimestamp(&layout, copy->lease.lease_end));
		}
		else
			memset(nulls + 2, true, sizeof(bool) * 7);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
