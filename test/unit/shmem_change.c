/*
 * The status that the generator's facts give (FlakeComputeStatus() in
 * src/shmem.c), first cause first; and a change of the node id
 * (FlakeAdoptNode()) or of the layout (a replayed floor that brings
 * another one, FlakeAdoptLease()) as another process sees it.  The change publishes the status word when it
 * begins and again when it is done; a process that reads the word and
 * copies the layout (FlakeSnapshot()) in between must wait for the end:
 * taking the word of the beginning, it would reserve ticks with the old
 * node id after the change began, or keep a layout copied while it was
 * being written.  The first publication must also give the word a new
 * generation, so that a call that read the word before the change drops
 * what it reserves meanwhile.
 * A change and a floor raise the next tick by compare-and-swap: a call
 * that reserves meanwhile is never set back, and the new node id's IDs
 * start past its ticks too.
 * The lock, the state file and the server's other functions are stubs:
 * one process, in which another process's snapshot runs after each
 * publication, and its wait (pg_usleep()) ends that step; another
 * process's reservation runs before a chosen swap of the next tick.
 */
#include "postgres.h"

#include <setjmp.h>
#include <stdio.h>

#include "port/atomics.h"

static uint32 exchange_then_other(volatile pg_atomic_uint32 *ptr,
								  uint32 value);
static bool other_then_swap(volatile pg_atomic_uint64 *ptr, uint64 *expected,
							uint64 newval);

#define pg_atomic_exchange_u32(ptr, value) exchange_then_other(ptr, value)
#define pg_atomic_compare_exchange_u64(ptr, expected, newval) \
	other_then_swap(ptr, expected, newval)

#include "../../src/shmem.c"
#include "tap.h"
#include "stubs.h"

/* the server's variables that src/shmem.c reads */
int			MaxBackends = 4;
int			max_prepared_xacts = 2;
int			flake_node_id = FLAKE_NODE_UNSET;
PGPROC	   *MyProc = NULL;
LWLockPadded *MainLWLockArray = NULL;
shmem_request_hook_type shmem_request_hook = NULL;
shmem_startup_hook_type shmem_startup_hook = NULL;

static FlakeShared *shared;

/* shared memory at startup: what was asked for, and whether it exists */
static Size space_requested;
static bool shmem_found;


/* What the other process saw after one publication. */
typedef struct Seen
{
	uint32		published;		/* the word published */
	bool		returned;		/* its snapshot returned (did not wait) */
	uint32		word;			/* what the snapshot returned, if it did */
	FlakeLayout layout;
} Seen;

#define MAX_SEEN 8
static Seen seen[MAX_SEEN];
static int	nseen = 0;
static bool watching = false;	/* run the other process after publishing */
static bool in_other = false;
static sigjmp_buf other_waits;

/* Another process takes a snapshot; a wait ends its step. */
static void
other_snapshot(uint32 published)
{
	Seen	   *step;

	if (nseen >= MAX_SEEN)
	{
		tap_bail("more publications than expected");
	}
	step = &seen[nseen++];
	step->published = published;
	step->returned = false;
	in_other = true;
	if (sigsetjmp(other_waits, 0) == 0)
	{
		step->word = FlakeSnapshot(shared, &step->layout);
		step->returned = true;
	}
	in_other = false;
}

static uint32
exchange_then_other(volatile pg_atomic_uint32 *ptr, uint32 value)
{
	uint32		old = (pg_atomic_exchange_u32) (ptr, value);

	if (watching && shared != NULL && ptr == &shared->word)
		other_snapshot(value);
	return old;
}

/* another process's reservation, run once before the next swap of next_tick */
static uint64 other_takes = 0;

static bool
other_then_swap(volatile pg_atomic_uint64 *ptr, uint64 *expected, uint64 newval)
{
	if (other_takes > 0 && shared != NULL && ptr == &shared->next_tick)
	{
		pg_atomic_fetch_add_u64(ptr, other_takes);
		other_takes = 0;
	}
	return (pg_atomic_compare_exchange_u64) (ptr, expected, newval);
}

void
pg_usleep(long microsec)
{
	(void) microsec;
	if (!in_other)
	{
		tap_bail("the changing process itself waited");
	}
	siglongjmp(other_waits, 1);
}

/* The stubs of the rest of the server. */
bool
LWLockAcquire(LWLock *lock, LWLockMode mode)
{
	(void) lock;
	(void) mode;
	return true;
}

#if PG_VERSION_NUM >= 190000
int
LWLockNewTrancheId(const char *name)
{
	(void) name;
	return 1;
}
#else
int
LWLockNewTrancheId(void)
{
	return 1;
}

void
LWLockRegisterTranche(int tranche_id, const char *tranche_name)
{
	(void) tranche_id;
	(void) tranche_name;
}
#endif

#ifdef FLAKE_HAVE_DSM_REGISTRY
/* PostgreSQL 17 and later: where the generator lives without preloading */
ProcNumber	MyProcNumber = 0;

/* the segment of the registry, made at the first ask */
static void *registry_segment = NULL;
static int	registry_asks = 0;

