/*-------------------------------------------------------------------------
 *
 * statefile.c
 *	  Reading and writing flakeid.state, the state file in the data
 *	  directory.
 *
 * The file holds the newest lease twice, in two 512-byte copies that sit
 * in separate 4 kB blocks (offsets 0 and 4096), each with a CRC.  A
 * renewal writes and fsyncs the copy at 4096, then the copy at 0, and the
 * lease is used only after both are on disk.  So at every moment each
 * valid copy holds a lease at least as far as every ID issued: a torn
 * write damages only the copy being written, and the other one is safe to
 * use; a copy damaged later has a twin with the same lease.
 *
 * Version 1 of the file kept its two copies at offsets 0 and 512, written
 * alternately; version 2 had the current slots and a record without the
 * timeline.  Both are still read, and the first write replaces them.  The
 * slot at 512 is shown only while it holds something: in a file of the
 * current format it is unused, and zero.
 *
 * This file knows nothing of shared memory: callers pass what to write
 * and take what was read.  flakeid_state_file() shows the copies to SQL,
 * so that tests and operators read the format from here alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "statefile.h"

#define FLAKE_RECORD_MAGIC		0x464c4b31	/* "FLK1" */
#define FLAKE_RECORD_VERSION	3
#define FLAKE_RECORD_V2			2
#define FLAKE_RECORD_V1			1
#define FLAKE_RECORD_SIZE		512

typedef struct FlakeRecord
{
	uint32		magic;
	uint32		version;
	uint64		serial;			/* renewals since the file was made */
	FlakeLease	lease;
	pg_crc32c	crc;			/* of everything above */
} FlakeRecord;

/* Versions 1 and 2: the lease without its timeline, and the CRC after it. */
typedef struct FlakeRecordNoTimeline
{
	uint32		magic;
	uint32		version;
	uint64		serial;
	char		lease[FLAKE_LEASE_SIZE_NO_TIMELINE];
	pg_crc32c	crc;
} FlakeRecordNoTimeline;

StaticAssertDecl(sizeof(FlakeRecord) <= FLAKE_RECORD_SIZE,
				 "flakeid state record too large");
StaticAssertDecl(offsetof(FlakeRecord, lease) == 16 &&
				 offsetof(FlakeRecordNoTimeline, lease) == 16 &&
				 offsetof(FlakeRecordNoTimeline, crc) == 40,
				 "flakeid state record layout changed");

/* The copies of the current format, in the order they are written. */
#define FLAKE_SLOT_FIRST		1	/* offset 4096 */
#define FLAKE_SLOT_SECOND		0	/* offset 0 */
#define FLAKE_SLOT_V1			2	/* offset 512: version 1's second copy */

static const int slot_offset[FLAKE_FILE_SLOTS] = {0, 4096, 512};

/* Whether the version 1 copy was wiped by this process already. */
static bool v1_copy_wiped = false;

/* The CRC of the first len bytes of a record. */
static pg_crc32c
RecordCrc(const void *rec, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, rec, len);
	FIN_CRC32C(crc);
	return crc;
}

/*
 * Take a record of any version apart into a copy; false when its CRC is
 * wrong or its version unknown.
 */
static bool
ParseRecord(const char *buf, FlakeFileCopy *copy)
{
	FlakeRecord rec;
	FlakeRecordNoTimeline old;

	memcpy(&rec, buf, sizeof(rec));
	copy->version = rec.version;
	copy->serial = rec.serial;
	if (rec.magic != FLAKE_RECORD_MAGIC)
		return false;
	if (rec.version == FLAKE_RECORD_VERSION)
	{
		copy->lease = rec.lease;
		return EQ_CRC32C(rec.crc, RecordCrc(&rec, offsetof(FlakeRecord, crc)));
	}
	if (rec.version != FLAKE_RECORD_V2 && rec.version != FLAKE_RECORD_V1)
		return false;
	memcpy(&old, buf, sizeof(old));
	memset(&copy->lease, 0, sizeof(FlakeLease));
	memcpy(&copy->lease, old.lease, sizeof(old.lease));
	return EQ_CRC32C(old.crc, RecordCrc(&old, offsetof(FlakeRecordNoTimeline, crc)));
}

