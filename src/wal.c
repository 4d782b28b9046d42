/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  The time lease in WAL, so that a promoted standby never issues an ID
 *	  at or below one it replayed.
 *
 * Every lease renewal and every accepted layout is WAL-logged through a
 * custom resource manager before the lease is used.  An ID is generated only
 * after its lease record was inserted, so a standby that replayed the row
 * holding an ID has replayed the lease covering it; redo raises the
 * standby's floor and records it in the standby's own state file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"

#include "flakeid.h"
#include "state.h"

/* Not yet reserved in PostgreSQL's registry of custom WAL resource managers. */
#define FLAKE_RMGR_ID			167
#define XLOG_FLAKE_LEASE		0x00

typedef struct xl_flake_lease
{
	int64		epoch_ms;		/* the layout of the primary */
	int32		node_bits;
	int32		node_id;		/* for pg_waldump's reader */
	int64		lease_end;		/* no ID of the primary is at or past it */
} xl_flake_lease;

/* Log a lease end; returns once the record is inserted. */
void
FlakeLogLease(const FlakeLayout *layout, int64 lease_end)
{
	xl_flake_lease rec;

	memset(&rec, 0, sizeof(rec));
	rec.epoch_ms = layout->epoch_ms;
	rec.node_bits = layout->node_bits;
	rec.node_id = flake_node_id;
	rec.lease_end = lease_end;
	XLogBeginInsert();
	XLogRegisterData((char *) &rec, sizeof(rec));
	(void) XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_LEASE);
}

static void
flakeid_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	xl_flake_lease rec;
	FlakeLayout layout;

	if (info != XLOG_FLAKE_LEASE)
		elog(PANIC, "flakeid_redo: unknown op code %u", info);
	memcpy(&rec, XLogRecGetData(record), sizeof(rec));
	layout.epoch_ms = rec.epoch_ms;
	layout.node_bits = rec.node_bits;
	FlakeLeaseRedo(&layout, rec.lease_end);
}

static void
flakeid_desc(StringInfo buf, XLogReaderState *record)
{
	xl_flake_lease rec;

	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) != XLOG_FLAKE_LEASE)
		return;
	memcpy(&rec, XLogRecGetData(record), sizeof(rec));
	appendStringInfo(buf, "lease end %lld ms; epoch %lld ms; node_bits %d; node %d",
					 (long long) rec.lease_end, (long long) rec.epoch_ms,
					 rec.node_bits, rec.node_id);
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
