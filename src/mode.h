/*-------------------------------------------------------------------------
 *
 * mode.h
 *	  How this server runs flakeid: preloaded or not, and what follows from
 *	  it, as a few named questions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_MODE_H
#define FLAKEID_MODE_H

extern void FlakeModeInit(void);
extern bool FlakePreloaded(void);
extern bool FlakeLayoutFixed(void);
extern bool FlakeCanLogLease(void);
extern bool FlakeWorkerStartsWithServer(void);
extern bool FlakeCanShareGenerator(void);

#endif							/* FLAKEID_MODE_H */
