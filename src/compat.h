/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every difference between the PostgreSQL versions flakeid supports,
 *	  behind a few named helpers.  No other file tests PG_VERSION_NUM.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_COMPAT_H
#define FLAKEID_COMPAT_H

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/guc.h"

#if PG_VERSION_NUM >= 170000
#include "storage/dsm_registry.h"
#endif

/*
 * PostgreSQL 17 added the dynamic shared memory registry, which lets a
 * library that was not preloaded share state between backends.
 */
#if PG_VERSION_NUM >= 170000
#define FLAKE_HAVE_DSM_REGISTRY 1
#endif

/* This process's slot among the PGPROCs. */
#if PG_VERSION_NUM >= 170000
#define FlakeMyProcNumber()		MyProcNumber
#else
#define FlakeMyProcNumber()		(MyProc->pgprocno)
#endif

/*
 * PostgreSQL 16 keeps GUC data in a memory context and frees a check
 * hook's extra with pfree, so it must come from guc_malloc there.
 */
#if PG_VERSION_NUM >= 160000
#define FlakeGucMalloc(size)	guc_malloc(LOG, (size))
#else
#define FlakeGucMalloc(size)	malloc(size)
#endif

/*
 * A new LWLock tranche for a lock embedded in shared memory.  PostgreSQL
 * 19 names a tranche when it is made, for every process; before, each
 * process names it for itself.
 */
#if PG_VERSION_NUM >= 190000
static inline int
FlakeNewTranche(void)
{
	return LWLockNewTrancheId("flakeid");
}

static inline void
FlakeNameTranche(int tranche)
{
	(void) tranche;
}
#else
static inline int
FlakeNewTranche(void)
{
	return LWLockNewTrancheId();
}

static inline void
FlakeNameTranche(int tranche)
{
	LWLockRegisterTranche(tranche, "flakeid");
}
#endif

#ifdef FLAKE_HAVE_DSM_REGISTRY
/*
 * Find or create a named segment of the DSM registry, set up by init when
 * it is created.  PostgreSQL 19 passes the callback an argument.
 */
#if PG_VERSION_NUM >= 190000
typedef struct FlakeSegmentInit
{
	void		(*init) (void *ptr);
} FlakeSegmentInit;

static inline void
FlakeSegmentInitWithArg(void *ptr, void *arg)
{
	((FlakeSegmentInit *) arg)->init(ptr);
}

static inline void *
FlakeGetNamedSegment(const char *name, Size size, void (*init) (void *),
					 bool *found)
{
	FlakeSegmentInit how = {init};

	return GetNamedDSMSegment(name, size, FlakeSegmentInitWithArg, found, &how);
}
#else
static inline void *
FlakeGetNamedSegment(const char *name, Size size, void (*init) (void *),
					 bool *found)
{
	return GetNamedDSMSegment(name, size, init, found);
}
#endif
#endif

#endif							/* FLAKEID_COMPAT_H */