/* Whether a slot holds nothing but zeros. */
static bool
SlotIsZero(const char *buf)
{
	for (int i = 0; i < FLAKE_RECORD_SIZE; i++)
	{
		if (buf[i] != 0)
			return false;
	}
	return true;
}

/*
 * Whether a record may sit in a slot: version 1 at 0 and 512, 2 and 3 at
 * 0 and 4096.
 */
static bool
VersionFitsSlot(uint32 version, int slot)
{
	if (version == FLAKE_RECORD_VERSION || version == FLAKE_RECORD_V2)
		return slot != FLAKE_SLOT_V1;
	if (version == FLAKE_RECORD_V1)
		return slot != FLAKE_SLOT_FIRST;
	return false;
}

/*
 * Read one slot; false with errno set when the read itself failed.  The
 * slot of version 1's second copy is present only while it holds
 * something.
 */
static bool
ReadSlot(int fd, int slot, FlakeFileCopy *copy)
{
	char		buf[FLAKE_RECORD_SIZE];
	ssize_t		got;

	memset(copy, 0, sizeof(FlakeFileCopy));
	copy->offset = slot_offset[slot];
	got = pg_pread(fd, buf, FLAKE_RECORD_SIZE, slot_offset[slot]);
	if (got < 0)
		return false;
	copy->present = (got == FLAKE_RECORD_SIZE) &&
		!(slot == FLAKE_SLOT_V1 && SlotIsZero(buf));
	if (!copy->present)
		return true;
	copy->valid = ParseRecord(buf, copy) &&
		VersionFitsSlot(copy->version, slot) &&
		FlakeLeaseSane(&copy->lease);
	return true;
}

/*
 * Read every slot of the file into copies; returns the number read, 0
 * when the file does not exist, or -1 with errno set when it cannot be
 * read.
 */
int
FlakeStateFileCopies(FlakeFileCopy *copies)
{
	int			fd;

	fd = BasicOpenFile(FLAKE_STATE_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	for (int slot = 0; slot < FLAKE_FILE_SLOTS; slot++)
	{
		if (!ReadSlot(fd, slot, &copies[slot]))
		{
			int			save_errno = errno;

			close(fd);
			errno = save_errno;
			return -1;
		}
	}
	close(fd);
	return FLAKE_FILE_SLOTS;
}

/*
 * Read the newest lease of the state file.  A damaged copy is reported
 * with a WARNING; the lease then comes from its twin.  On
 * FLAKE_FILE_UNREADABLE errno says why.
 */
FlakeFileStatus
FlakeStateFileRead(FlakeLease *lease, uint64 *serial)
{
	FlakeFileCopy copies[FLAKE_FILE_SLOTS];
	int			nread = FlakeStateFileCopies(copies);
	int			best = -1;
	int			twin;

	if (nread == 0)
		return FLAKE_FILE_MISSING;
	if (nread < 0)
		return FLAKE_FILE_UNREADABLE;

	for (int slot = 0; slot < FLAKE_FILE_SLOTS; slot++)
	{
		if (copies[slot].valid &&
			(best < 0 || copies[slot].serial > copies[best].serial))
			best = slot;
	}
	if (best < 0)
		return FLAKE_FILE_DAMAGED;

	/* the other copy of the same format */
	if (copies[best].version == FLAKE_RECORD_V1)
		twin = (best == FLAKE_SLOT_V1) ? 0 : FLAKE_SLOT_V1;
	else
		twin = (best == FLAKE_SLOT_FIRST) ? FLAKE_SLOT_SECOND : FLAKE_SLOT_FIRST;
	if (!copies[twin].valid ||
		(copies[best].version != FLAKE_RECORD_V1 &&
		 copies[twin].version == FLAKE_RECORD_V1))
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flakeid state file \"%s\" has a damaged copy of the time lease",
						FLAKE_STATE_FILE),
				 errdetail("The copy at offset %d is not valid; the lease is read from the copy at offset %d.",
						   copies[twin].offset, copies[best].offset),
				 errhint("The next renewal of the lease rewrites both copies.")));

	*lease = copies[best].lease;
	*serial = copies[best].serial;
	return FLAKE_FILE_OK;
}

