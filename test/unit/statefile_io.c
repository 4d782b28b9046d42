/*
 * The state file as src/statefile.c reads and writes it, in a directory
 * of its own: the lease and its serial back as written; the newer of two
 * valid copies; a copy that is damaged, cut short, of an unknown version
 * or magic, with a lease no layout could write, or in a slot its version
 * does not use, never taken, and the lease then read from its twin with
 * a WARNING; files of versions 1 and 2; a file that is missing or cannot
 * be read.  A write goes to the copy at 4096 and is fsync'd before the
 * copy at 0 is written; the data directory is fsync'd whenever the
 * file's entry may not be on disk (a new or empty file, another file put
 * in place, a directory fsync that failed or never ran), and not
 * otherwise; a failure anywhere returns false with its errno and leaves
 * the copy at 0 as it was.
 * The records that the test writes are laid out and summed here, apart
 * from src/statefile.c, so that a change of the format fails.  The fsyncs
 * and the file's opening are stubs that note what was done and fail when
 * asked; reads and writes go to the file through the stubs too.
 */
#include "postgres.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/lwlock.h"

static ssize_t read_at(int fd, void *buf, size_t n, off_t offset);
static ssize_t write_at(int fd, const void *buf, size_t n, off_t offset);

#undef pg_pread
#undef pg_pwrite
#define pg_pread read_at
#define pg_pwrite write_at

#include "../../src/statefile.c"
#include "tap.h"
#include "stubs.h"

/* what the test asks to fail: the number of the call, from 1; 0 none */
static int	open_fails_errno;
static int	read_fails;
static int	write_short_at = -1;	/* the offset of a write cut short */
static int	write_fails_errno;
static int	fsync_fails_at;
static bool dir_fsync_fails;

/* what was done, in order */
static char events[512];
static int	reads;
static int	fsyncs;

static void
note(const char *event)
{
	if (strlen(events) + strlen(event) + 2 < sizeof(events))
	{
		if (events[0] != '\0')
			strcat(events, " ");
		strcat(events, event);
	}
}

static void
reset_events(void)
{
	events[0] = '\0';
	reads = 0;
	fsyncs = 0;
	open_fails_errno = 0;
	read_fails = 0;
	write_short_at = -1;
	write_fails_errno = 0;
	fsync_fails_at = 0;
	dir_fsync_fails = false;
	stub_warnings = 0;
}

static ssize_t
read_at(int fd, void *buf, size_t n, off_t offset)
{
	reads++;
	if (read_fails)
	{
		errno = EIO;
		return -1;
	}
	return pread(fd, buf, n, offset);
}

static ssize_t
write_at(int fd, const void *buf, size_t n, off_t offset)
{
	char		event[32];

	snprintf(event, sizeof(event), "w%lld", (long long) offset);
	note(event);
	if (write_fails_errno != 0)
	{
		errno = write_fails_errno;
		return -1;
	}
	if (offset == write_short_at)
		return pwrite(fd, buf, n / 2, offset);
	return pwrite(fd, buf, n, offset);
}

int
BasicOpenFile(const char *fileName, int fileFlags)
{
	note((fileFlags & O_CREAT) ? "open(create)" : "open");
	if (open_fails_errno != 0)
	{
		errno = open_fails_errno;
		return -1;
	}
	return open(fileName, fileFlags, 0600);
}

int
pg_fsync(int fd)
{
	(void) fd;
	note("s");
	if (++fsyncs == fsync_fails_at)
	{
		errno = EIO;
		return -1;
	}
	return 0;
}

int
fsync_fname_ext(const char *fname, bool isdir, bool ignore_perm, int elevel)
{
	(void) ignore_perm;
	(void) elevel;
	note(strcmp(fname, ".") == 0 && isdir ? "dir" : "fsync(other)");
	if (dir_fsync_fails)
	{
		errno = EIO;
		return -1;
	}
	return 0;
}

/* the records as the test lays them out */
#define MAGIC		0x464c4b31
#define SIZE		512

