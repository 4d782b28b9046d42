/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Where the shared generator lives, how it starts, and the changes of
 *	  its settings: the node id, the layout, the floor.
 *
 * Preloaded (shared_preload_libraries), the generator is in the main
 * shared memory, set up in the postmaster; the library then also starts
 * the lease worker with the server and WAL-logs the lease.  Without
 * preloading, PostgreSQL 17 and later keep it in a segment of the dynamic
 * shared memory registry, set up by the first session that needs it, and
 * older versions have nowhere to keep it (see mode.c).
 *
 * The generator takes its node id and layout from the server's
 * configuration only.  Preloaded, the postmaster sets it up.  Without
 * preloading, the segment is set up by the first process that attaches to
 * it and whose settings are the configuration's (see FlakeMaySetUp()):
 * never by a session whose settings came from its connection options or
 * its role's or database's settings, and never by a parallel worker.
 * Until then its status is FLAKE_GEN_NOT_SET_UP, and such a process asks
 * the lease worker, whose settings are the postmaster's, to set it up.
 *
 * Whatever changes the generator's status, node id, layout or floor holds
 * the lock and ends with FlakePublish(), which gives the word a new
 * generation.  A call that reserved IDs while the word changed drops them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "access/twophase.h"
#include "catalog/pg_authid.h"
#include "utils/acl.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "guc.h"
#include "layout.h"
#include "mode.h"
#include "record.h"
#include "shmem.h"
#include "statefile.h"

static FlakeShared *flake_shared = NULL;
static FlakeSlot *my_slot = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static int
FlakeSlotCount(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static Size
FlakeShmemSize(void)
{
	return add_size(offsetof(FlakeShared, slots),
					mul_size(FlakeSlotCount(), sizeof(FlakeSlot)));
}

/* The status that the facts under the lock add up to, first cause first. */
static FlakeStatus
FlakeComputeStatus(const FlakeShared *s)
{
	if (s->changing)
		return FLAKE_GEN_CHANGING;
	if (!s->set_up)
		return FLAKE_GEN_NOT_SET_UP;
	if (!s->configured_valid)
		return FLAKE_GEN_LAYOUT_INVALID;
	if (s->file_status == FLAKE_FILE_UNREADABLE)
		return FLAKE_GEN_FILE_UNREADABLE;
	if (s->file_status == FLAKE_FILE_DAMAGED)
		return FLAKE_GEN_FILE_DAMAGED;
	if (s->file_behind)
		return FLAKE_GEN_FILE_BEHIND;
	if (!FlakeSameLayout(&s->configured, &s->layout))
		return FLAKE_GEN_LAYOUT_CHANGED;
	if (!FlakeNodeFits(&s->layout, s->node_id))
		return FLAKE_GEN_NODE_UNSET;
	return FLAKE_GEN_READY;
}

/*
 * Give the word a new generation with the current status and node id.
 * The caller holds the lock (or is setting the generator up).  Generation
 * 0 is never used, so that a word of 0 is never current.
 */
void
FlakePublish(FlakeShared *s)
{
	uint32		old = pg_atomic_read_u32(&s->word);
	uint32		gen = FlakeWordGen(old) % 255 + 1;
	int32		node = FlakeNodeFits(&s->layout, s->node_id) ? s->node_id : 0;

	/*
	 * pg_atomic_exchange_u32() is a full memory barrier (port/atomics.h):
	 * every store before it (the layout, the node id, next_tick, the lease
	 * end, the status's facts) is visible to another process before the
	 * new word is.  Readers pair it with the read barriers of
	 * FlakeSnapshot(), and with the fetch-and-add or compare-and-swap of a
	 * reservation, also full barriers, before they read the word again.
	 * x86 does not reorder stores, so no test there sees this barrier go.
	 */
	(void) pg_atomic_exchange_u32(&s->word,
								  FlakeWord(gen, FlakeComputeStatus(s), node));
}

/*
 * A consistent copy of the layout, and the word it goes with.  The layout
 * changes only between two publications, so it is read between two equal
 * reads of the word.
 */
uint32
FlakeSnapshot(FlakeShared *s, FlakeLayout *layout)
{
	for (;;)
	{
		uint32		word = pg_atomic_read_u32(&s->word);

		pg_read_barrier();
		*layout = s->layout;
		pg_read_barrier();
		if (pg_atomic_read_u32(&s->word) == word &&
			FlakeWordStatus(word) != FLAKE_GEN_CHANGING)
			return word;
		pg_usleep(10L);
	}
}

/*
 * Make the next ID's millisecond at least floor_ms, and let nothing be
 * issued until a lease past it is durable.  Only ever raises both: a call
 * that read the status word before it changed may still take ticks
 * meanwhile (and drop them), so next_tick is raised by compare-and-swap.
 */
void
FlakeSetFloor(FlakeShared *s, int64 floor_ms)
{
	uint64		tick = FlakeTickOfMs(&s->layout, floor_ms);
	uint64		next = pg_atomic_read_u64(&s->next_tick);

	while (next < tick &&
		   !pg_atomic_compare_exchange_u64(&s->next_tick, &next, tick))
		;
	if ((int64) pg_atomic_read_u64(&s->lease_end) < floor_ms)
		pg_atomic_write_u64(&s->lease_end, (uint64) floor_ms);
}

/*
 * Switch to another layout.  Ticks of the old one mean nothing in the new
 * one, so the counter and the lease start over; the caller sets the floor.
 */
static void
FlakeSetLayout(FlakeShared *s, const FlakeLayout *layout)
{
	s->changing = true;
	FlakePublish(s);
	s->layout = *layout;
	pg_atomic_write_u64(&s->next_tick, 0);
	pg_atomic_write_u64(&s->lease_end, 0);
	FlakeConfirmReset(&s->confirm);
	s->changing = false;
}

/* Read the state file at setup: the recorded layout and the floor. */
static void
FlakeLoadStateFile(FlakeShared *s)
{
	FlakeLease	lease;
	FlakeFileStatus status = FlakeStateFileRead(&lease, &s->serial);

	s->file_status = status;
	s->file_errno = errno;
	s->layout = s->configured;
	switch (status)
	{
		case FLAKE_FILE_OK:
			s->have_recorded = true;
			s->recorded = lease;
			FlakeLeaseLayout(&lease, &s->layout);
			FlakeSetFloor(s, lease.lease_end);
			if (!FlakeSameLayout(&s->layout, &s->configured) && s->configured_valid)
				ereport(LOG,
						(errmsg("flakeid layout differs from the one recorded in \"%s\"; IDs will not be generated",
								FLAKE_STATE_FILE),
						 errhint("IDs are decoded with the recorded layout until flakeid_accept_layout() accepts the new one.")));
			break;
		case FLAKE_FILE_MISSING:
			ereport(LOG,
					(errmsg("flakeid state file \"%s\" not found: IDs start from the clock",
							FLAKE_STATE_FILE),
					 errdetail("This is expected when the server has not generated IDs before. If the file was lost, "
							   "IDs that this node id issued at or after the clock may be issued again.")));
			break;
		case FLAKE_FILE_DAMAGED:
			ereport(LOG,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("flakeid state file \"%s\" is damaged; IDs will not be generated",
							FLAKE_STATE_FILE)));
			break;
		case FLAKE_FILE_UNREADABLE:
			errno = s->file_errno;
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not read flakeid state file \"%s\": %m; IDs will not be generated",
							FLAKE_STATE_FILE)));
			break;
	}
}