#if PG_VERSION_NUM >= 190000
void *
GetNamedDSMSegment(const char *name, size_t size,
				   void (*init_callback) (void *ptr, void *arg),
				   bool *found, void *arg)
{
#else
void *
GetNamedDSMSegment(const char *name, size_t size,
				   void (*init_callback) (void *ptr), bool *found)
{
#endif
	registry_asks++;
	if (strcmp(name, "flakeid") != 0 || size != FlakeShmemSize())
	{
		tap_bail("another segment was asked for");
	}
	*found = registry_segment != NULL;
	if (!*found)
	{
		registry_segment = aligned_alloc(PG_CACHE_LINE_SIZE,
										 TYPEALIGN(PG_CACHE_LINE_SIZE, size));
		memset(registry_segment, 0x7f, size);
#if PG_VERSION_NUM >= 190000
		init_callback(registry_segment, arg);
#else
		init_callback(registry_segment);
#endif
	}
	return registry_segment;
}
#endif

void
ConditionVariableInit(ConditionVariable *cv)
{
	(void) cv;
}

void
FlakeConfirmInit(FlakeConfirm *c, int tranche)
{
	(void) c;
	(void) tranche;
}

void
FlakeConfirmReset(FlakeConfirm *c)
{
	(void) c;
}

/* the settings a set-up reads, and whether this process may set up */
static bool may_set_up = false;
static FlakeLayout settings_layout;
static bool settings_valid;

bool
FlakeConfiguredLayout(FlakeLayout *layout, const char **bad_setting)
{
	if (!may_set_up)
	{
		tap_bail("the settings were read");
	}
	(void) bad_setting;
	*layout = settings_layout;
	return settings_valid;
}

bool
FlakeMaySetUp(void)
{
	return may_set_up;
}

static bool preloaded = true;

bool
FlakePreloaded(void)
{
	return preloaded;
}

/* what reading the state file finds */
static FlakeFileStatus file_found = FLAKE_FILE_MISSING;
static FlakeLease file_lease;
static int	file_read_errno;

FlakeFileStatus
FlakeStateFileRead(FlakeLease *lease, uint64 *serial)
{
	if (file_found == FLAKE_FILE_OK)
	{
		*lease = file_lease;
		*serial = 5;
	}
	errno = file_read_errno;
	return file_found;
}

/* the state file: whether writes fail, and what was written last */
static bool write_fails = false;
static FlakeLease written;
static uint64 written_serial = 0;

bool
FlakeStateFileWrite(const FlakeLease *lease, uint64 serial,
					FlakeFileEntry *entry)
{
	(void) entry;
	if (write_fails)
	{
		errno = ENOSPC;
		return false;
	}
	written = *lease;
	written_serial = serial;
	return true;
}

TimestampTz
GetCurrentTimestamp(void)
{
	return 0;
}

Oid
GetUserId(void)
{
	return InvalidOid;
}

static bool monitor_role = true;

bool
has_privs_of_role(Oid member, Oid role)
{
	(void) member;
	return role == ROLE_PG_MONITOR && monitor_role;
}

void
RequestAddinShmemSpace(Size size)
{
	space_requested = size;
}

void *
ShmemInitStruct(const char *name, Size size, bool *foundPtr)
{
	if (strcmp(name, "flakeid") != 0 || size != FlakeShmemSize())
		tap_bail("shared memory asked for under another name or size");
	*foundPtr = shmem_found;
	return shared;
}

Size
add_size(Size s1, Size s2)
{
	return s1 + s2;
}

Size
mul_size(Size s1, Size s2)
{
	return s1 * s2;
}


static const FlakeLayout layout_a = {INT64CONST(1735689600000), 10};
static const FlakeLayout layout_b = {INT64CONST(1704067200000), 12};

/* A generator in use: layout a, node 1, IDs reserved into ms 5000. */
static void
set_up_generator(void)
{
	if (shared == NULL)
		shared = calloc(1, FlakeShmemSize());
	watching = false;
	FlakeInitShared(shared);
	shared->configured = layout_a;
	shared->configured_valid = true;
	shared->layout = layout_a;
	shared->file_status = FLAKE_FILE_OK;
	shared->node_id = 1;
	shared->set_up = true;
	pg_atomic_write_u64(&shared->next_tick,
						FlakeTickOfMs(&layout_a, 5000) + 17);
	pg_atomic_write_u64(&shared->lease_end, 6000);
	FlakeLeaseFill(&shared->recorded, &layout_a, 1, 6000, 1);
	shared->have_recorded = true;
	shared->serial = 7;
	FlakePublish(shared);
	nseen = 0;
	other_takes = 0;
	write_fails = false;
	written_serial = 0;
	stub_nmessages = 0;
	watching = true;
}

/*
 * A generator made (FlakeInitShared()) by a process that may set it up:
 * node 4, the configured layout a, the state file as given
 */
static void
make_generator(FlakeFileStatus found, const FlakeLease *lease, int err)
{
	watching = false;
	may_set_up = true;
	settings_layout = layout_a;
	settings_valid = true;
	flake_node_id = 4;
	file_found = found;
	if (lease)
		file_lease = *lease;
	file_read_errno = err;
	stub_nmessages = 0;
	FlakeInitShared(shared);
	may_set_up = false;
}

/* the generator made and set up: counters at zero, the settings and the file read */
static void
check_set_up(void)
{
	FlakeLease	lease;
	bool		zero = true;
	bool		caught = false;
	sigjmp_buf	jump;

	/* made by a process that may not set it up: every counter at zero */
	set_up_generator();
	watching = false;
	memset(shared, 0x5a, FlakeShmemSize());
	stub_nmessages = 0;
	FlakeInitShared(shared);
	for (int i = 0; i < shared->nslots; i++)
		zero = zero && pg_atomic_read_u64(&shared->slots[i].issued) == 0;
	tap_check(pg_atomic_read_u64(&shared->next_tick) == 0 && pg_atomic_read_u32(&shared->renew_asked) == 0 &&
			  pg_atomic_read_u64(&shared->lease_end) == 0 && pg_atomic_read_u64(&shared->lease_wanted) == 0 &&
			  pg_atomic_read_u64(&shared->waits) == 0 && pg_atomic_read_u64(&shared->clock_steps_back) == 0 &&
			  pg_atomic_read_u64(&shared->worker_launched_at) == 0 &&
			  pg_atomic_read_u64(&shared->file_writes) == 0 &&
			  pg_atomic_read_u64(&shared->promotion_floor) == 0 &&
			  shared->nslots == FlakeSlotCount() && zero && !shared->set_up &&
			  shared->worker_latch == NULL &&
			  FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_NOT_SET_UP &&
			  stub_nmessages == 0,
			  "a generator made by a process that may not set it up: not set up, every counter and slot at zero",
			  "next %llu, lease end %llu, waits %llu, writes %llu, %d slots, set up %d, status %d",
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick),
			  (unsigned long long) pg_atomic_read_u64(&shared->lease_end),
			  (unsigned long long) pg_atomic_read_u64(&shared->waits),
			  (unsigned long long) pg_atomic_read_u64(&shared->file_writes), shared->nslots,
			  shared->set_up, (int) FlakeWordStatus(pg_atomic_read_u32(&shared->word)));

	/* set up at once by one that may: no file, IDs from the clock */
	make_generator(FLAKE_FILE_MISSING, NULL, ENOENT);
	tap_check(shared->set_up && shared->node_id == 4 && !shared->have_recorded &&
			  FlakeSameLayout(&shared->layout, &layout_a) &&
			  FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_READY &&
			  stub_count(LOG) == 1 && stub_message_is(0, "flakeid state file \"%s\" not found"),
			  "made by a process that may set it up, no state file: ready, node 4, the missing file logged",
			  "set up %d, node %d, status %d, %d messages", shared->set_up, shared->node_id,
			  (int) FlakeWordStatus(pg_atomic_read_u32(&shared->word)), stub_nmessages);
	flake_node_id = 9;
	may_set_up = true;
	FlakeSetUp(shared);
	may_set_up = false;
	tap_check(shared->node_id == 4, "set up again: nothing read again", "node %d", shared->node_id);

	/* a set-up left to the first call */
	set_up_generator();
	watching = false;
	FlakeInitShared(shared);
	may_set_up = true;
	settings_layout = layout_a;
	settings_valid = true;
	flake_node_id = 9;
	file_found = FLAKE_FILE_MISSING;
	FlakeSetUp(shared);
	may_set_up = false;
	tap_check(shared->set_up && shared->node_id == 9 &&
			  FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_READY,
			  "a generator not set up: set up by the first call", "set up %d, node %d",
			  shared->set_up, shared->node_id);

	/* the file's lease, in the configured layout: the floor */
	FlakeLeaseFill(&lease, &layout_a, 4, 7000, 1);
	make_generator(FLAKE_FILE_OK, &lease, 0);
	tap_check(shared->have_recorded && shared->recorded.lease_end == 7000 && shared->serial == 5 &&
			  pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_a, 7000) &&
			  pg_atomic_read_u64(&shared->lease_end) == 7000 && stub_nmessages == 0 &&
			  FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_READY,
			  "the state file's lease: recorded, the next ID at its end, nothing logged",
			  "recorded %d, end %lld, next %llu, %d messages", shared->have_recorded,
			  (long long) shared->recorded.lease_end,
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick), stub_nmessages);

	/* a lease of another layout: decoded with it, generation refused, logged */
	FlakeLeaseFill(&lease, &layout_b, 4, 7000, 1);
	make_generator(FLAKE_FILE_OK, &lease, 0);
	tap_check(FlakeSameLayout(&shared->layout, &layout_b) &&
			  FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_LAYOUT_CHANGED &&
			  stub_count(LOG) == 1 && stub_message_is(0, "flakeid layout differs from the one recorded"),
			  "a state file of another layout: its layout kept, generation refused, logged",
			  "status %d, %d messages", (int) FlakeWordStatus(pg_atomic_read_u32(&shared->word)),
			  stub_nmessages);
	watching = false;
	may_set_up = true;
	settings_layout = layout_a;
	settings_valid = false;
	flake_node_id = 4;
	file_found = FLAKE_FILE_OK;
	stub_nmessages = 0;
	FlakeInitShared(shared);
	may_set_up = false;
	tap_check(stub_nmessages == 0 &&
			  FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_LAYOUT_INVALID,
			  "... with a layout setting rejected: that status, and no layout change logged",
			  "status %d, %d messages", (int) FlakeWordStatus(pg_atomic_read_u32(&shared->word)),
			  stub_nmessages);

	/* a damaged or unreadable file: logged, nothing generated */
	make_generator(FLAKE_FILE_DAMAGED, NULL, 0);
	tap_check(FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_FILE_DAMAGED &&
			  stub_count(LOG) == 1 && stub_message_is(0, "flakeid state file \"%s\" is damaged"),
			  "a damaged state file: logged, nothing generated", "status %d, %d messages",
			  (int) FlakeWordStatus(pg_atomic_read_u32(&shared->word)), stub_nmessages);
	make_generator(FLAKE_FILE_UNREADABLE, NULL, EACCES);
	tap_check(FlakeWordStatus(pg_atomic_read_u32(&shared->word)) == FLAKE_GEN_FILE_UNREADABLE &&
			  shared->file_errno == EACCES && stub_count(LOG) == 1 &&
			  strcmp(stub_text[0], "could not read flakeid state file \"flakeid.state\": Permission denied; IDs will not be generated") == 0,
			  "an unreadable state file: logged with its error, nothing generated",
			  "status %d, errno %d: %s", (int) FlakeWordStatus(pg_atomic_read_u32(&shared->word)),
			  shared->file_errno, stub_text[0]);

	/* the newest lease known, or none */
	FlakeLeaseFill(&lease, &layout_a, 4, 7000, 1);
	make_generator(FLAKE_FILE_OK, &lease, 0);
	memset(&lease, 0, sizeof(lease));
	tap_check(FlakeRecordedLease(shared, &lease) && lease.lease_end == 7000 && lease.node_id == 4,
			  "the newest lease known: the state file's", "end %lld", (long long) lease.lease_end);
	make_generator(FLAKE_FILE_MISSING, NULL, ENOENT);
	memset(&lease, 0x33, sizeof(lease));
	tap_check(!FlakeRecordedLease(shared, &lease) && lease.lease_end == (int64) 0x3333333333333333,
			  "no lease known: none, and nothing written", "end %lld", (long long) lease.lease_end);

	/* the server-wide figures are for monitoring roles */
	monitor_role = true;
	FlakeCheckMonitor("flakeid_status");
	monitor_role = false;
	PG_exception_stack = &jump;
	if (sigsetjmp(jump, 0) == 0)
		FlakeCheckMonitor("flakeid_status");
	else
		caught = true;
	PG_exception_stack = NULL;
	monitor_role = true;
	tap_check(caught && stub_error_code == ERRCODE_INSUFFICIENT_PRIVILEGE,
			  "a role without pg_monitor's privileges: refused (42501)", "caught %d", caught);
	flake_node_id = FLAKE_NODE_UNSET;
}