static const FlakeLayout layout = {INT64CONST(1735689600000), 10};

static pg_crc32c
crc_of(const char *buf, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf, len);
	FIN_CRC32C(crc);
	return crc;
}

static void
put32(char *buf, int at, uint32 v)
{
	memcpy(buf + at, &v, 4);
}

static void
put64(char *buf, int at, uint64 v)
{
	memcpy(buf + at, &v, 8);
}

/*
 * A record of version 3 (the lease with its timeline, CRC at 48) or of
 * versions 1 and 2 (without it, CRC at 40); version and magic as given.
 */
static void
make_record(char *buf, uint32 magic, uint32 version, uint64 serial,
			const FlakeLease *lease)
{
	int			crc_at = (version == 1 || version == 2) ? 40 : 48;

	memset(buf, 0, SIZE);
	put32(buf, 0, magic);
	put32(buf, 4, version);
	put64(buf, 8, serial);
	put64(buf, 16, (uint64) lease->epoch_ms);
	put32(buf, 24, (uint32) lease->node_bits);
	put32(buf, 28, (uint32) lease->node_id);
	put64(buf, 32, (uint64) lease->lease_end);
	if (crc_at == 48)
	{
		put32(buf, 40, lease->timeline);
		put32(buf, 44, lease->reserved);
	}
	put32(buf, crc_at, crc_of(buf, crc_at));
}

static void
lease_of(FlakeLease *lease, int64 end, uint32 timeline)
{
	FlakeLeaseFill(lease, &layout, 5, end, timeline);
}

/* the file made anew from slots: data at offsets, the rest zeros */
static void
make_file(int length)
{
	int			fd;

	(void) unlink(FLAKE_STATE_FILE);
	fd = open(FLAKE_STATE_FILE, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, length) != 0)
	{
		tap_bail("cannot make the state file");
	}
	close(fd);
}

static void
put_slot(int offset, const char *buf, int len)
{
	int			fd = open(FLAKE_STATE_FILE, O_RDWR);

	if (fd < 0 || pwrite(fd, buf, len, offset) != len)
	{
		tap_bail("cannot write the state file");
	}
	close(fd);
}

static void
get_slot(int offset, char *buf)
{
	int			fd = open(FLAKE_STATE_FILE, O_RDONLY);

	memset(buf, 0x55, SIZE);
	if (fd < 0 || pread(fd, buf, SIZE, offset) != SIZE)
	{
		tap_bail("cannot read the state file");
	}
	close(fd);
}

static bool
same_lease(const FlakeLease *a, const FlakeLease *b)
{
	return a->epoch_ms == b->epoch_ms && a->node_bits == b->node_bits &&
		a->node_id == b->node_id && a->lease_end == b->lease_end &&
		a->timeline == b->timeline && a->reserved == b->reserved;
}

/* read the file; the lease's end, or -1 with the status in *status */
static int64
read_end(FlakeFileStatus *status, uint64 *serial)
{
	FlakeLease	lease;

	memset(&lease, 0, sizeof(lease));
	*serial = 0;
	*status = FlakeStateFileRead(&lease, serial);
	return *status == FLAKE_FILE_OK ? lease.lease_end : -1;
}

/*
 * A file of slots: what reading it gives (the lease's end and serial, or
 * a status that is not OK with end -1), and the WARNINGs it gives.
 */
static void
check_read(const char *what, int64 want_end, uint64 want_serial,
		   FlakeFileStatus want_status, int want_warnings)
{
	FlakeFileStatus status;
	uint64		serial;
	int64		end;

	reset_events();
	end = read_end(&status, &serial);
	tap_check(status == want_status && end == want_end &&
			  (want_status != FLAKE_FILE_OK || serial == want_serial) &&
			  stub_warnings == want_warnings,
			  what, "status %d, end %lld, serial %llu, %d warnings; want status %d, end %lld, serial %llu, %d warnings",
			  (int) status, (long long) end, (unsigned long long) serial, stub_warnings,
			  (int) want_status, (long long) want_end, (unsigned long long) want_serial,
			  want_warnings);
}