/*
 * Take the node id and the layout from this process's settings, which are
 * the configuration's, and the floor from the state file.
 */
static void
FlakeLoadSettings(FlakeShared *s)
{
	s->configured_valid = FlakeConfiguredLayout(&s->configured, NULL);
	s->node_id = flake_node_id;
	FlakeLoadStateFile(s);
	s->set_up = true;
}

/*
 * Make the generator, not yet set up; set it up too if this process's
 * settings are the configuration's.
 */
static void
FlakeInitShared(void *ptr)
{
	FlakeShared *s = (FlakeShared *) ptr;

	memset(s, 0, FlakeShmemSize());
	pg_atomic_init_u64(&s->next_tick, 0);
	pg_atomic_init_u32(&s->word, 0);
	pg_atomic_init_u32(&s->renew_asked, 0);
	pg_atomic_init_u64(&s->lease_end, 0);
	pg_atomic_init_u64(&s->lease_wanted, 0);
	pg_atomic_init_u64(&s->waits, 0);
	pg_atomic_init_u64(&s->clock_steps_back, 0);
	pg_atomic_init_u64(&s->worker_launched_at, 0);
	pg_atomic_init_u64(&s->file_writes, 0);
	pg_atomic_init_u64(&s->promotion_floor, 0);
	ConditionVariableInit(&s->lease_cv);
	LWLockInitialize(&s->lock, FlakeNewTranche());
	FlakeConfirmInit(&s->confirm, s->lock.tranche);
	s->worker_latch = NULL;
	s->started = GetCurrentTimestamp();
	s->nslots = FlakeSlotCount();
	for (int i = 0; i < s->nslots; i++)
		pg_atomic_init_u64(&s->slots[i].issued, 0);

	if (FlakeMaySetUp())
		FlakeLoadSettings(s);
	FlakePublish(s);
}