/* the hooks that came before flakeid's, which it calls first */
static int	earlier_requests;
static int	earlier_startups;

static void
earlier_request(void)
{
	earlier_requests++;
}

static void
earlier_startup(void)
{
	earlier_startups++;
}

/* preloaded: shared memory asked for and made at startup, once; a slot a process */
static void
check_startup(void)
{
	FlakeSlot  *slot;

	shmem_request_hook = earlier_request;
	shmem_startup_hook = earlier_startup;
	preloaded = false;
	FlakeShmemInit();
	tap_check(shmem_request_hook == earlier_request && shmem_startup_hook == earlier_startup,
			  "not preloaded: no shared memory hooks", "they were installed");
	preloaded = true;
	FlakeShmemInit();
	tap_check(shmem_request_hook == FlakeShmemRequest && shmem_startup_hook == FlakeShmemStartup,
			  "preloaded: flakeid's shared memory hooks installed", "they were not");
	shmem_request_hook();
	tap_check(earlier_requests == 1 && space_requested == FlakeShmemSize(),
			  "the request hook calls the earlier one and asks for the generator's size",
			  "%d earlier calls, %zu asked for", earlier_requests, (size_t) space_requested);
	watching = false;
	memset(shared, 0x5a, FlakeShmemSize());
	shmem_found = false;
	flake_shared = NULL;
	shmem_startup_hook();
	tap_check(earlier_startups == 1 && flake_shared == shared &&
			  shared->nslots == MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts &&
			  pg_atomic_read_u64(&shared->next_tick) == 0,
			  "the startup hook calls the earlier one and makes the generator, a slot for each process and prepared transaction",
			  "%d earlier calls, attached %d, %d slots", earlier_startups, flake_shared == shared,
			  shared->nslots);
	shared->nslots = 77;
	shmem_found = true;
	shmem_startup_hook();
	tap_check(shared->nslots == 77 && earlier_startups == 2,
			  "a generator that exists already: not made again", "%d slots", shared->nslots);
	shared->nslots = FlakeSlotCount();
	tap_check(FlakeAttach() == shared, "preloaded: a process attaches to it", "it did not");

#if PG_VERSION_NUM >= 170000
	MyProcNumber = 2;
#else
	{
		static PGPROC proc;

		proc.pgprocno = 2;
		MyProc = &proc;
	}
#endif
	my_slot = NULL;
	slot = FlakeMySlot();
#if PG_VERSION_NUM >= 170000
	MyProcNumber = 3;
#else
	MyProc->pgprocno = 3;
#endif
	tap_check(slot == &shared->slots[2] && FlakeMySlot() == slot,
			  "a process's slot is its process number's, found once",
			  "slot %ld", slot ? (long) (slot - shared->slots) : -1L);
	my_slot = NULL;
	shmem_request_hook = NULL;
	shmem_startup_hook = NULL;

#ifdef FLAKE_HAVE_DSM_REGISTRY
	{
		FlakeShared *preloaded_one = flake_shared;
		FlakeShared *found;

		/* preloaded, in a process that did not attach: none, not the registry's */
		flake_shared = NULL;
		tap_check(FlakeAttach() == NULL && registry_asks == 0,
				  "preloaded, not attached: no generator, none asked of the registry",
				  "%d asks", registry_asks);

		/* not preloaded: the registry's segment, made and set up once */
		preloaded = false;
		found = FlakeAttach();
		tap_check(found != NULL && found == registry_segment && registry_asks == 1 &&
				  found->nslots == FlakeSlotCount() &&
				  pg_atomic_read_u64(&found->next_tick) == 0,
				  "not preloaded: the generator in the DSM registry, made and set up",
				  "%d asks, %d slots", registry_asks, found ? found->nslots : -1);
		tap_check(FlakeAttach() == found && registry_asks == 1,
				  "and attached once: not asked for again", "%d asks", registry_asks);
		flake_shared = NULL;
		tap_check(FlakeAttach() == found && registry_asks == 2,
				  "another process: attaches to the segment that exists", "%d asks",
				  registry_asks);
		preloaded = true;
		flake_shared = preloaded_one;
	}
#endif
}

