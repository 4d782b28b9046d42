/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  The time lease: a small fsync'd file in the data directory, and the
 *	  background worker that keeps it ahead of the IDs being issued.
 *
 * No ID is issued with a millisecond at or past the lease end recorded on
 * disk.  After a restart, clean or not, generation resumes at that lease
 * end, above everything issued before, whatever the clock says.  The file
 * also records the layout, so a server restarted with another layout
 * refuses to generate instead of mixing layouts.
 *
 * The file holds two copies of a 512-byte record, written alternately.  A
 * torn write damages only the copy being written, whose lease was never
 * used; the other copy is still valid.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "flakeid.h"
#include "state.h"

PG_FUNCTION_INFO_V1(flakeid_accept_layout);

PGDLLEXPORT void flakeid_lease_worker_main(Datum main_arg);

#define FLAKE_RECORD_MAGIC		0x464c4b31	/* "FLK1" */
#define FLAKE_RECORD_VERSION	1
#define FLAKE_RECORD_SIZE		512

typedef struct FlakeRecord
{
	uint32		magic;
	uint32		version;
	uint64		serial;			/* the newer of the two copies wins */
	int64		epoch_ms;		/* layout: flakeid.epoch */
	int32		node_bits;		/* layout: flakeid.node_bits */
	int32		node_id;		/* for the curious reader */
	int64		lease_end;		/* ms since epoch_ms: no ID at or past it */
	pg_crc32c	crc;			/* of everything above */
} FlakeRecord;

StaticAssertDecl(sizeof(FlakeRecord) <= FLAKE_RECORD_SIZE,
				 "flakeid state record too large");

static pg_crc32c
RecordCrc(const FlakeRecord *rec)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, rec, offsetof(FlakeRecord, crc));
	FIN_CRC32C(crc);
	return crc;
}

/* Read one copy; false when it is missing or damaged. */
static bool
ReadRecord(int fd, int copy, FlakeRecord *rec)
{
	char		buf[FLAKE_RECORD_SIZE];

	if (pg_pread(fd, buf, FLAKE_RECORD_SIZE, copy * FLAKE_RECORD_SIZE) != FLAKE_RECORD_SIZE)
		return false;
	memcpy(rec, buf, sizeof(FlakeRecord));
	return rec->magic == FLAKE_RECORD_MAGIC &&
		rec->version == FLAKE_RECORD_VERSION &&
		EQ_CRC32C(rec->crc, RecordCrc(rec));
}

static bool
SameLayout(const FlakeLayout *a, const FlakeLayout *b)
{
	return a->epoch_ms == b->epoch_ms && a->node_bits == b->node_bits;
}

/*
 * Read the state file at startup (in the postmaster) and set the floor of
 * the IDs to come.
 */
void
FlakeStateLoad(FlakeShared *s)
{
	FlakeRecord copies[2];
	bool		valid[2];
	const FlakeRecord *best;
	int			fd;

	s->recorded = s->layout;
	fd = BasicOpenFile(FLAKE_STATE_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0 && errno == ENOENT)
	{
		FlakeSetFloor(s, 0);	/* this server never generated */
		return;
	}
	if (fd < 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", FLAKE_STATE_FILE)));
		pg_atomic_write_u32(&s->state, FLAKE_STATE_UNREADABLE);
		return;
	}
	valid[0] = ReadRecord(fd, 0, &copies[0]);
	valid[1] = ReadRecord(fd, 1, &copies[1]);
	close(fd);

	if (!valid[0] && !valid[1])
	{
		ereport(LOG,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flakeid state file \"%s\" is damaged", FLAKE_STATE_FILE)));
		pg_atomic_write_u32(&s->state, FLAKE_STATE_UNREADABLE);
		return;
	}
	if (valid[0] && valid[1])
		best = copies[0].serial > copies[1].serial ? &copies[0] : &copies[1];
	else
		best = valid[0] ? &copies[0] : &copies[1];

	s->serial = best->serial;
	s->recorded.epoch_ms = best->epoch_ms;
	s->recorded.node_bits = best->node_bits;
	s->recorded_lease_end = best->lease_end;
	if (!SameLayout(&s->recorded, &s->layout))
	{
		ereport(LOG,
				(errmsg("flakeid layout differs from the one recorded in \"%s\"; IDs will not be generated",
						FLAKE_STATE_FILE)));
		pg_atomic_write_u32(&s->state, FLAKE_LAYOUT_CHANGED);
		FlakeSetFloor(s, best->lease_end);
		return;
	}
	FlakeSetFloor(s, best->lease_end);
}

/*
 * Write and fsync the next record.  The caller holds s->lock.  On failure
 * returns false with errno set.
 */