/*
 * Set the generator up from this process's settings unless it is set up
 * already.  Only a process whose settings are the configuration's may call
 * it: the lease worker, or a session for which FlakeMaySetUp().
 */
void
FlakeSetUp(FlakeShared *s)
{
	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	if (!s->set_up)
	{
		FlakeLoadSettings(s);
		FlakePublish(s);
	}
	LWLockRelease(&s->lock);
}

static void
FlakeShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(FlakeShmemSize());
}

/* Set up the generator in the postmaster, when preloaded. */
static void
FlakeShmemStartup(void)
{
	bool		found;
	FlakeShared *s;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	s = ShmemInitStruct("flakeid", FlakeShmemSize(), &found);
	if (!found)
		FlakeInitShared(s);
	flake_shared = s;
	LWLockRelease(AddinShmemInitLock);
	FlakeNameTranche(s->lock.tranche);
}

/* When preloading, ask for shared memory and set it up at startup. */
void
FlakeShmemInit(void)
{
	if (!FlakePreloaded())
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = FlakeShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = FlakeShmemStartup;
}

/* The shared generator, or NULL where there can be none. */
FlakeShared *
FlakeAttach(void)
{
#ifdef FLAKE_HAVE_DSM_REGISTRY
	if (unlikely(flake_shared == NULL) && !FlakePreloaded())
	{
		bool		found;
		FlakeShared *s;

		s = FlakeGetNamedSegment("flakeid", FlakeShmemSize(), FlakeInitShared,
								 &found);
		FlakeNameTranche(s->lock.tranche);
		flake_shared = s;
	}
#endif
	return flake_shared;
}

/*
 * Server-wide figures (the generator's status, the state file) are for
 * monitoring roles, whichever version of the extension's SQL is installed
 * and whatever EXECUTE it grants.
 */
void
FlakeCheckMonitor(const char *function)
{
	if (!has_privs_of_role(GetUserId(), ROLE_PG_MONITOR))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", function),
				 errdetail("Only roles with the privileges of the \"%s\" role may read the server-wide state of flakeid.",
						   "pg_monitor"),
				 errhint("Grant pg_monitor to the role that monitors flakeid.")));
}

/* This process's counter of issued IDs. */
FlakeSlot *
FlakeMySlot(void)
{
	if (unlikely(my_slot == NULL))
	{
		FlakeShared *s = FlakeAttach();

		Assert(s != NULL && FlakeMyProcNumber() < s->nslots);
		my_slot = &s->slots[FlakeMyProcNumber()];
	}
	return my_slot;
}

/*
 * Adopt a node id from the settings (the lease worker, after a reload).
 * IDs of the new node id start in a later millisecond than every ID of the
 * old one, so that they stay strictly increasing.  A node id that does not
 * fit the layout in use is not adopted: the old one stays, as PostgreSQL
 * keeps a setting whose new value it rejects.
 */
void
FlakeAdoptNode(FlakeShared *s, int32 node_id)
{
	int32		old;

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	old = s->node_id;
	if (node_id == old)
	{
		LWLockRelease(&s->lock);
		return;
	}
	if (node_id != FLAKE_NODE_UNSET && !FlakeNodeFits(&s->layout, node_id))
	{
		LWLockRelease(&s->lock);
		ereport(LOG,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flakeid.node_id %d does not fit the layout in use; node id %d stays",
						node_id, old),
				 errdetail("The generator uses flakeid.node_bits = %d, so node ids run from 0 to %d.",
						   s->layout.node_bits, FlakeMaxNode(&s->layout))));
		return;
	}

	/* calls that reserve from here on start over and wait for the end */
	s->changing = true;
	FlakePublish(s);
	for (;;)
	{
		uint64		next = pg_atomic_read_u64(&s->next_tick);
		uint64		bump = next == 0 ? 0 :
			FlakeTickOfMs(&s->layout, FlakeTickMs(&s->layout, next - 1) + 1);

		if (bump <= next ||
			pg_atomic_compare_exchange_u64(&s->next_tick, &next, bump))
			break;
	}
	s->node_id = node_id;
	s->changing = false;
	FlakePublish(s);
	LWLockRelease(&s->lock);

	if (node_id == FLAKE_NODE_UNSET)
		ereport(LOG,
				(errmsg("flakeid.node_id is no longer set; IDs will not be generated")));
	else if (old == FLAKE_NODE_UNSET)
		ereport(LOG,
				(errmsg("flakeid node id set to %d", node_id)));
	else
		ereport(LOG,
				(errmsg("flakeid node id changed from %d to %d", old, node_id)));
}

