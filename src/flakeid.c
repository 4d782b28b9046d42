/*-------------------------------------------------------------------------
 *
 * flakeid.c
 *	  Module entry point.
 *
 * The library always defines its parameters, so that the type's I/O and
 * the decode functions work whether or not it is preloaded.  Only when it
 * is loaded through shared_preload_libraries does it ask for shared memory
 * start the lease worker and register its WAL records, which generation
 * needs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "flakeid.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	FlakeDefineGucs();
	if (!process_shared_preload_libraries_in_progress)
		return;
	FlakeInstallShmemHooks();
	FlakeRegisterLeaseWorker();
	FlakeRegisterRmgr();
}
