/*-------------------------------------------------------------------------
 *
 * wal.h
 *	  The time lease in WAL: logging it, and its resource manager.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_WAL_H
#define FLAKEID_WAL_H

#include "access/xlogdefs.h"

#include "record.h"

extern void FlakeRegisterRmgr(void);
extern XLogRecPtr FlakeWalLogLease(const FlakeLease *lease);
extern bool FlakeStandbyConfirms(void);

#endif							/* FLAKEID_WAL_H */