/* The facts that stop generation, first cause first, and their status. */
static void
cause(int i)
{
	switch (i)
	{
		case 0:
			shared->changing = true;
			break;
		case 1:
			shared->set_up = false;
			break;
		case 2:
			shared->configured_valid = false;
			break;
		case 3:
			shared->file_status = FLAKE_FILE_UNREADABLE;
			break;
		case 4:
			shared->file_status = FLAKE_FILE_DAMAGED;
			break;
		case 5:
			shared->file_behind = true;
			break;
		case 6:
			shared->configured = layout_b;
			break;
		case 7:
			shared->node_id = FLAKE_NODE_UNSET;
			break;
	}
}

static const FlakeStatus cause_status[] = {
	FLAKE_GEN_CHANGING, FLAKE_GEN_NOT_SET_UP, FLAKE_GEN_LAYOUT_INVALID,
	FLAKE_GEN_FILE_UNREADABLE, FLAKE_GEN_FILE_DAMAGED, FLAKE_GEN_FILE_BEHIND,
	FLAKE_GEN_LAYOUT_CHANGED, FLAKE_GEN_NODE_UNSET
};

#define NCAUSES lengthof(cause_status)

/*
 * Each cause alone gives its status, and with every later cause too (set
 * last to first, so that of two values of one field its own stays), still
 * its own; with none, the generator is ready.
 */
