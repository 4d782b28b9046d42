/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  The lease worker: started with the server when preloaded, by a
 *	  backend on demand otherwise.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_WORKER_H
#define FLAKEID_WORKER_H

#include "shmem.h"

/* The longest a call waits for a lease worker that is not running. */
#define FLAKE_WORKER_WAIT_MS	10000

extern void FlakeRegisterLeaseWorker(void);
extern void FlakeWakeWorker(FlakeShared *s);
extern void FlakeEnsureSetUp(FlakeShared *s);

#endif							/* FLAKEID_WORKER_H */
