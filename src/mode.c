/*-------------------------------------------------------------------------
 *
 * mode.c
 *	  How this server runs flakeid, decided once when the library loads.
 *
 * Preloaded (shared_preload_libraries), the generator lives in the main
 * shared memory, the layout settings are fixed for the life of the server,
 * the postmaster starts the lease worker, and the lease goes to WAL
 * through flakeid's resource manager.  Without preloading, PostgreSQL 17
 * and later keep the generator in the dynamic shared memory registry and a
 * backend starts the lease worker on demand; older versions cannot share
 * a generator at all.  Every other file asks these questions
 * (FlakeCanLogLease(), FlakeLayoutFixed(), ...) instead of testing the
 * mode or the version itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "compat.h"
#include "mode.h"

static bool preloaded = false;

/* Called first thing when the library loads. */
void
FlakeModeInit(void)
{
	preloaded = process_shared_preload_libraries_in_progress;
}

/* Whether the library was loaded through shared_preload_libraries. */
bool
FlakePreloaded(void)
{
	return preloaded;
}

/* Whether the layout settings are fixed until restart (else reloadable). */
bool
FlakeLayoutFixed(void)
{
	return preloaded;
}

/* Whether lease renewals go to WAL: the resource manager needs preloading. */
bool
FlakeCanLogLease(void)
{
	return preloaded;
}

/* Whether the postmaster starts the lease worker, or a backend on demand. */
bool
FlakeWorkerStartsWithServer(void)
{
	return preloaded;
}

/* Whether this server can have a shared generator at all. */
bool
FlakeCanShareGenerator(void)
{
#ifdef FLAKE_HAVE_DSM_REGISTRY
	return true;
#else
	return preloaded;
#endif
}