/* a file of version 3 with the copies at 0 and 4096 as given */
static void
make_v3(uint64 serial0, int64 end0, uint64 serial4096, int64 end4096)
{
	char		buf[SIZE];
	FlakeLease	lease;

	make_file(4096 + SIZE);
	lease_of(&lease, end0, 2);
	make_record(buf, MAGIC, 3, serial0, &lease);
	put_slot(0, buf, SIZE);
	lease_of(&lease, end4096, 2);
	make_record(buf, MAGIC, 3, serial4096, &lease);
	put_slot(4096, buf, SIZE);
}

static void
damage(int offset, int byte)
{
	char		buf[SIZE];

	get_slot(offset, buf);
	buf[byte] ^= 0x10;
	put_slot(offset, buf, SIZE);
}

static void
check_reading(void)
{
	char		buf[SIZE];
	FlakeLease	lease;
	FlakeLease	got;
	FlakeFileCopy copies[FLAKE_FILE_SLOTS];
	uint64		serial;
	FlakeFileStatus status;
	int			n;

	/* no file */
	(void) unlink(FLAKE_STATE_FILE);
	check_read("no file: missing", -1, 0, FLAKE_FILE_MISSING, 0);
	tap_check(FlakeStateFileCopies(copies) == 0, "no file: no copies", "copies were read");

	/* the file cannot be opened, or read */
	make_v3(7, 5000, 7, 5000);
	reset_events();
	open_fails_errno = EACCES;
	status = FlakeStateFileRead(&got, &serial);
	tap_check(status == FLAKE_FILE_UNREADABLE && errno == EACCES,
			  "a file that cannot be opened: unreadable, with the open's errno",
			  "status %d, errno %d", (int) status, errno);
	reset_events();
	read_fails = 1;
	status = FlakeStateFileRead(&got, &serial);
	tap_check(status == FLAKE_FILE_UNREADABLE && errno == EIO,
			  "a file that cannot be read: unreadable, with the read's errno",
			  "status %d, errno %d", (int) status, errno);
	reset_events();
	read_fails = 1;
	n = FlakeStateFileCopies(copies);
	tap_check(n < 0 && errno == EIO, "a file that cannot be read: no copies, with the read's errno",
			  "%d copies, errno %d", n, errno);

	/* both copies alike, and the whole record as the test laid it out */
	make_v3(7, 5000, 7, 5000);
	reset_events();
	lease_of(&lease, 5000, 2);
	memset(&got, 0, sizeof(got));
	status = FlakeStateFileRead(&got, &serial);
	tap_check(status == FLAKE_FILE_OK && serial == 7 && same_lease(&got, &lease) &&
			  stub_warnings == 0,
			  "two copies alike: the lease, every field, and its serial, with no warning",
			  "status %d, serial %llu, end %lld, node %d, bits %d, timeline %u, %d warnings",
			  (int) status, (unsigned long long) serial, (long long) got.lease_end,
			  got.node_id, got.node_bits, got.timeline, stub_warnings);
	n = FlakeStateFileCopies(copies);
	tap_check(n == FLAKE_FILE_SLOTS &&
			  copies[0].offset == 0 && copies[0].present && copies[0].valid &&
			  copies[0].version == 3 && copies[0].serial == 7 &&
			  copies[1].offset == 4096 && copies[1].present && copies[1].valid &&
			  copies[1].version == 3 && copies[1].serial == 7 &&
			  copies[2].offset == 512 && !copies[2].present && !copies[2].valid,
			  "two copies alike: the copies at 0 and 4096 valid, the slot at 512 absent",
			  "%d read; 0: offset %d present %d valid %d version %u serial %llu; 4096: offset %d present %d valid %d; 512: offset %d present %d",
			  n, copies[0].offset, copies[0].present, copies[0].valid, copies[0].version,
			  (unsigned long long) copies[0].serial, copies[1].offset, copies[1].present,
			  copies[1].valid, copies[2].offset, copies[2].present);

	/* one copy newer than the other: a write cut between them */
	make_v3(7, 5000, 8, 6000);
	check_read("the copy at 4096 newer: its lease, no warning", 6000, 8, FLAKE_FILE_OK, 0);
	make_v3(9, 7000, 8, 6000);
	check_read("the copy at 0 newer: its lease, no warning", 7000, 9, FLAKE_FILE_OK, 0);

	/* a damaged copy: the twin's lease, with a warning */
	make_v3(7, 5000, 7, 5000);
	damage(0, 33);
	check_read("the copy at 0 damaged: the lease from 4096, a warning", 5000, 7, FLAKE_FILE_OK, 1);
	make_v3(7, 5000, 7, 5000);
	damage(4096, 47);
	check_read("the copy at 4096 damaged: the lease from 0, a warning", 5000, 7, FLAKE_FILE_OK, 1);
	make_v3(7, 5000, 8, 6000);
	damage(4096, 50);
	check_read("the CRC at 4096 damaged: the older lease from 0, a warning", 5000, 7, FLAKE_FILE_OK, 1);
	make_v3(7, 5000, 7, 5000);
	damage(0, 9);
	damage(4096, 17);
	check_read("both copies damaged: damaged", -1, 0, FLAKE_FILE_DAMAGED, 0);

	/* a file cut short */
	make_v3(7, 5000, 7, 5000);
	if (truncate(FLAKE_STATE_FILE, 4096 + SIZE - 1) != 0)
		tap_bail("cannot cut the file short");
	check_read("the copy at 4096 cut short by a byte: the lease from 0, a warning",
			   5000, 7, FLAKE_FILE_OK, 1);
	n = FlakeStateFileCopies(copies);
	tap_check(n == FLAKE_FILE_SLOTS && copies[0].present && !copies[1].present && !copies[1].valid,
			  "the copy at 4096 cut short: not present", "present %d valid %d",
			  copies[1].present, copies[1].valid);
	make_file(SIZE - 1);
	check_read("a file shorter than a copy: damaged", -1, 0, FLAKE_FILE_DAMAGED, 0);
	make_file(0);
	check_read("an empty file: damaged", -1, 0, FLAKE_FILE_DAMAGED, 0);

	/* records that no version wrote, with their CRC right */
	lease_of(&lease, 6000, 2);
	make_v3(7, 5000, 7, 5000);
	make_record(buf, MAGIC + 1, 3, 8, &lease);
	put_slot(4096, buf, SIZE);
	check_read("another magic: not taken, a warning", 5000, 7, FLAKE_FILE_OK, 1);
	make_v3(7, 5000, 7, 5000);
	make_record(buf, MAGIC, 4, 8, &lease);
	put_slot(4096, buf, SIZE);
	check_read("version 4: not taken, a warning", 5000, 7, FLAKE_FILE_OK, 1);
	make_v3(7, 5000, 7, 5000);
	make_record(buf, MAGIC, 0, 8, &lease);
	put_slot(4096, buf, SIZE);
	check_read("version 0: not taken, a warning", 5000, 7, FLAKE_FILE_OK, 1);
	make_v3(7, 5000, 7, 5000);
	lease.node_bits = FLAKE_MAX_NODE_BITS + 1;
	make_record(buf, MAGIC, 3, 8, &lease);
	put_slot(4096, buf, SIZE);
	check_read("a lease no layout could write: not taken, a warning", 5000, 7, FLAKE_FILE_OK, 1);
	lease_of(&lease, 6000, 2);
	lease.reserved = 1;
	make_v3(7, 5000, 7, 5000);
	make_record(buf, MAGIC, 3, 8, &lease);
	put_slot(4096, buf, SIZE);
	check_read("a lease whose reserved field is set: not taken, a warning", 5000, 7, FLAKE_FILE_OK, 1);

	/* version 3 in the slot at 512, which only version 1 used */
	lease_of(&lease, 6000, 2);
	make_v3(7, 5000, 7, 5000);
	make_record(buf, MAGIC, 3, 8, &lease);
	put_slot(512, buf, SIZE);
	check_read("version 3 at 512: not taken", 5000, 7, FLAKE_FILE_OK, 0);
	n = FlakeStateFileCopies(copies);
	tap_check(n == FLAKE_FILE_SLOTS && copies[2].present && !copies[2].valid,
			  "version 3 at 512: present, not valid", "present %d valid %d",
			  copies[2].present, copies[2].valid);
	make_v3(7, 5000, 7, 5000);
	memset(buf, 0, SIZE);
	buf[SIZE - 1] = 1;
	put_slot(512, buf, SIZE);
	n = FlakeStateFileCopies(copies);
	tap_check(n == FLAKE_FILE_SLOTS && copies[2].present && !copies[2].valid,
			  "a slot at 512 with its last byte set: present, not valid", "present %d valid %d",
			  copies[2].present, copies[2].valid);
	buf[SIZE - 1] = 0;
	buf[0] = 1;
	put_slot(512, buf, SIZE);
	n = FlakeStateFileCopies(copies);
	tap_check(n == FLAKE_FILE_SLOTS && copies[2].present && !copies[2].valid,
			  "a slot at 512 with its first byte set: present, not valid", "present %d valid %d",
			  copies[2].present, copies[2].valid);

	/* version 2: copies at 0 and 4096, no timeline */
	make_file(4096 + SIZE);
	lease_of(&lease, 4000, 0);
	make_record(buf, MAGIC, 2, 3, &lease);
	put_slot(0, buf, SIZE);
	lease_of(&lease, 4500, 0);
	make_record(buf, MAGIC, 2, 4, &lease);
	put_slot(4096, buf, SIZE);
	reset_events();
	memset(&got, 0x7f, sizeof(got));
	status = FlakeStateFileRead(&got, &serial);
	tap_check(status == FLAKE_FILE_OK && serial == 4 && same_lease(&got, &lease) &&
			  stub_warnings == 0,
			  "version 2: the newer copy's lease, every field, timeline 0",
			  "status %d, serial %llu, end %lld, node %d, bits %d, timeline %u, reserved %u",
			  (int) status, (unsigned long long) serial, (long long) got.lease_end,
			  got.node_id, got.node_bits, got.timeline, got.reserved);

	/* version 1: copies at 0 and 512 */
	make_file(1024);
	lease_of(&lease, 3000, 0);
	make_record(buf, MAGIC, 1, 5, &lease);
	put_slot(0, buf, SIZE);
	lease_of(&lease, 3500, 0);
	make_record(buf, MAGIC, 1, 6, &lease);
	put_slot(512, buf, SIZE);
	reset_events();
	memset(&got, 0x7f, sizeof(got));
	status = FlakeStateFileRead(&got, &serial);
	tap_check(status == FLAKE_FILE_OK && serial == 6 && same_lease(&got, &lease) &&
			  stub_warnings == 0,
			  "version 1: the newer copy's lease (at 512), every field, timeline 0, no warning",
			  "status %d, serial %llu, end %lld, timeline %u, %d warnings",
			  (int) status, (unsigned long long) serial, (long long) got.lease_end,
			  got.timeline, stub_warnings);
	damage(512, 20);
	check_read("version 1, the copy at 512 damaged: the lease from 0, a warning",
			   3000, 5, FLAKE_FILE_OK, 1);
	make_file(1024);
	lease_of(&lease, 3000, 0);
	make_record(buf, MAGIC, 1, 5, &lease);
	put_slot(0, buf, SIZE);
	check_read("version 1, one copy at 0 and zeros at 512: the lease, a warning",
			   3000, 5, FLAKE_FILE_OK, 1);
	make_file(1024);
	lease_of(&lease, 3500, 0);
	make_record(buf, MAGIC, 1, 6, &lease);
	put_slot(512, buf, SIZE);
	check_read("version 1, one copy at 512: the lease, a warning", 3500, 6, FLAKE_FILE_OK, 1);

	/* version 1 at 4096, where it never was: not taken */
	make_v3(7, 5000, 7, 5000);
	lease_of(&lease, 6000, 0);
	make_record(buf, MAGIC, 1, 8, &lease);
	put_slot(4096, buf, SIZE);
	check_read("version 1 at 4096: not taken, a warning", 5000, 7, FLAKE_FILE_OK, 1);

	/* a copy of version 3 beside one of version 1: rewritten at the next renewal */
	make_file(4096 + SIZE);
	lease_of(&lease, 3000, 0);
	make_record(buf, MAGIC, 1, 5, &lease);
	put_slot(0, buf, SIZE);
	lease_of(&lease, 5000, 2);
	make_record(buf, MAGIC, 3, 6, &lease);
	put_slot(4096, buf, SIZE);
	check_read("version 3 at 4096 beside version 1 at 0: the newer lease, a warning",
			   5000, 6, FLAKE_FILE_OK, 1);
}