static bool
FlakeStateWrite(FlakeShared *s, const FlakeLayout *layout, int64 lease_end)
{
	char		buf[FLAKE_RECORD_SIZE];
	FlakeRecord rec;
	int			fd;
	int			save_errno;

	memset(&rec, 0, sizeof(rec));
	rec.magic = FLAKE_RECORD_MAGIC;
	rec.version = FLAKE_RECORD_VERSION;
	rec.serial = s->serial + 1;
	rec.epoch_ms = layout->epoch_ms;
	rec.node_bits = layout->node_bits;
	rec.node_id = flake_node_id;
	rec.lease_end = lease_end;
	rec.crc = RecordCrc(&rec);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &rec, sizeof(rec));

	fd = BasicOpenFile(FLAKE_STATE_FILE, O_RDWR | O_CREAT | PG_BINARY);
	if (fd < 0)
		return false;
	errno = 0;
	if (pg_pwrite(fd, buf, FLAKE_RECORD_SIZE,
				  (rec.serial % 2) * FLAKE_RECORD_SIZE) != FLAKE_RECORD_SIZE ||
		pg_fsync(fd) != 0)
	{
		save_errno = errno ? errno : ENOSPC;
		close(fd);
		errno = save_errno;
		return false;
	}
	close(fd);
	/* the first record may have created the file */
	if (rec.serial == 1 && fsync_fname_ext(".", true, false, LOG) != 0)
		return false;
	s->serial = rec.serial;
	return true;
}

/* Write the next record, or release s->lock and fail. */
static void
FlakeStateWriteOrFail(FlakeShared *s, const FlakeLayout *layout, int64 lease_end)
{
	int			save_errno;

	if (FlakeStateWrite(s, layout, lease_end))
		return;
	save_errno = errno;
	LWLockRelease(&s->lock);
	errno = save_errno;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", FLAKE_STATE_FILE)));
}

/*
 * Extend the lease when the IDs or the clock come within half a lease of
 * its end, and when a caller asks.  An idle server lets it lapse.
 */
static void
FlakeLeaseRenew(FlakeShared *s, uint64 *renewed_last)
{
	bool		asked = pg_atomic_exchange_u32(&s->renew_asked, 0) != 0;
	uint64		last = pg_atomic_read_u64(&s->last);
	int64		lease_end = (int64) pg_atomic_read_u64(&s->lease_end);
	int64		wanted = (int64) pg_atomic_read_u64(&s->lease_wanted);
	int64		horizon = Max(Max(FlakeClockMs(), FlakeMs((int64) last) + 1), wanted);
	int64		new_end = Min(horizon + FLAKE_LEASE_MS, FLAKE_MAX_MS + 1);
	bool		ok;

	if (pg_atomic_read_u32(&s->state) != FLAKE_READY ||
		lease_end - horizon >= FLAKE_LEASE_MS / 2 || new_end <= lease_end)
		return;
	if (!asked && wanted <= lease_end && last == *renewed_last)
		return;

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	if (flake_preloaded)
		FlakeLogLease(&s->layout, new_end);
	ok = FlakeStateWrite(s, &s->layout, new_end);
	if (ok)
		pg_atomic_write_u64(&s->lease_end, (uint64) new_end);
	else
	{
		s->lease_errno = errno;
		if (!s->lease_failing)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not renew the flakeid time lease in file \"%s\": %m",
							FLAKE_STATE_FILE),
					 errdetail("No IDs will be generated until the file can be written.")));
	}
	if (ok && s->lease_failing)
		ereport(LOG,
				(errmsg("flakeid time lease renewed in file \"%s\"", FLAKE_STATE_FILE)));
	s->lease_failing = !ok;
	LWLockRelease(&s->lock);

	*renewed_last = last;
	ConditionVariableBroadcast(&s->lease_cv);
}

static void
FlakeWorkerExit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	flake_shared->worker_latch = NULL;
	pg_atomic_write_u32(&flake_shared->worker_launching, 0);
}

