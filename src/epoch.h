/*-------------------------------------------------------------------------
 *
 * epoch.h
 *	  Reading flakeid.epoch: an ISO-8601 UTC timestamp.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_EPOCH_H
#define FLAKEID_EPOCH_H

extern bool FlakeParseEpoch(const char *str, int64 *result);

#endif							/* FLAKEID_EPOCH_H */