static void
check_statuses(void)
{
	int			alone = 0;
	int			first = 0;
	char		detail[200] = "";

	for (int i = 0; i < (int) NCAUSES; i++)
	{
		FlakeStatus got;

		set_up_generator();
		cause(i);
		got = FlakeComputeStatus(shared);
		if (got == cause_status[i])
			alone++;
		else
			snprintf(detail, sizeof(detail), "cause %d alone gave status %d, not %d",
					 i, got, cause_status[i]);
		set_up_generator();
		for (int j = NCAUSES - 1; j >= i; j--)
			cause(j);
		got = FlakeComputeStatus(shared);
		if (got == cause_status[i])
			first++;
		else
			snprintf(detail, sizeof(detail), "causes %d and later gave status %d, not %d",
					 i, got, cause_status[i]);
	}
	tap_check(alone == NCAUSES, "each cause that stops generation alone gives its status",
			  "%s", detail);
	tap_check(first == NCAUSES, "of several causes, the status is the first one's", "%s", detail);
	set_up_generator();
	tap_check(FlakeComputeStatus(shared) == FLAKE_GEN_READY, "with no cause, the generator is ready",
			  "status %d", FlakeComputeStatus(shared));
}

/*
 * A renewal raises the lease end and nothing else, only once the file has
 * it; a failed write changes nothing but the failure noted.  A replayed
 * lease is adopted only when it reaches further than the one recorded,
 * and when the file cannot take it, kept in memory with generation held.
 */
