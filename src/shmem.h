/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  The shared generator: one per server, in shared memory, used by
 *	  every backend, parallel worker and the lease worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_SHMEM_H
#define FLAKEID_SHMEM_H

#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#include "confirm.h"
#include "layout.h"
#include "record.h"
#include "statefile.h"

/*
 * Whether the generator issues IDs, and if not, why.  Part of the word
 * that every call reads.
 */
typedef enum FlakeStatus
{
	FLAKE_GEN_READY = 0,			/* generating */
	FLAKE_GEN_NOT_SET_UP,			/* waiting to be set up from the configuration */
	FLAKE_GEN_CHANGING,				/* a node id or layout is being adopted */
	FLAKE_GEN_NODE_UNSET,			/* flakeid.node_id is not set */
	FLAKE_GEN_LAYOUT_CHANGED,		/* the settings differ from the recorded layout */
	FLAKE_GEN_LAYOUT_INVALID,		/* a layout setting was rejected */
	FLAKE_GEN_FILE_DAMAGED,		/* no copy of the lease in the file is valid */
	FLAKE_GEN_FILE_UNREADABLE,	/* the state file could not be read */
	FLAKE_GEN_FILE_BEHIND		/* a replayed lease is not in the file yet */
} FlakeStatus;

/*
 * The word: a generation, bumped by every change, the status and the node
 * id.  A call reads it before and after it reserves: when it changed in
 * between, the reservation is skipped and the call starts again.
 */
#define FLAKE_WORD_NODE_MASK	0xFFFF
#define FLAKE_WORD_STATUS_SHIFT 16
#define FLAKE_WORD_GEN_SHIFT	24

static inline uint32
FlakeWord(uint32 gen, FlakeStatus status, int32 node)
{
	return (gen << FLAKE_WORD_GEN_SHIFT) |
		((uint32) status << FLAKE_WORD_STATUS_SHIFT) |
		((uint32) node & FLAKE_WORD_NODE_MASK);
}

static inline FlakeStatus
FlakeWordStatus(uint32 word)
{
	return (FlakeStatus) ((word >> FLAKE_WORD_STATUS_SHIFT) & 0xFF);
}

static inline int32
FlakeWordNode(uint32 word)
{
	return (int32) (word & FLAKE_WORD_NODE_MASK);
}

static inline uint32
FlakeWordGen(uint32 word)
{
	return word >> FLAKE_WORD_GEN_SHIFT;
}

/* A per-process counter of issued IDs, alone on its cache line. */
typedef union FlakeSlot
{
	pg_atomic_uint64 issued;
	char		pad[PG_CACHE_LINE_SIZE];
} FlakeSlot;

typedef struct FlakeShared
{
	/* The next free tick: every call advances it. */
	pg_atomic_uint64 next_tick;
	char		pad1[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];

	/* Read by every call, rarely written. */
	pg_atomic_uint32 word;		/* see FlakeWord() */
	pg_atomic_uint32 renew_asked;	/* a caller woke the lease worker */
	pg_atomic_uint64 lease_end; /* durable: every ID issued has ms < it */
	FlakeLayout layout;			/* IDs are made and decoded with it */
	char		pad2[PG_CACHE_LINE_SIZE - 2 * sizeof(pg_atomic_uint32) -
					 sizeof(pg_atomic_uint64) - sizeof(FlakeLayout)];

	/* The part of the lease the synchronous standbys have (confirm.c). */
	FlakeConfirm confirm;

	/* The slow paths. */
	pg_atomic_uint64 lease_wanted;	/* a lease end some caller needs */
	pg_atomic_uint64 waits;		/* calls that slept for the clock */
	pg_atomic_uint64 clock_steps_back;	/* backward steps seen */
	pg_atomic_uint64 worker_launched_at;	/* ms, when not preloaded */
	pg_atomic_uint64 file_writes;	/* attempts to write the state file */
	pg_atomic_uint64 promotion_floor;	/* ms: the last floor after recovery */
	ConditionVariable lease_cv; /* broadcast after each renewal */

	/* Protected by lock, which also serialises writes of the state file. */
	LWLock		lock;
	bool		set_up;			/* the settings and the file are read */
	Latch	   *worker_latch;	/* the lease worker's, or NULL */
	FlakeLayout configured;		/* the layout the settings gave at start */
	bool		configured_valid;	/* false: a layout setting was rejected */
	int32		node_id;		/* FLAKE_NODE_UNSET or fits layout */
	FlakeFileStatus file_status;	/* what reading the state file found */
	int			file_errno;		/* why it could not be read */
	bool		have_recorded;	/* whether recorded holds a lease */
	FlakeLease	recorded;		/* the newest lease, on disk unless behind */
	bool		file_behind;	/* recorded was replayed, not yet written */
	uint64		serial;			/* of the newest record on disk */
	FlakeFileEntry file_entry;	/* the file whose entry is on disk */
	bool		changing;		/* a node id or layout is being adopted */
	bool		accepting;		/* flakeid_accept_layout() is at work */
	bool		lease_failing;	/* the last write of the file failed */
	int			lease_errno;	/* and why */
	TimestampTz started;

	int			nslots;
	FlakeSlot	slots[FLEXIBLE_ARRAY_MEMBER];
} FlakeShared;

extern void FlakeShmemInit(void);
extern FlakeShared *FlakeAttach(void);
extern void FlakeSetUp(FlakeShared *s);
extern FlakeSlot *FlakeMySlot(void);
extern void FlakeCheckMonitor(const char *function);
extern uint32 FlakeSnapshot(FlakeShared *s, FlakeLayout *layout);
extern void FlakePublish(FlakeShared *s);
extern void FlakeSetFloor(FlakeShared *s, int64 floor_ms);
extern void FlakeAdoptNode(FlakeShared *s, int32 node_id);
extern bool FlakeStoreLease(FlakeShared *s, const FlakeLease *lease,
							bool is_floor);
extern bool FlakeAdoptLease(FlakeShared *s, const FlakeLease *lease);
extern bool FlakeRecordedLease(FlakeShared *s, FlakeLease *lease);


#endif							/* FLAKEID_SHMEM_H */