/* Write one slot and fsync it. */
static bool
WriteSlot(int fd, int slot, const char *buf)
{
	errno = 0;
	if (pg_pwrite(fd, buf, FLAKE_RECORD_SIZE, slot_offset[slot]) != FLAKE_RECORD_SIZE)
	{
		if (errno == 0)
			errno = ENOSPC;		/* a short write is a full disk */
		return false;
	}
	return pg_fsync(fd) == 0;
}

/* Zero the version 1 copy at offset 512, once, if it is still there. */
static bool
WipeV1Copy(int fd)
{
	FlakeFileCopy copy;
	char		zeros[FLAKE_RECORD_SIZE];

	if (v1_copy_wiped)
		return true;
	if (!ReadSlot(fd, FLAKE_SLOT_V1, &copy))
		return false;
	if (copy.present && copy.version != 0)
	{
		memset(zeros, 0, sizeof(zeros));
		if (!WriteSlot(fd, FLAKE_SLOT_V1, zeros))
			return false;
	}
	v1_copy_wiped = true;
	return true;
}

/*
 * Whether the data directory must be fsync'd for the file st describes to
 * be found after a crash: it is empty (this write makes it), or it is not
 * the file whose entry was fsync'd last (made anew or put in place since,
 * by this process or another), or that fsync failed.
 */
static bool
EntryNeedsSync(const struct stat *st, const FlakeFileEntry *entry)
{
	return st->st_size == 0 || !entry->synced ||
		st->st_dev != entry->dev || st->st_ino != entry->ino;
}

/*
 * Write a lease with the given serial into both copies, each fsync'd
 * before the next is written, then the data directory where the file's
 * entry may not be on disk (entry says; the caller's lock protects it).
 * Returns false with errno set on failure; then neither the lease nor
 * anything above the previous one may be used.
 */
bool
FlakeStateFileWrite(const FlakeLease *lease, uint64 serial,
					FlakeFileEntry *entry)
{
	char		buf[FLAKE_RECORD_SIZE];
	FlakeRecord rec;
	int			fd;
	bool		ok;
	struct stat st;
	bool		sync_directory = false;

	memset(&rec, 0, sizeof(rec));
	rec.magic = FLAKE_RECORD_MAGIC;
	rec.version = FLAKE_RECORD_VERSION;
	rec.serial = serial;
	rec.lease = *lease;
	rec.crc = RecordCrc(&rec, offsetof(FlakeRecord, crc));
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &rec, sizeof(rec));

	fd = BasicOpenFile(FLAKE_STATE_FILE, O_RDWR | O_CREAT | PG_BINARY);
	if (fd < 0)
		return false;
	ok = fstat(fd, &st) == 0;
	if (ok)
	{
		sync_directory = EntryNeedsSync(&st, entry);
		ok = WriteSlot(fd, FLAKE_SLOT_FIRST, buf) &&
			WriteSlot(fd, FLAKE_SLOT_SECOND, buf) &&
			WipeV1Copy(fd);
	}
	if (!ok)
	{
		int			save_errno = errno;

		close(fd);
		errno = save_errno;
		return false;
	}
	close(fd);
	if (sync_directory)
	{
		/* until it is done, every write must try it */
		entry->synced = false;
		if (fsync_fname_ext(".", true, false, LOG) != 0)
			return false;
		entry->synced = true;
		entry->dev = st.st_dev;
		entry->ino = st.st_ino;
	}
	return true;
}