static void
check_leases(void)
{
	FlakeLease	lease;
	uint64		next;
	bool		stored;

	set_up_generator();
	next = pg_atomic_read_u64(&shared->next_tick);
	FlakeLeaseFill(&lease, &layout_a, 1, 8000, 1);
	stored = FlakeStoreLease(shared, &lease, false);
	tap_check(stored && pg_atomic_read_u64(&shared->file_writes) == 1 && stub_nmessages == 0,
			  "a renewal: one write counted, nothing logged",
			  "%llu writes, %d messages", (unsigned long long) pg_atomic_read_u64(&shared->file_writes),
			  stub_nmessages);
	tap_check(stored && pg_atomic_read_u64(&shared->lease_end) == 8000 &&
			  pg_atomic_read_u64(&shared->next_tick) == next &&
			  written_serial == 8 && shared->serial == 8 &&
			  written.lease_end == 8000 && nseen == 1 &&
			  FlakeWordStatus(seen[0].word) == FLAKE_GEN_READY,
			  "a renewal is written with the next serial and raises the lease end only",
			  "stored %d, lease end %llu, next tick moved by %lld, serial %llu (file %llu), %d publications",
			  stored, (unsigned long long) pg_atomic_read_u64(&shared->lease_end),
			  (long long) (pg_atomic_read_u64(&shared->next_tick) - next),
			  (unsigned long long) shared->serial, (unsigned long long) written_serial, nseen);
	FlakeLeaseFill(&lease, &layout_a, 1, 7000, 1);
	(void) FlakeStoreLease(shared, &lease, false);
	tap_check(pg_atomic_read_u64(&shared->lease_end) == 8000,
			  "a renewal that ends sooner does not lower the lease end",
			  "lease end %llu", (unsigned long long) pg_atomic_read_u64(&shared->lease_end));

	set_up_generator();
	write_fails = true;
	FlakeLeaseFill(&lease, &layout_a, 1, 8000, 1);
	stored = FlakeStoreLease(shared, &lease, false);
	tap_check(!stored && errno == ENOSPC && pg_atomic_read_u64(&shared->lease_end) == 6000 &&
			  shared->serial == 7 && shared->lease_failing &&
			  shared->lease_errno == ENOSPC && nseen == 0,
			  "a renewal whose write fails changes nothing but the failure noted",
			  "stored %d, lease end %llu, serial %llu, failing %d, %d publications",
			  stored, (unsigned long long) pg_atomic_read_u64(&shared->lease_end),
			  (unsigned long long) shared->serial, shared->lease_failing, nseen);
	tap_check(stub_nmessages == 1 && stub_count(LOG) == 1 &&
			  stub_message_is(0, "could not write flakeid state file"),
			  "a failed write is logged", "%d messages", stub_nmessages);
	stub_nmessages = 0;
	stored = FlakeStoreLease(shared, &lease, false);
	tap_check(!stored && stub_nmessages == 0 && pg_atomic_read_u64(&shared->file_writes) == 2,
			  "a second failed write is counted, not logged again",
			  "%d messages, %llu writes", stub_nmessages,
			  (unsigned long long) pg_atomic_read_u64(&shared->file_writes));
	write_fails = false;
	stored = FlakeStoreLease(shared, &lease, false);
	tap_check(stored && !shared->lease_failing && pg_atomic_read_u64(&shared->lease_end) == 8000,
			  "the next write that works clears the failure and takes the lease",
			  "stored %d, failing %d", stored, shared->lease_failing);
	tap_check(stub_nmessages == 1 && stub_count(LOG) == 1 &&
			  stub_message_is(0, "flakeid state file \"%s\" written again"),
			  "the file written again is logged", "%d messages", stub_nmessages);

	set_up_generator();
	FlakeLeaseFill(&lease, &layout_a, 2, 9000, 2);
	stored = FlakeAdoptLease(shared, &lease);
	tap_check(stored && shared->recorded.lease_end == 9000 &&
			  pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_a, 9000) &&
			  pg_atomic_read_u64(&shared->lease_end) == 9000 && nseen == 1,
			  "a replayed lease that reaches further is adopted as a floor",
			  "adopted %d, recorded end %lld, %d publications", stored,
			  (long long) shared->recorded.lease_end, nseen);
	nseen = 0;
	stored = FlakeAdoptLease(shared, &lease);
	tap_check(!stored && nseen == 0, "the same lease again is not adopted", "adopted %d", stored);
	FlakeLeaseFill(&lease, &layout_a, 2, 8999, 2);
	stored = FlakeAdoptLease(shared, &lease);
	tap_check(!stored && nseen == 0 && shared->recorded.lease_end == 9000,
			  "a replayed lease that ends sooner is not adopted: the floor never goes back",
			  "adopted %d, recorded end %lld", stored, (long long) shared->recorded.lease_end);
	FlakeLeaseFill(&lease, &layout_b, 2, 9000, 2);
	stored = FlakeAdoptLease(shared, &lease);
	tap_check(!stored && FlakeSameLayout(&shared->layout, &layout_a),
			  "nor one whose end is as large a number but sooner in time (an earlier epoch)",
			  "adopted %d", stored);

	set_up_generator();
	write_fails = true;
	FlakeLeaseFill(&lease, &layout_a, 2, 9000, 2);
	stored = FlakeAdoptLease(shared, &lease);
	tap_check(stored && shared->file_behind && shared->recorded.lease_end == 9000 &&
			  pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_a, 9000) &&
			  nseen == 1 && FlakeWordStatus(seen[0].word) == FLAKE_GEN_FILE_BEHIND,
			  "a replayed lease the file cannot take is kept in memory, and nothing is generated until it is written",
			  "adopted %d, behind %d, status %d", stored, shared->file_behind,
			  nseen ? (int) FlakeWordStatus(seen[0].word) : -1);
	tap_check(stub_count(LOG) == 2 &&
			  stub_message_is(1, "flakeid keeps the replayed time lease in memory"),
			  "a replayed lease kept in memory is logged, after the failed write",
			  "%d messages", stub_nmessages);
	stub_nmessages = 0;
	FlakeLeaseFill(&lease, &layout_a, 2, 9100, 2);
	stored = FlakeAdoptLease(shared, &lease);
	tap_check(stored && stub_nmessages == 0 && shared->recorded.lease_end == 9100,
			  "a newer replayed lease kept in memory while behind: not logged again",
			  "adopted %d, %d messages", stored, stub_nmessages);
	nseen = 0;
	write_fails = false;
	FlakeLeaseFill(&lease, &layout_a, 1, 9500, 2);
	stored = FlakeStoreLease(shared, &lease, false);
	tap_check(stored && !shared->file_behind && nseen == 1 &&
			  FlakeWordStatus(seen[0].word) == FLAKE_GEN_READY,
			  "once a lease is written, the generator is ready again",
			  "stored %d, behind %d", stored, shared->file_behind);
}

/*
 * Publications give the word generations 1 to 255 in turn: never 0, so
 * that the word is never 0, which a process that never read it holds;
 * and all 255 of the byte before one comes again, so that a call must
 * sleep through 255 changes to take an old word for the current one.
 */
