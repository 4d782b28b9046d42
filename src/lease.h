/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  Making the time lease durable: renewals by the lease worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_LEASE_H
#define FLAKEID_LEASE_H

#include "shmem.h"

extern void FlakeLeaseRenew(FlakeShared *s, uint64 *renewed_tick);
extern bool FlakeFloorPending(FlakeShared *s);

#endif							/* FLAKEID_LEASE_H */
