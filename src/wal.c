/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  The time lease in WAL, so that neither crash recovery nor a promoted
 *	  standby issues an ID at or below one issued before.
 *
 * When preloaded, every lease (each renewal and each accepted layout) is
 * WAL-logged through a custom resource manager, and the record is flushed
 * before any ID under the lease is issued.  While synchronous_standby_names
 * names standbys, the record must also be confirmed by the synchronous
 * standbys, whatever synchronous_commit says: the generator's lease has
 * two ends, the flushed one and the confirmed one, and a call uses the
 * confirmed one from the moment the server has synchronous standbys (see
 * FlakeStandbyConfirms()).  Redo adopts the lease unless it is older than
 * the recorded one: a standby's floor, in its own state file, stays above
 * every ID its primary issued under a lease it has received.
 *
 * The resource manager's ID is not entered in PostgreSQL's registry of
 * custom resource managers.  Should another preloaded extension use the
 * same ID, the server refuses to start with an error that names both.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "replication/walsender.h"
#include "utils/guc.h"

#include "compat.h"
#include "mode.h"
#include "record.h"
#include "shmem.h"
#include "wal.h"

#define FLAKE_RMGR_ID			167
#define XLOG_FLAKE_LEASE		0x00

/*
 * Whether IDs may be returned only under a lease that the synchronous
 * standbys confirmed: when this server logs its leases and
 * synchronous_standby_names, as the server applies it, names standbys.
 * That is the moment from which commits can wait for them; the flag is
 * shared, so it holds in every process at once, whichever noticed the
 * reload first.  synchronous_commit does not enter into it, so that
 * neither a reload of it nor a session's SET lets an unconfirmed lease be
 * used.  Cheap: a read of one flag, on the calls past the confirmed lease.
 */
bool
FlakeStandbyConfirms(void)
{
	return max_wal_senders > 0 && FlakeSyncStandbysNamed() &&
		FlakeCanLogLease();
}

/*
 * Make this process's waits in FlakeWalLogLease() wait for the synchronous
 * standbys whenever synchronous_standby_names names any: its own
 * synchronous_commit is "on" (flushed by the standbys), whatever the
 * configuration or a reload says.  The lease worker calls it once.
 */
void
FlakeLeaseWaitsForStandbys(void)
{
	SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
}

/* Whether the synchronous standbys have flushed WAL up to lsn. */
static bool
StandbysFlushed(XLogRecPtr lsn)
{
	bool		flushed;

	LWLockAcquire(SyncRepLock, LW_SHARED);
	flushed = FlakeSyncStandbysNamed() &&
		WalSndCtl->lsn[SYNC_REP_WAIT_FLUSH] >= lsn;
	LWLockRelease(SyncRepLock);
	return flushed;
}

/*
 * Log a lease and wait until it is flushed and, if this process waits for
 * synchronous replication (the lease worker does whenever there are
 * synchronous standbys), confirmed by the synchronous standbys.  Sets
 * *confirmed to whether they confirmed it.  False when the wait was cut
 * short by a cancel or a shutdown: the lease must not be used then.
 */
bool
FlakeWalLogLease(const FlakeLease *lease, bool *confirmed)
{
	XLogRecPtr	lsn;
	bool		interrupted;

	CHECK_FOR_INTERRUPTS();
	XLogBeginInsert();
	XLogRegisterData((char *) lease, sizeof(FlakeLease));
	lsn = XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_LEASE);
	XLogFlush(lsn);

	HOLD_INTERRUPTS();
	SyncRepWaitForLSN(lsn, false);
	/* a cancel or a shutdown ends the wait without confirmation */
	interrupted = InterruptPending || ProcDiePending;
	RESUME_INTERRUPTS();
	if (interrupted)
		return false;
	*confirmed = StandbysFlushed(lsn);
	return true;
}

static void
flakeid_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	FlakeLease	lease;

	if (info != XLOG_FLAKE_LEASE)
		elog(PANIC, "flakeid_redo: unknown op code %u", info);
	memcpy(&lease, XLogRecGetData(record), sizeof(lease));
	if (!FlakeLeaseSane(&lease))
		elog(PANIC, "flakeid_redo: lease record out of range");
	(void) FlakeAdoptLease(FlakeAttach(), &lease);
}

static void
flakeid_desc(StringInfo buf, XLogReaderState *record)
{
	FlakeLease	lease;

	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) != XLOG_FLAKE_LEASE)
		return;
	memcpy(&lease, XLogRecGetData(record), sizeof(lease));
	appendStringInfo(buf, "lease end %lld ms; epoch %lld ms; node_bits %d; node %d",
					 (long long) lease.lease_end, (long long) lease.epoch_ms,
					 lease.node_bits, lease.node_id);
}

static const char *
flakeid_identify(uint8 info)
{
	return (info & ~XLR_INFO_MASK) == XLOG_FLAKE_LEASE ? "LEASE" : NULL;
}

static RmgrData flakeid_rmgr = {
	.rm_name = "flakeid",
	.rm_redo = flakeid_redo,
	.rm_desc = flakeid_desc,
	.rm_identify = flakeid_identify,
};

void
FlakeRegisterRmgr(void)
{
	RegisterCustomRmgr(FLAKE_RMGR_ID, &flakeid_rmgr);
}