static void
check_generations(void)
{
	bool		seen_gen[256] = {false};
	int			distinct = 0;
	uint32		first;
	uint32		word = 0;

	set_up_generator();
	watching = false;
	first = FlakeWordGen(pg_atomic_read_u32(&shared->word));
	for (int i = 0; i < 600; i++)
	{
		uint32		gen;

		FlakePublish(shared);
		word = pg_atomic_read_u32(&shared->word);
		gen = FlakeWordGen(word);
		if (gen == 0 || word == 0)
			break;
		if (i < 255 && !seen_gen[gen])
		{
			seen_gen[gen] = true;
			distinct++;
		}
	}
	tap_check(word != 0 && FlakeWordGen(word) != 0,
			  "a publication never gives the word generation 0", "word %08x", word);
	tap_check(distinct == 255 && seen_gen[first],
			  "255 publications in a row give 255 generations, the last one the first's again",
			  "%d distinct", distinct);
}

/* the change's publications: all but the last waited, the last did not */
static void
check_waits(const char *change, uint32 before)
{
	char		what[200];
	int			early_returns = 0;

	snprintf(what, sizeof(what), "%s: publishes when it begins and when it ends", change);
	tap_check(nseen == 2, what, "%d publications", nseen);
	if (nseen < 2)
		return;
	snprintf(what, sizeof(what), "%s: the first publication gives the word a new generation", change);
	tap_check(FlakeWordGen(seen[0].published) != FlakeWordGen(before), what,
			  "word %08x before, %08x at the start", before, seen[0].published);
	for (int i = 0; i < nseen - 1; i++)
		if (seen[i].returned)
			early_returns++;
	snprintf(what, sizeof(what), "%s: a snapshot taken while it is under way waits for its end", change);
	tap_check(early_returns == 0, what,
			  "returned word %08x (status %d, node %d) and a layout of %d node bits",
			  seen[0].word, FlakeWordStatus(seen[0].word), FlakeWordNode(seen[0].word),
			  seen[0].layout.node_bits);
	snprintf(what, sizeof(what), "%s: a snapshot after its end returns the last word", change);
	tap_check(seen[nseen - 1].returned &&
			  seen[nseen - 1].word == seen[nseen - 1].published, what,
			  "returned %d, word %08x, published %08x", seen[nseen - 1].returned,
			  seen[nseen - 1].word, seen[nseen - 1].published);
}

