/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Every difference between the PostgreSQL versions flakeid supports
 *	  (15 to 19), each behind one small named helper, so that no other
 *	  file needs a version test.  Include it after postgres.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_COMPAT_H
#define FLAKEID_COMPAT_H

#include "miscadmin.h"
#include "replication/syncrep.h"
#include "replication/walsender_private.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/guc.h"

#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"
#include "utils/guc_tables.h"
/* PostgreSQL 16 moved the varlena macros out of postgres.h. */
#include "varatt.h"
#endif

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

/*
 * A parameter that may be set in parallel mode, where PostgreSQL knows the
 * flag (17, and the minor releases of older versions from 2025 on).
 */
#ifdef GUC_ALLOW_IN_PARALLEL
#define FLAKE_GUC_ALLOW_IN_PARALLEL GUC_ALLOW_IN_PARALLEL
#else
#define FLAKE_GUC_ALLOW_IN_PARALLEL 0
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
 * Where the value a parameter resets to came from: PGC_S_FILE for the
 * configuration file, PGC_S_CLIENT for a connection's options, and so on.
 * For a parameter that a library not yet loaded will define, this is where
 * the value of its placeholder came from.  PostgreSQL 16 and later tell;
 * before, the answer is PGC_S_DEFAULT, "nothing known".
 */
#if PG_VERSION_NUM >= 160000
static inline GucSource
FlakeGucResetSource(const char *name)
{
	struct config_generic *record = find_option(name, false, true, DEBUG5);

	return record != NULL ? record->reset_source : PGC_S_DEFAULT;
}
#else
static inline GucSource
FlakeGucResetSource(const char *name)
{
	(void) name;
	return PGC_S_DEFAULT;
}
#endif

/*
 * Whether the server has synchronous standbys, as commits see it: the
 * shared state that the checkpointer keeps from synchronous_standby_names.
 * Minor releases of 2025 (15.13, 17.5, ...) turned its flag into a status
 * with a bit for "not read yet", when commits go by their own setting.
 */
static inline bool
FlakeSyncStandbysNamed(void)
{
#ifdef SYNC_STANDBY_DEFINED
	uint8		status = ((volatile WalSndCtlData *) WalSndCtl)->sync_standbys_status;

	if (status & SYNC_STANDBY_INIT)
		return (status & SYNC_STANDBY_DEFINED) != 0;
	return SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0';
#else
	return ((volatile WalSndCtlData *) WalSndCtl)->sync_standbys_defined;
#endif
}

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

/*
 * Soft input errors, PostgreSQL 16 and later: an input function reports bad
 * input through errsave() and ereturn(), which save the error in the
 * caller's error-saving context (fcinfo->context) when the caller passed
 * one, and throw it otherwise.  Before 16 no caller passes one, and both
 * simply throw.
 */
#if PG_VERSION_NUM < 160000
#define errsave(context, ...) \
	do { \
		(void) (context); \
		ereport(ERROR, __VA_ARGS__); \
	} while (0)
#define ereturn(context, dummy_value, ...) \
	do { \
		errsave(context, __VA_ARGS__); \
		return dummy_value; \
	} while (0)
#endif

/*
 * Parse text into *result with core's int64 parser, the one bigint's input
 * uses, without letting it throw.  Returns 0, or the SQLSTATE of the error
 * core reports: ERRCODE_INVALID_TEXT_REPRESENTATION or
 * ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE.  From 16 on the parser reports through
 * an error-saving context; before, its error is caught and dropped.
 */
static inline int
FlakeStrToInt64(const char *str, int64 *result)
{
#if PG_VERSION_NUM >= 160000
	ErrorSaveContext escontext = {0};
	int			sqlerrcode;

	escontext.type = T_ErrorSaveContext;
	escontext.details_wanted = true;
	*result = pg_strtoint64_safe(str, (Node *) &escontext);
	if (!escontext.error_occurred)
		return 0;
	sqlerrcode = escontext.error_data->sqlerrcode;
	FreeErrorData(escontext.error_data);
	return sqlerrcode;
#else
	MemoryContext context = CurrentMemoryContext;
	volatile int sqlerrcode = 0;

	PG_TRY();
	{
		*result = pg_strtoint64(str);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_INVALID_TEXT_REPRESENTATION &&
			edata->sqlerrcode != ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE)
			PG_RE_THROW();
		FlushErrorState();
		sqlerrcode = edata->sqlerrcode;
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return sqlerrcode;
#endif
}

#endif							/* FLAKEID_COMPAT_H */
