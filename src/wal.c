/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  The time lease in WAL, so that neither crash recovery nor a promoted
 *	  standby issues an ID at or below one issued before.
 *
 * When preloaded, every lease (each renewal and each accepted layout) is
 * WAL-logged through a custom resource manager, and the record is flushed
 * and, when synchronous replication is configured for the server,
 * confirmed by the synchronous standbys before any ID under the lease is
 * issued.  Redo adopts the lease unless it is older than the recorded one:
 * a standby's floor, in its own state file, stays above every ID its
 * primary issued under a lease it has received.
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
#include "replication/syncrep.h"

#include "record.h"
#include "shmem.h"
#include "wal.h"

#define FLAKE_RMGR_ID			167
#define XLOG_FLAKE_LEASE		0x00

/*
 * Log a lease and wait until it is flushed and, if the server's settings
 * ask for synchronous replication (synchronous_standby_names, and
 * synchronous_commit of remote_write or above in the server's
 * configuration), written or flushed by the synchronous standbys.  False
 * when the wait was cut short by a cancel or a shutdown: the lease must
 * not be used then.
 */
bool
FlakeWalLogLease(const FlakeLease *lease)
{
	XLogRecPtr	lsn;
	bool		confirmed;

	CHECK_FOR_INTERRUPTS();
	XLogBeginInsert();
	XLogRegisterData((char *) lease, sizeof(FlakeLease));
	lsn = XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_LEASE);
	XLogFlush(lsn);

	HOLD_INTERRUPTS();
	SyncRepWaitForLSN(lsn, false);
	/* a cancel or a shutdown ends the wait without confirmation */
	confirmed = !InterruptPending && !ProcDiePending;
	RESUME_INTERRUPTS();
	return confirmed;
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
