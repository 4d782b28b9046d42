/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  The time lease in WAL, so that neither crash recovery nor a promoted
 *	  standby issues an ID at or below one issued before.
 *
 * When preloaded, every lease (each renewal and each accepted layout) is
 * WAL-logged through a custom resource manager, and the record is flushed
 * before any ID under the lease is issued.  While synchronous_standby_names
 * names standbys, the record must also be flushed by the standbys that are
 * synchronous when an ID under it is returned, whatever synchronous_commit
 * says: the generator's lease has two ends, the flushed one and the
 * confirmed one, and a call uses the confirmed one from the moment the
 * server has synchronous standbys (see FlakeStandbyConfirms() and
 * confirm.c).  Redo adopts the lease unless it is older than the recorded
 * one: a standby's floor, in its own state file, stays above every ID its
 * primary issued under a lease it has received.  A record of flakeid 1.2
 * or older has no timeline; one of this version is read by those as theirs.
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
 * used.  Cheap: a read of one shared flag that seldom changes.
 */
bool
FlakeStandbyConfirms(void)
{
	return max_wal_senders > 0 && FlakeSyncStandbysNamed() &&
		FlakeCanLogLease();
}

/*
 * Log a lease and flush it.  Returns where the record ends: it counts as
 * confirmed once the synchronous standbys have flushed that far (see
 * confirm.c).
 */
XLogRecPtr
FlakeWalLogLease(const FlakeLease *lease)
{
	XLogRecPtr	lsn;

	XLogBeginInsert();
	XLogRegisterData((char *) lease, sizeof(FlakeLease));
	lsn = XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_LEASE);
	XLogFlush(lsn);
	return lsn;
}

/* The lease of a record, of this version or an older one (no timeline). */
static bool
RecordLease(XLogReaderState *record, FlakeLease *lease)
{
	Size		len = XLogRecGetDataLen(record);

	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) != XLOG_FLAKE_LEASE ||
		(len != sizeof(FlakeLease) && len != FLAKE_LEASE_SIZE_NO_TIMELINE))
		return false;
	memset(lease, 0, sizeof(FlakeLease));
	memcpy(lease, XLogRecGetData(record), len);
	return true;
}

static void
flakeid_redo(XLogReaderState *record)
{
	FlakeLease	lease;

	if (!RecordLease(record, &lease))
		elog(PANIC, "flakeid_redo: unknown record (info %u, %u bytes)",
			 XLogRecGetInfo(record) & ~XLR_INFO_MASK,
			 (unsigned) XLogRecGetDataLen(record));
	if (!FlakeLeaseSane(&lease))
		elog(PANIC, "flakeid_redo: lease record out of range");
	(void) FlakeAdoptLease(FlakeAttach(), &lease);
}

static void
flakeid_desc(StringInfo buf, XLogReaderState *record)
{
	FlakeLease	lease;

	if (!RecordLease(record, &lease))
		return;
	appendStringInfo(buf, "lease end %lld ms; epoch %lld ms; node_bits %d; node %d; timeline %u",
					 (long long) lease.lease_end, (long long) lease.epoch_ms,
					 lease.node_bits, lease.node_id, lease.timeline);
}

static const char *
flakeid_identify(uint8 info)
{
	return (info & ~XLR_INFO_MASK) == XLOG_FLAKE_LEASE ? "LEASE" : NULL;
}

/*
 * Redo begins.  Where a standby or a restore begins it (archive recovery),
 * the log says what this version does at the end: it continues above the
 * old primary's IDs (lease.c).  Versions before 1.3 do not, which is why a
 * rolling upgrade takes the standbys first.
 */
static void
flakeid_startup(void)
{
	if (ArchiveRecoveryRequested)
		ereport(LOG,
				(errmsg("flakeid continues above the old primary's IDs if this server is promoted"),
				 errdetail("After a promotion or a restore it waits for the promotion floor: its clock plus flakeid.max_lead, a lease and flakeid.max_clock_skew."),
				 errhint("A standby that runs flakeid 1.2 or older has no floor: upgrade the standbys before their primary.")));
}

static RmgrData flakeid_rmgr = {
	.rm_name = "flakeid",
	.rm_redo = flakeid_redo,
	.rm_startup = flakeid_startup,
	.rm_desc = flakeid_desc,
	.rm_identify = flakeid_identify,
};

void
FlakeRegisterRmgr(void)
{
	RegisterCustomRmgr(FLAKE_RMGR_ID, &flakeid_rmgr);
}