/*
 * Take a lease into the generator: a renewal raises the lease end; a
 * floor (a replayed or accepted lease) may also bring a layout and raises
 * the next ID.  The caller holds the lock.
 */
static void
FlakeTakeLease(FlakeShared *s, const FlakeLease *lease, bool is_floor)
{
	FlakeLayout layout;

	s->recorded = *lease;
	s->have_recorded = true;
	FlakeLeaseLayout(lease, &layout);
	if (is_floor)
	{
		if (!FlakeSameLayout(&layout, &s->layout))
			FlakeSetLayout(s, &layout);
		FlakeSetFloor(s, lease->lease_end);
	}
	else if ((int64) pg_atomic_read_u64(&s->lease_end) < lease->lease_end)
		pg_atomic_write_u64(&s->lease_end, (uint64) lease->lease_end);
}

/*
 * Write a lease to the state file and, if that worked, take it into the
 * generator.  Returns false with errno set when the file could not be
 * written; the generator is then unchanged.  The caller holds the lock.
 */
static bool
FlakeWriteLease(FlakeShared *s, const FlakeLease *lease, bool is_floor)
{
	pg_atomic_fetch_add_u64(&s->file_writes, 1);
	if (!FlakeStateFileWrite(lease, s->serial + 1, &s->file_entry))
	{
		int			save_errno = errno;

		if (!s->lease_failing)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not write flakeid state file \"%s\": %m", FLAKE_STATE_FILE),
					 errdetail("No IDs will be generated past the lease in the file until the file can be written.")));
		s->lease_failing = true;
		s->lease_errno = save_errno;
		errno = save_errno;
		return false;
	}
	if (s->lease_failing)
		ereport(LOG,
				(errmsg("flakeid state file \"%s\" written again", FLAKE_STATE_FILE)));
	s->lease_failing = false;
	s->serial++;
	s->file_status = FLAKE_FILE_OK;
	s->file_behind = false;
	FlakeTakeLease(s, lease, is_floor);
	return true;
}

/*
 * Store a lease in the state file and in the generator (see
 * FlakeWriteLease()).
 */
bool
FlakeStoreLease(FlakeShared *s, const FlakeLease *lease, bool is_floor)
{
	bool		written;
	int			save_errno;

	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	written = FlakeWriteLease(s, lease, is_floor);
	save_errno = errno;
	if (written)
		FlakePublish(s);
	LWLockRelease(&s->lock);
	errno = save_errno;
	return written;
}

/*
 * Adopt a lease replayed from WAL, on a standby or in crash recovery,
 * unless it is older than the newest one known: the floor never goes
 * back.  When the state file cannot be written, the lease is kept in
 * memory all the same, so that neither recovery nor replication stops
 * for flakeid's own file, and generation waits until the lease worker has
 * written it (FLAKE_GEN_FILE_BEHIND).  Returns whether the lease was
 * adopted.
 */
bool
FlakeAdoptLease(FlakeShared *s, const FlakeLease *lease)
{
	LWLockAcquire(&s->lock, LW_EXCLUSIVE);
	if (s->have_recorded &&
		(!FlakeLeaseCovers(lease, &s->recorded) ||
		 memcmp(lease, &s->recorded, sizeof(FlakeLease)) == 0))
	{
		LWLockRelease(&s->lock);
		return false;
	}
	if (!FlakeWriteLease(s, lease, true))
	{
		FlakeLayout layout;

		FlakeLeaseLayout(lease, &layout);
		if (!s->file_behind)
			ereport(LOG,
					(errmsg("flakeid keeps the replayed time lease in memory until the state file can be written"),
					 errdetail("The lease ends at %s. No IDs are generated until the file holds it.",
							   timestamptz_to_str(FlakeTimestamp(&layout, lease->lease_end)))));
		s->file_behind = true;
		FlakeTakeLease(s, lease, true);
	}
	FlakePublish(s);
	LWLockRelease(&s->lock);
	return true;
}

/*
 * The newest lease known (on disk, or replayed and not yet written);
 * false when there is none.
 */
bool
FlakeRecordedLease(FlakeShared *s, FlakeLease *lease)
{
	bool		have;

	LWLockAcquire(&s->lock, LW_SHARED);
	have = s->have_recorded;
	if (have)
		*lease = s->recorded;
	LWLockRelease(&s->lock);
	return have;
}
