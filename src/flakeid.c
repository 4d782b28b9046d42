/*-------------------------------------------------------------------------
 *
 * flakeid.c
 *	  Module entry point: _PG_init() calls one init per area, and nothing
 *	  calls it.
 *
 * The library always defines its parameters, so that the type's I/O and
 * the decode functions work whether or not it is preloaded.  Only when it
 * is loaded through shared_preload_libraries does it ask for shared memory,
 * start the lease worker with the server and register its WAL records.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "guc.h"
#include "mode.h"
#include "shmem.h"
#include "wal.h"
#include "worker.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	FlakeModeInit();
	FlakeDefineGucs();
	if (!FlakePreloaded())
		return;
	FlakeShmemInit();
	FlakeRegisterLeaseWorker();
	FlakeRegisterRmgr();
	if (!IsUnderPostmaster)
		FlakeCheckWaitSettings();
}