int
main(void)
{
	int64		end_b = layout_a.epoch_ms - layout_b.epoch_ms + 9000;
	uint32		before;
	Seen	   *last;
	FlakeLease	lease;
	bool		adopted;

	/* the node id changes from 1 to 2 */
	set_up_generator();
	before = pg_atomic_read_u32(&shared->word);
	FlakeAdoptNode(shared, 2);
	check_waits("a node id change", before);
	last = &seen[nseen - 1];
	tap_check(FlakeWordStatus(last->word) == FLAKE_GEN_READY &&
			  FlakeWordNode(last->word) == 2,
			  "a node id change: the word at its end is ready, with the new node id",
			  "status %d, node %d", FlakeWordStatus(last->word), FlakeWordNode(last->word));
	tap_check(pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_a, 5001),
			  "a node id change: the new node id's IDs start at the next millisecond",
			  "next tick %llu, want %llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick),
			  (unsigned long long) FlakeTickOfMs(&layout_a, 5001));

	/* a replayed floor brings layout b, its end 9 s past the recorded lease's */
	set_up_generator();
	before = pg_atomic_read_u32(&shared->word);
	FlakeLeaseFill(&lease, &layout_b, 3, end_b, 1);
	tap_check(FlakeAdoptLease(shared, &lease), "a floor with another layout is adopted", "it was not");
	check_waits("a layout change", before);
	last = &seen[nseen - 1];
	tap_check(FlakeSameLayout(&last->layout, &layout_b),
			  "a layout change: the layout at its end is the new one",
			  "%d node bits", last->layout.node_bits);
	tap_check(FlakeWordStatus(last->word) == FLAKE_GEN_LAYOUT_CHANGED,
			  "a layout change: the generator waits until the settings' layout is accepted",
			  "status %d", FlakeWordStatus(last->word));
	tap_check(pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_b, end_b),
			  "a layout change: the next ID is at the floor, in the new layout",
			  "next tick %llu", (unsigned long long) pg_atomic_read_u64(&shared->next_tick));

	/*
	 * A call that read the word before the change reserves between the
	 * change's read of next_tick and its swap, into ms 5003: the new node
	 * id's IDs start after those ticks all the same.
	 */
	set_up_generator();
	other_takes = FlakeTickOfMs(&layout_a, 5003) + 5 -
		pg_atomic_read_u64(&shared->next_tick);
	FlakeAdoptNode(shared, 2);
	tap_check(other_takes == 0 &&
			  pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_a, 5004),
			  "a node id change: ticks taken while it moves to the next millisecond are passed too",
			  "next tick %llu, want %llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick),
			  (unsigned long long) FlakeTickOfMs(&layout_a, 5004));

	/*
	 * A floor at ms 7000 while a call that read the word before it
	 * reserves between the floor's read of next_tick and its swap: past
	 * the floor, next_tick stays where that call left it; short of it,
	 * it is raised to the floor.
	 */
	set_up_generator();
	other_takes = FlakeTickOfMs(&layout_a, 7000) + 500 -
		pg_atomic_read_u64(&shared->next_tick);
	FlakeSetFloor(shared, 7000);
	tap_check(other_takes == 0 &&
			  pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_a, 7000) + 500,
			  "a floor never lowers the next tick that a call raised past it meanwhile",
			  "next tick %llu, want %llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick),
			  (unsigned long long) FlakeTickOfMs(&layout_a, 7000) + 500);
	set_up_generator();
	other_takes = 100;
	FlakeSetFloor(shared, 7000);
	tap_check(other_takes == 0 &&
			  pg_atomic_read_u64(&shared->next_tick) == FlakeTickOfMs(&layout_a, 7000) &&
			  pg_atomic_read_u64(&shared->lease_end) == 7000,
			  "a floor raises the next tick and the lease end to it when a call meanwhile stays short",
			  "next tick %llu, want %llu; lease end %llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick),
			  (unsigned long long) FlakeTickOfMs(&layout_a, 7000),
			  (unsigned long long) pg_atomic_read_u64(&shared->lease_end));

	check_statuses();
	check_generations();
	check_leases();

	/*
	 * The new node id's IDs start at the millisecond after the last tick
	 * taken (next - 1), from wherever next stands in its millisecond;
	 * with no tick taken, nothing moves.
	 */
	{
		const uint64 ms_start = FlakeTickOfMs(&layout_a, 5000);
		const uint64 ms_next = FlakeTickOfMs(&layout_a, 5001);
		const uint64 from[] = {0, 1, ms_start + 1, ms_start + 17, ms_next - 1, ms_next, ms_next + 1};
		const uint64 want[] = {0, FlakeTickOfMs(&layout_a, 1), ms_next, ms_next, ms_next, ms_next,
		FlakeTickOfMs(&layout_a, 5002)};
		int			right = 0;
		char		detail[200] = "";

		for (int i = 0; i < (int) lengthof(from); i++)
		{
			set_up_generator();
			pg_atomic_write_u64(&shared->next_tick, from[i]);
			FlakeAdoptNode(shared, 2);
			if (pg_atomic_read_u64(&shared->next_tick) == want[i])
				right++;
			else
				snprintf(detail, sizeof(detail), "from %llu: %llu, want %llu",
						 (unsigned long long) from[i],
						 (unsigned long long) pg_atomic_read_u64(&shared->next_tick),
						 (unsigned long long) want[i]);
		}
		tap_check(right == (int) lengthof(from),
				  "a node id change moves the next tick to the millisecond after the last one taken",
				  "%s", detail);
	}

	/*
	 * A replayed floor of another layout at its first millisecond, with no
	 * lease recorded before: the counter and the lease start over at 0
	 */
	set_up_generator();
	shared->have_recorded = false;
	FlakeLeaseFill(&lease, &layout_b, 3, 0, 1);
	adopted = FlakeAdoptLease(shared, &lease);
	tap_check(adopted &&
			  pg_atomic_read_u64(&shared->next_tick) == 0 &&
			  pg_atomic_read_u64(&shared->lease_end) == 0,
			  "a floor of another layout ending at its first millisecond: the next tick and the lease end at 0",
			  "next tick %llu, lease end %llu",
			  (unsigned long long) pg_atomic_read_u64(&shared->next_tick),
			  (unsigned long long) pg_atomic_read_u64(&shared->lease_end));

	/* a node id that does not fit the layout is refused; unset is taken */
	set_up_generator();
	FlakeAdoptNode(shared, 1024);
	tap_check(shared->node_id == 1 && nseen == 0,
			  "a node id that does not fit the layout (1024 with 10 node bits) is refused",
			  "node id %d, %d publications", shared->node_id, nseen);
	stub_nmessages = 0;
	FlakeAdoptNode(shared, FLAKE_NODE_UNSET);
	tap_check(shared->node_id == FLAKE_NODE_UNSET && nseen == 2 &&
			  FlakeWordStatus(seen[1].word) == FLAKE_GEN_NODE_UNSET &&
			  FlakeWordNode(seen[1].word) == 0,
			  "a node id unset is taken, and nothing is generated (node 0 in the word)",
			  "node id %d, %d publications, node %d in the word", shared->node_id, nseen,
			  nseen == 2 ? FlakeWordNode(seen[1].word) : -1);
	tap_check(stub_nmessages == 1 && stub_message_is(0, "flakeid.node_id is no longer set"),
			  "a node id unset is logged as such", "%d messages", stub_nmessages);
	stub_nmessages = 0;
	FlakeAdoptNode(shared, 3);
	tap_check(shared->node_id == 3 && stub_nmessages == 1 &&
			  stub_message_is(0, "flakeid node id set to %d"),
			  "a node id set where none was is logged as set", "node id %d, %d messages",
			  shared->node_id, stub_nmessages);
	stub_nmessages = 0;
	FlakeAdoptNode(shared, 4);
	tap_check(shared->node_id == 4 && stub_nmessages == 1 &&
			  stub_message_is(0, "flakeid node id changed from %d to %d"),
			  "a node id changed is logged as changed", "node id %d, %d messages",
			  shared->node_id, stub_nmessages);

	/* the same node id again: nothing changes, nothing is published */
	set_up_generator();
	FlakeAdoptNode(shared, 1);
	tap_check(nseen == 0, "the same node id again publishes nothing", "%d publications", nseen);

	check_set_up();
	check_startup();
	return tap_done();
}