/* The lease worker: renews the lease and watches the clock. */
void
flakeid_lease_worker_main(Datum main_arg)
{
	FlakeShared *s;
	uint64		renewed_last = 0;
	int64		prev_clock;

	(void) main_arg;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();

	s = FlakeGetShared();
	s->worker_latch = MyLatch;
	before_shmem_exit(FlakeWorkerExit, 0);
	prev_clock = FlakeClockMs();

	while (!ShutdownRequestPending)
	{
		int64		now;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		now = FlakeClockMs();
		if (now < prev_clock)
		{
			pg_atomic_fetch_add_u64(&s->clock_steps_back, 1);
			ereport(LOG,
					(errmsg("system clock moved backwards by %lld ms",
							(long long) (prev_clock - now))));
		}
		prev_clock = now;

		FlakeLeaseRenew(s, &renewed_last);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	/* exit status 1: the postmaster restarts the worker unless shutting down */
	proc_exit(1);
}

static void
FillLeaseWorker(BackgroundWorker *worker)
{
	memset(worker, 0, sizeof(*worker));
	worker->bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker->bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker->bgw_restart_time = 1;
	snprintf(worker->bgw_library_name, BGW_MAXLEN, "flakeid");
	snprintf(worker->bgw_function_name, BGW_MAXLEN, "flakeid_lease_worker_main");
	snprintf(worker->bgw_name, BGW_MAXLEN, "flakeid lease worker");
	snprintf(worker->bgw_type, BGW_MAXLEN, "flakeid lease worker");
}

/* Start the lease worker with the server (preloaded). */
void
FlakeRegisterLeaseWorker(void)
{
	BackgroundWorker worker;

	FillLeaseWorker(&worker);
	RegisterBackgroundWorker(&worker);
}

/* Start the lease worker from a backend (not preloaded), once. */
void
FlakeLaunchWorker(FlakeShared *s)
{
	BackgroundWorker worker;

	if (pg_atomic_read_u32(&s->worker_launching) != 0 ||
		pg_atomic_exchange_u32(&s->worker_launching, 1) != 0)
		return;
	FillLeaseWorker(&worker);
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	if (!RegisterDynamicBackgroundWorker(&worker, NULL))
		pg_atomic_write_u32(&s->worker_launching, 0);
}

/*
 * Replay a lease record from the primary (or from this server before a
 * crash): the layout it names becomes the recorded one, and IDs made after
 * promotion start at or above its lease end.  The state file keeps that
 * across restarts of the standby, so failing to write it stops recovery.
 */
void
FlakeLeaseRedo(const FlakeLayout *layout, int64 lease_end)
{
	FlakeShared *s = flake_shared;

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	if (SameLayout(layout, &s->recorded) && lease_end <= s->recorded_lease_end)
	{
		LWLockRelease(&s->lock);
		return;
	}
	FlakeStateWriteOrFail(s, layout, lease_end);
	s->recorded = *layout;
	s->recorded_lease_end = lease_end;
	if (SameLayout(layout, &s->layout))
	{
		if (lease_end > FlakeMs((int64) pg_atomic_read_u64(&s->last)) + 1)
			FlakeSetFloor(s, lease_end);
		pg_atomic_write_u32(&s->state, FLAKE_READY);
	}
	else
		pg_atomic_write_u32(&s->state, FLAKE_LAYOUT_CHANGED);
	LWLockRelease(&s->lock);
}

/*
 * Accept the configured layout after it changed: record it, and continue
 * above every ID issued under the old one, both as integers and in time.
 */
Datum
flakeid_accept_layout(PG_FUNCTION_ARGS)
{
	FlakeShared *s = FlakeGetShared();
	int64		floor_ms;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to accept a new flakeid layout"),
				 errdetail("Only superusers may change the layout.")));
	if (s == NULL || RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flakeid is not generating IDs on this server"),
				 errhint("Preload flakeid through \"shared_preload_libraries\" and run this on the primary.")));

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&s->state) != FLAKE_LAYOUT_CHANGED)
	{
		LWLockRelease(&s->lock);
		ereport(NOTICE,
				(errmsg("flakeid layout is unchanged, nothing to accept")));
		PG_RETURN_BOOL(false);
	}
	floor_ms = Max(s->recorded_lease_end,
				   s->recorded.epoch_ms + s->recorded_lease_end - s->layout.epoch_ms);
	if (floor_ms - FlakeClockMs() > flake_max_lead_ms)
	{
		char	   *first = pstrdup(timestamptz_to_str(FlakeTimestamp(&s->layout, floor_ms)));

		LWLockRelease(&s->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot accept the new flakeid layout yet"),
				 errdetail("To stay above every ID issued under the old layout, the first ID under the new one "
						   "would have to read %s, %lld ms ahead of the clock.",
						   first, (long long) (floor_ms - FlakeClockMs())),
				 errhint("Keep the old flakeid.epoch or choose an earlier one; a later epoch can be accepted "
						 "only once the clock reaches that time.")));
	}
	if (flake_preloaded)
		FlakeLogLease(&s->layout, floor_ms);
	FlakeStateWriteOrFail(s, &s->layout, floor_ms);
	s->recorded = s->layout;
	s->recorded_lease_end = floor_ms;
	FlakeSetFloor(s, floor_ms);
	pg_write_barrier();
	pg_atomic_write_u32(&s->state, FLAKE_READY);
	LWLockRelease(&s->lock);

	ereport(LOG,
			(errmsg("flakeid accepted a new layout: node_bits %d, epoch %s",
					s->layout.node_bits,
					timestamptz_to_str(FlakeTimestamp(&s->layout, 0)))));
	PG_RETURN_BOOL(true);
}
