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

extern void FlakeRegisterLeaseWorker(void);
extern void FlakeWakeWorker(FlakeShared *s);

#endif							/* FLAKEID_WORKER_H */
