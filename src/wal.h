/*-------------------------------------------------------------------------
 *
 * wal.h
 *	  The time lease in WAL: logging it, and its resource manager.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_WAL_H
#define FLAKEID_WAL_H

#include "record.h"

extern void FlakeRegisterRmgr(void);
extern bool FlakeWalLogLease(const FlakeLease *lease, bool *confirmed);
extern void FlakeLeaseWaitsForStandbys(void);
extern bool FlakeStandbyConfirms(void);

#endif							/* FLAKEID_WAL_H */