/* a write: true or false, then what it did, in order */
static bool
write_lease(int64 end, uint64 serial, FlakeFileEntry *entry)
{
	FlakeLease	lease;
	bool		ok;

	lease_of(&lease, end, 2);
	events[0] = '\0';
	reads = 0;
	fsyncs = 0;
	ok = FlakeStateFileWrite(&lease, serial, entry);
	return ok;
}

static void
check_events(const char *what, bool ok, bool want_ok, const char *want)
{
	tap_check(ok == want_ok && strcmp(events, want) == 0, what,
			  "returned %d, did \"%s\"; want %d, \"%s\"", ok, events, want_ok, want);
}

static ino_t
inode_of_file(void)
{
	struct stat st;

	if (stat(FLAKE_STATE_FILE, &st) != 0)
		return 0;
	return st.st_ino;
}

static void
check_writing(void)
{
	FlakeFileEntry entry;
	FlakeFileStatus status;
	FlakeLease	want;
	FlakeLease	got;
	char		buf[SIZE];
	char		laid[SIZE];
	uint64		serial;
	bool		ok;
	int			fd;

	/* a new file: both copies, the first fsync'd first, then the directory */
	(void) unlink(FLAKE_STATE_FILE);
	memset(&entry, 0, sizeof(entry));
	reset_events();
	ok = write_lease(5000, 1, &entry);
	check_events("a new file: the copy at 4096 written and fsync'd, then the one at 0, then the directory",
				 ok, true, "open(create) w4096 s w0 s dir");
	tap_check(entry.synced && entry.ino == inode_of_file(),
			  "a new file: its entry noted as fsync'd", "synced %d, inode %llu of %llu",
			  entry.synced, (unsigned long long) entry.ino,
			  (unsigned long long) inode_of_file());
	lease_of(&want, 5000, 2);
	make_record(laid, MAGIC, 3, 1, &want);
	get_slot(0, buf);
	tap_check(memcmp(buf, laid, SIZE) == 0, "the copy at 0 as version 3 lays it out, zeros after it",
			  "it differs");
	get_slot(4096, buf);
	tap_check(memcmp(buf, laid, SIZE) == 0, "the copy at 4096 the same", "it differs");
	memset(&got, 0, sizeof(got));
	reset_events();
	status = FlakeStateFileRead(&got, &serial);
	tap_check(status == FLAKE_FILE_OK && serial == 1 && same_lease(&got, &want),
			  "a new file: read back", "status %d, serial %llu", (int) status,
			  (unsigned long long) serial);

	/* the same file again: no directory fsync */
	reset_events();
	ok = write_lease(6000, 2, &entry);
	check_events("the same file again: both copies, no directory fsync", ok, true,
				 "open(create) w4096 s w0 s");
	reset_events();
	ok = write_lease(6500, 3, &entry);
	tap_check(ok && reads == 0, "the same file again: the slot at 512 read only once a process",
			  "%d reads", reads);

	/* the entry not noted as fsync'd, or another file's */
	entry.synced = false;
	reset_events();
	ok = write_lease(7000, 4, &entry);
	check_events("an entry not fsync'd: the directory fsync'd", ok, true,
				 "open(create) w4096 s w0 s dir");
	entry.ino++;
	reset_events();
	ok = write_lease(7500, 5, &entry);
	check_events("another inode noted: the directory fsync'd", ok, true,
				 "open(create) w4096 s w0 s dir");
	entry.dev++;
	reset_events();
	ok = write_lease(7600, 6, &entry);
	check_events("another device noted: the directory fsync'd", ok, true,
				 "open(create) w4096 s w0 s dir");
	tap_check(entry.synced && entry.ino == inode_of_file(),
			  "another device noted: the file's own noted after", "synced %d", entry.synced);

	/* a file put in place of it, and an empty file */
	fd = open("flakeid.state.new", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096 + SIZE) != 0 ||
		rename("flakeid.state.new", FLAKE_STATE_FILE) != 0)
		tap_bail("cannot put a file in place");
	if (fd >= 0)
		close(fd);
	reset_events();
	ok = write_lease(8000, 7, &entry);
	check_events("a file put in place: the directory fsync'd", ok, true,
				 "open(create) w4096 s w0 s dir");
	if (truncate(FLAKE_STATE_FILE, 0) != 0)
		tap_bail("cannot empty the file");
	reset_events();
	ok = write_lease(8500, 8, &entry);
	check_events("an emptied file, the same inode: the directory fsync'd", ok, true,
				 "open(create) w4096 s w0 s dir");

	/*
	 * A directory fsync that fails: false, and the next write tries again,
	 * for a new file and for an emptied one whose inode the entry names
	 */
	(void) unlink(FLAKE_STATE_FILE);
	memset(&entry, 0, sizeof(entry));
	reset_events();
	dir_fsync_fails = true;
	ok = write_lease(9000, 9, &entry);
	check_events("a directory fsync that fails: false", ok, false,
				 "open(create) w4096 s w0 s dir");
	tap_check(!entry.synced, "a directory fsync that fails: the entry not noted as fsync'd",
			  "it was");
	reset_events();
	ok = write_lease(9200, 10, &entry);
	check_events("after a failed directory fsync: the next write fsyncs it", ok, true,
				 "open(create) w4096 s w0 s dir");
	if (truncate(FLAKE_STATE_FILE, 0) != 0)
		tap_bail("cannot empty the file");
	reset_events();
	dir_fsync_fails = true;
	ok = write_lease(9300, 11, &entry);
	check_events("an emptied file whose directory fsync fails: false", ok, false,
				 "open(create) w4096 s w0 s dir");
	reset_events();
	ok = write_lease(9500, 10, &entry);
	check_events("an emptied file, after its failed directory fsync: the next write fsyncs it",
				 ok, true, "open(create) w4096 s w0 s dir");
	tap_check(entry.synced && entry.ino == inode_of_file(),
			  "after the directory fsync: the entry noted", "synced %d", entry.synced);

	/* failures of the file: false, errno kept, the copy at 0 as it was */
	reset_events();
	fsync_fails_at = 1;
	ok = write_lease(10000, 11, &entry);
	check_events("the first copy's fsync fails: false, the copy at 0 not written", ok, false,
				 "open(create) w4096 s");
	tap_check(errno == EIO, "the first copy's fsync fails: its errno", "errno %d", errno);
	lease_of(&want, 9500, 2);
	make_record(laid, MAGIC, 3, 10, &want);
	get_slot(0, buf);
	tap_check(memcmp(buf, laid, SIZE) == 0, "the first copy's fsync fails: the copy at 0 unchanged",
			  "it changed");
	reset_events();
	fsync_fails_at = 2;
	ok = write_lease(10000, 11, &entry);
	check_events("the second copy's fsync fails: false", ok, false, "open(create) w4096 s w0 s");
	reset_events();
	write_short_at = 4096;
	ok = write_lease(10500, 12, &entry);
	check_events("a write of the first copy cut short: false", ok, false, "open(create) w4096");
	tap_check(errno == ENOSPC, "a write cut short: ENOSPC", "errno %d", errno);
	reset_events();
	write_short_at = 0;
	ok = write_lease(10500, 12, &entry);
	check_events("a write of the second copy cut short: false", ok, false,
				 "open(create) w4096 s w0");
	reset_events();
	write_fails_errno = EDQUOT;
	ok = write_lease(10500, 12, &entry);
	check_events("a write that fails: false", ok, false, "open(create) w4096");
	tap_check(errno == EDQUOT, "a write that fails: its errno", "errno %d", errno);
	reset_events();
	open_fails_errno = EROFS;
	ok = write_lease(10500, 12, &entry);
	check_events("an open that fails: false", ok, false, "open(create)");
	tap_check(errno == EROFS, "an open that fails: its errno", "errno %d", errno);

	/* a file of version 1: its copy at 512 wiped after the others, once */
	make_file(1024);
	lease_of(&want, 3000, 0);
	make_record(buf, MAGIC, 1, 5, &want);
	put_slot(0, buf, SIZE);
	make_record(buf, MAGIC, 1, 6, &want);
	put_slot(512, buf, SIZE);
	v1_copy_wiped = false;
	memset(&entry, 0, sizeof(entry));
	reset_events();
	ok = write_lease(11000, 7, &entry);
	check_events("a file of version 1: both copies, then the one at 512 wiped and fsync'd", ok, true,
				 "open(create) w4096 s w0 s w512 s dir");
	get_slot(512, buf);
	memset(laid, 0, SIZE);
	tap_check(memcmp(buf, laid, SIZE) == 0, "a file of version 1: zeros at 512", "it is not");
	check_read("a file of version 1, written: the new lease, no warning", 11000, 7,
			   FLAKE_FILE_OK, 0);
	reset_events();
	ok = write_lease(11500, 8, &entry);
	tap_check(ok && reads == 0 && strcmp(events, "open(create) w4096 s w0 s") == 0,
			  "a file of version 1, written again: the slot at 512 neither read nor written",
			  "%d reads, did \"%s\"", reads, events);
	v1_copy_wiped = false;
	reset_events();
	ok = write_lease(12000, 9, &entry);
	check_events("zeros at 512: not written", ok, true, "open(create) w4096 s w0 s");
	v1_copy_wiped = false;
	memset(buf, 0, SIZE);
	buf[SIZE - 1] = 1;
	put_slot(512, buf, SIZE);
	reset_events();
	ok = write_lease(12200, 9, &entry);
	check_events("a byte set at 512 but no version there: not a record, not written", ok, true,
				 "open(create) w4096 s w0 s");
	v1_copy_wiped = false;
	reset_events();
	fsync_fails_at = 3;
	make_record(buf, MAGIC, 1, 6, &want);
	put_slot(512, buf, SIZE);
	ok = write_lease(12500, 10, &entry);
	check_events("the wipe's fsync fails: false", ok, false, "open(create) w4096 s w0 s w512 s");
	put_slot(512, buf, SIZE);	/* as a crash could leave it */
	reset_events();
	ok = write_lease(13000, 11, &entry);
	check_events("after a failed wipe: the slot at 512 read and wiped again", ok, true,
				 "open(create) w4096 s w0 s w512 s");
	v1_copy_wiped = false;
	reset_events();
	read_fails = 1;
	ok = write_lease(13500, 12, &entry);
	check_events("the slot at 512 cannot be read: false", ok, false, "open(create) w4096 s w0 s");
}

int
main(void)
{
	char		dir[] = "/tmp/flakeid-statefile.XXXXXX";

	if (mkdtemp(dir) == NULL || chdir(dir) != 0)
		tap_bail("cannot make a directory to work in");
	/* the file then opens as descriptor 0, which is as good as any other */
	close(STDIN_FILENO);
	check_reading();
	check_writing();
	(void) unlink(FLAKE_STATE_FILE);
	(void) unlink("flakeid.state.new");
	if (chdir("/") != 0 || rmdir(dir) != 0)
		printf("# could not remove %s\n", dir);
	return tap_done();
}
