/*-------------------------------------------------------------------------
 *
 * state.h
 *	  The generator's state in shared memory, shared by generator.c (the
 *	  hot path and the SQL functions) and lease.c (the time lease file and
 *	  its background worker).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_STATE_H
#define FLAKEID_STATE_H

#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#include "flakeid.h"

/* How far ahead of use the lease reaches, in milliseconds. */
#define FLAKE_LEASE_MS			1000

/* The longest a call waits for the lease worker before it gives up. */
#define FLAKE_LEASE_WAIT_MS		10000

#define FLAKE_STATE_FILE		"flakeid.state"

typedef enum FlakeState
{
	FLAKE_READY,				/* generating */
	FLAKE_LAYOUT_CHANGED,		/* the state file has another layout */
	FLAKE_STATE_UNREADABLE		/* the state file exists but is damaged */
} FlakeState;

/* A per-process counter of issued IDs, alone on its cache line. */
typedef union FlakeSlot
{
	pg_atomic_uint64 issued;
	char		pad[PG_CACHE_LINE_SIZE];
} FlakeSlot;

typedef struct FlakeShared
{
	/* The last issued ID: every call advances it by compare-and-swap. */
	pg_atomic_uint64 last;
	char		pad1[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];

	/* Read by every call, rarely written. */
	pg_atomic_uint64 lease_end; /* every ID issued has ms < lease_end */
	pg_atomic_uint32 state;		/* a FlakeState */
	pg_atomic_uint32 renew_asked;	/* a caller woke the worker */
	char		pad2[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64) -
					 2 * sizeof(pg_atomic_uint32)];

	/* The slow paths. */
	pg_atomic_uint64 lease_wanted;	/* a lease end some caller needs */
	pg_atomic_uint64 waits;		/* calls that slept for the clock */
	pg_atomic_uint64 clock_steps_back;	/* backward steps seen */
	ConditionVariable lease_cv; /* broadcast after each renewal */
	Latch	   *worker_latch;	/* the lease worker's, or NULL */
	pg_atomic_uint32 worker_launching;	/* a backend started the worker */

	/* Protected by lock, which also serialises writes of the file. */
	LWLock		lock;
	FlakeLayout layout;			/* this server's layout */
	FlakeLayout recorded;		/* the layout found in the state file */
	int64		recorded_lease_end; /* its lease end, in its layout */
	uint64		serial;			/* of the last record written */
	bool		lease_failing;	/* the last write of the file failed */
	int			lease_errno;	/* and why */
	TimestampTz started;

	int			nslots;
	FlakeSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} FlakeShared;

extern FlakeShared *flake_shared;
extern bool flake_preloaded;

/* generator.c */
extern FlakeShared *FlakeGetShared(void);
extern int64 FlakeClockMs(void);
extern void FlakeWakeWorker(FlakeShared *s);
extern void FlakeSetFloor(FlakeShared *s, int64 floor_ms);

/* lease.c */
extern void FlakeStateLoad(FlakeShared *s);
extern void FlakeLeaseRedo(const FlakeLayout *layout, int64 lease_end);
extern void FlakeLaunchWorker(FlakeShared *s);

/* wal.c */
extern void FlakeLogLease(const FlakeLayout *layout, int64 lease_end);

#endif							/* FLAKEID_STATE_H */
