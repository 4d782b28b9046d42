# The state file fails after it opened: a write that stops short (a full
# disk) or fails (EIO), a read or fstat() that fails (EIO) and a failing
# fsync of the data directory, through a small preload library that acts
# on flakeid.state and the data directory alone while a switch file
# exists.  015 makes the file unwritable at open; here the open succeeds
# and the write or read fails.
#
# 0. The fsync of the data directory fails after the first write made
#    the file: no ID comes until a later write fsyncs the directory.
#    The file deleted while the server runs, replaced by a copy, or
#    truncated while that fsync fails: a later write fsyncs the directory
#    again; otherwise none does.
# 1. Writes stop short while a session generates: generation stops with
#    the disk-full error (53100) once the lease on disk runs out, and no
#    ID reaches the lease of any valid copy on disk: the copy written
#    short is damaged, the other holds the lease before it.
# 2. Reads fail: flakeid_state_file() fails with an I/O error (58030).
# 3. The disk is back: IDs come again, above every earlier one, with both
#    copies valid; after a clean and a crash restart, too.
# 4. Writes stop short while flakeid_accept_layout() writes a new
#    layout's lease: the accept fails and takes nothing; after a crash,
#    recovery replays the lease it sent to WAL, above every earlier ID.
# 5. Only the second write of a renewal, of the copy at offset 0, fails
#    (EIO), after the copy at 4096 was written: the renewal fails, and no
#    ID reaches the lease of the copy at 0, which is still valid.
# 6. A file of flakeid 1.1 (format version 1: copies at offsets 0 and
#    512, the newer at 512).  The first write of a process writes the
#    copies at 4096 and 0, then reads and zeroes the one at 512, which
#    flakeid 1.1 would still read after a downgrade: the write at 0, the
#    read at 512 or the write at 512 failing fails the renewal, and the
#    copy at 512 stays until a write zeroes it.

use strict;
use warnings;

use File::Copy;
use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $io_shim = build_shim('state_io', <<'EOC');
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_f) (int, const void *, size_t, off_t);
typedef int (*fsync_f) (int);
typedef ssize_t (*pread_f) (int, void *, size_t, off_t);

/* Whether fd is flakeid.state and the switch file $FLAKE_STATE_IO.what exists. */
static int
failing(int fd, const char *what)
{
	const char *base = getenv("FLAKE_STATE_IO");
	char		path[4096];
	char		link[64];
	ssize_t		len;
	const char *name;

	if (base == NULL)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0)
		return 0;
	path[len] = '\0';
	name = strrchr(path, '/');
	if (name == NULL || strcmp(name + 1, "flakeid.state") != 0)
		return 0;
	snprintf(path, sizeof(path), "%s.%s", base, what);
	return access(path, F_OK) == 0;
}

/*
 * A write that stops after 12 bytes, within a record's serial, as on a
 * full disk; and one at offset 0 or 512 that fails with EIO, writing
 * nothing.
 */
#define PWRITE_SHIM(fname) \
ssize_t \
fname(int fd, const void *buf, size_t n, off_t off) \
{ \
	static pwrite_f next; \
\
	if (next == NULL) \
		next = (pwrite_f) dlsym(RTLD_NEXT, #fname); \
	if (n > 12 && failing(fd, "write")) \
		n = 12; \
	if ((off == 0 && failing(fd, "eio0")) || \
		(off == 512 && failing(fd, "eio512"))) \
	{ \
		errno = EIO; \
		return -1; \
	} \
	return next(fd, buf, n, off); \
}

/* A read that fails, as on a failing disk; or only a read at offset 512. */
#define PREAD_SHIM(fname) \
ssize_t \
fname(int fd, void *buf, size_t n, off_t off) \
{ \
	static pread_f next; \
\
	if (next == NULL) \
		next = (pread_f) dlsym(RTLD_NEXT, #fname); \
	if (failing(fd, "read") || (off == 512 && failing(fd, "rio512"))) \
	{ \
		errno = EIO; \
		return -1; \
	} \
	return next(fd, buf, n, off); \
}

/*
 * An fsync of the data directory (the server's working directory): it
 * fails while $FLAKE_STATE_IO.dirsync exists, and otherwise appends the
 * process id to $FLAKE_STATE_IO.dirsynced.
 */
int
fsync(int fd)
{
	static fsync_f next;
	const char *base = getenv("FLAKE_STATE_IO");
	char		path[4096];
	char		cwd[4096];
	char		link[64];
	ssize_t		len;
	ssize_t		cwdlen;
	struct stat st;

	if (next == NULL)
		next = (fsync_f) dlsym(RTLD_NEXT, "fsync");
	if (base == NULL || fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
		return next(fd);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	cwdlen = readlink("/proc/self/cwd", cwd, sizeof(cwd) - 1);
	if (len <= 0 || len != cwdlen || memcmp(path, cwd, len) != 0)
		return next(fd);
	snprintf(path, sizeof(path), "%s.dirsync", base);
	if (access(path, F_OK) == 0)
	{
		errno = EIO;
		return -1;
	}
	snprintf(path, sizeof(path), "%s.dirsynced", base);
	{
		FILE	   *f = fopen(path, "a");

		if (f != NULL)
		{
			fprintf(f, "%d\n", (int) getpid());
			fclose(f);
		}
	}
	return next(fd);
}

/* An fstat() that fails, as on a failing disk. */
#define FSTAT_SHIM(fname, stat_type) \
int \
fname(int fd, stat_type *st) \
{ \
	static int	(*next) (int, stat_type *); \
\
	if (next == NULL) \
		next = (int (*) (int, stat_type *)) dlsym(RTLD_NEXT, #fname); \
	if (failing(fd, "stat")) \
	{ \
		errno = EIO; \
		return -1; \
	} \
	return next(fd, st); \
}

PWRITE_SHIM(pwrite)
PWRITE_SHIM(pwrite64)
PREAD_SHIM(pread)
PREAD_SHIM(pread64)
FSTAT_SHIM(fstat, struct stat)
FSTAT_SHIM(fstat64, struct stat64)
EOC

my $node = flake_node('io', quiet => 1, node_id => 75);
my $switch = $node->basedir . '/state_io';
sub start_node
{
	local $ENV{LD_PRELOAD} = FlakeFault::preload_after_sanitizers($io_shim);
	local $ENV{FLAKE_STATE_IO} = $switch;
	$node->start;
	return;
}
sub switch_on  { my ($what) = @_; open my $fh, '>', "$switch.$what" or die $!; close $fh; return }
sub switch_off { my ($what) = @_; unlink "$switch.$what"; return }

# 0. The first write makes the state file, and the fsync of the data
#    directory that puts the file's entry on disk fails: no ID comes
#    from that lease.  Once fsyncs work again, a later write fsyncs the
#    directory before IDs come, although it finds the file there.
# (the harness's nodes run with fsync = off, which skips every fsync)
$node->append_conf('postgresql.conf', 'fsync = on');
switch_on('dirsync');
start_node();
$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
my ($ret, $out, $err, $state) = psql_state($node, 'SELECT nextflake()');
isnt($ret, 0, 'with the data directory failing its fsync, the first lease gives no ID');
like($err, qr/flakeid/, 'the error is flakeid\'s') or diag($err);
ok(-e $node->data_dir . '/flakeid.state', 'the state file was made');
unlink "$switch.dirsynced";
switch_off('dirsync');
ok(ids_come_again($node, 60),
	'with fsyncs working again, IDs come');
my $worker = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'flakeid lease worker'});
my @synced = -e "$switch.dirsynced" ? split(/\n/, slurp_file("$switch.dirsynced")) : ();
ok((grep { $_ eq $worker } @synced),
	'before that, the lease worker fsync\'d the data directory, although the file was there')
  or diag("lease worker $worker; data directory fsync'd by: @synced");

# Whether the lease worker fsyncs the data directory within $seconds
# while a session generates (and so the worker renews the lease).
sub worker_syncs_directory
{
	my ($seconds) = @_;
	unlink "$switch.dirsynced";
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		$node->psql('postgres',
			'SELECT count(nextflake()) FROM generate_series(1, 1000)');
		return 1
		  if -e "$switch.dirsynced"
		  && grep { $_ eq $worker } split(/\n/, slurp_file("$switch.dirsynced"));
		select(undef, undef, undef, 0.05);
	}
	return 0;
}
my $state_file = $node->data_dir . '/flakeid.state';
ok(!worker_syncs_directory(3),
	'with the file\'s entry on disk, the renewals do not fsync the data directory');
unlink $state_file or die "unlink $state_file: $!";
ok(worker_syncs_directory(20),
	'the state file deleted while the server runs: the write that makes it again fsyncs the data directory');
ok(-s $state_file, 'and the file is there again');
copy($state_file, "$state_file.copy") or die "copy: $!";
rename("$state_file.copy", $state_file) or die "rename: $!";
ok(worker_syncs_directory(20),
	'the state file replaced by a copy: the next write fsyncs the data directory');

# The file truncated to empty, which a write cannot tell from a file it
# made, while the data directory fails its fsync: generation stops; with
# fsyncs working again the next write fsyncs the directory, although the
# file is the one whose entry an earlier write fsync'd, and has records.
sub generation_stops
{
	for (1 .. 200)
	{
		my ($rc) = $node->psql('postgres',
			'SELECT count(nextflake()) FROM generate_series(1, 1000)');
		return 1 if $rc != 0;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}
switch_on('dirsync');
truncate($state_file, 0) or die "truncate $state_file: $!";
ok(generation_stops(),
	'the state file truncated, with the data directory failing its fsync: generation stops');
switch_off('dirsync');
ok(worker_syncs_directory(20),
	'with fsyncs working again, the next write fsyncs the data directory');
ok(ids_come_again($node, 60), 'and IDs come again');

# fstat() of the open state file fails: the write fails, and generation
# stops until it works again.
switch_on('stat');
ok(generation_stops(), 'fstat() of the state file failing: generation stops');
switch_off('stat');
ok(ids_come_again($node, 60), 'with fstat() working again, IDs come again');

$node->safe_psql(
	'postgres', q{
CREATE TABLE ids (id flakeid NOT NULL, phase int NOT NULL);
CREATE PROCEDURE generate_until_error(ph int, n int)
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		INSERT INTO ids VALUES (nextflake(), ph);
		COMMIT;
	END LOOP;
END $$;
INSERT INTO ids SELECT nextflake(), 0 FROM generate_series(1, 1000);
});
my $low_bits = FLAKE_LOW_BITS;
my $ms_of    = "(id::bigint >> $low_bits)";

# 1. Writes stop short while a session generates, committing each ID.
switch_on('write');
($ret, $out, $err, $state) =
  psql_state($node, 'CALL generate_until_error(1, 5000000)');
isnt($ret, 0, 'with writes stopping short, generation stops');
is($state, '53100', 'with the disk-full SQLSTATE') or diag($err);
like($err, qr/could not renew the flakeid time lease in file "flakeid\.state": No space left on device/,
	'the error names the file and a full disk');
my $issued = $node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE phase = 1');
cmp_ok($issued, '>', 0, "the session had IDs first ($issued)");
my @copies = state_file_copies($node);
my @valid = grep { $_->{valid} eq 't' } @copies;
is(scalar(@valid), 1, 'the copy written short is damaged, the other valid')
  or diag(explain(\@copies));
my ($lease) = sort { $a <=> $b } map { $_->{lease_end_ms} } @valid;
is($node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE $ms_of >= $lease"),
	0, "no ID reaches the lease of any valid copy on disk ($lease ms)");
like($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	qr/lease failing/, 'flakeid_status() says the lease is failing');

# 2. Reads fail.
switch_on('read');
fails_with($node, 'SELECT * FROM flakeid_state_file()', '58030',
	'flakeid_state_file() with reads failing');
($ret, $out, $err) = psql_state($node, 'SELECT * FROM flakeid_state_file()');
like($err, qr/could not read flakeid state file "flakeid\.state": Input\/output error/,
	'the error names the file and the failed read');
switch_off('read');

# 3. The disk is back.
switch_off('write');
ok(ids_come_again($node, 60, 'INSERT INTO ids SELECT nextflake(), 2'),
	'with writes whole again, IDs come again');
ok( wait_until(
		sub { (grep { $_->{valid} eq 't' } state_file_copies($node)) == 2 }, 30),
	'both copies are valid again');
$node->safe_psql('postgres', 'INSERT INTO ids SELECT nextflake(), 2 FROM generate_series(1, 1000)');
# a clean restart, then a crash restart
$node->stop;
start_node();
$node->safe_psql('postgres', 'INSERT INTO ids SELECT nextflake(), 2 FROM generate_series(1, 1000)');
crash_node($node);
start_node();
$node->safe_psql('postgres', 'INSERT INTO ids SELECT nextflake(), 3 FROM generate_series(1, 1000)');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM ids a WHERE phase = 3 AND EXISTS (SELECT FROM ids b WHERE b.phase < 3 AND b.id >= a.id)}),
	0,
	'after a clean and a crash restart, every ID is above every earlier one');

# 4. Writes stop short while flakeid_accept_layout() writes the lease of
#    a new layout: the accept fails with the disk-full error, and the
#    layout is not taken; with the disk back, the same server accepts it.
#    The lease went to WAL first: after a crash that followed such a
#    failed accept, and a commit that flushed the WAL behind it, recovery
#    replays the new layout's lease, and IDs under it are above every
#    earlier one.
sub phase_above_all
{
	my ($phase, $name) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO ids SELECT nextflake(), $phase FROM generate_series(1, 1000)");
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM ids a WHERE phase = $phase AND EXISTS (SELECT FROM ids b WHERE b.phase < $phase AND b.id >= a.id)}),
		0, $name);
	return;
}
$node->stop;
$node->append_conf('postgresql.conf', 'flakeid.node_bits = 12');
start_node();
fails_with($node, 'SELECT nextflake()', '55000', 'node_bits 10 -> 12: the new layout waits to be accepted');
switch_on('write');
$err = fails_with($node, 'SELECT flakeid_accept_layout()', '53100',
	'accepting the layout with writes stopping short');
like($err, qr/could not write flakeid state file "flakeid\.state": No space left on device\n.*DETAIL:  The new layout's lease went to the write-ahead log first.*\n.*HINT:  Make the state file writable, then run flakeid_accept_layout\(\) again\./s,
	'the error names the file and a full disk, and says what the WAL holds');
fails_with($node, 'SELECT nextflake()', '55000', 'after the failed accept, the layout is not taken');
is($node->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()'),
	'10', 'flakeid_status() shows the recorded layout');
switch_off('write');

is($node->safe_psql('postgres', 'SELECT flakeid_accept_layout()'),
	't', 'with writes whole again, the same server accepts the layout');
phase_above_all(4, 'IDs under the accepted layout are above every earlier one');

$node->stop;
$node->adjust_conf('postgresql.conf', 'flakeid.node_bits', '14');
start_node();
fails_with($node, 'SELECT nextflake()', '55000', 'node_bits 12 -> 14: the new layout waits to be accepted');
switch_on('write');
fails_with($node, 'SELECT flakeid_accept_layout()', '53100',
	'accepting node_bits 14 with writes stopping short');
$node->safe_psql('postgres', 'CREATE TABLE flushed ()');
crash_node($node);
switch_off('write');
start_node();
is($node->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()'),
	'14', 'after a crash, recovery replayed the lease of the failed accept: node_bits 14');
phase_above_all(5, 'IDs under the replayed layout are above every earlier one');
# 5. A renewal's second write, of the copy at offset 0, fails with EIO
#    and writes nothing, after the copy at 4096 was written whole: the
#    renewal fails all the same, and generation stops with the I/O
#    error once the lease runs out.  The copy at 0 still holds the lease
#    before, and stays valid, so no ID may reach it.  The same after a
#    clean restart; after a crash, IDs are above every earlier one.
# The call turns the failure on itself (COPY writes the switch file)
# after its first 1000 IDs, so that it generates under a lease written
# before the failure, however slowly it started.
{
	local $ENV{PGOPTIONS} = '-c statement_timeout=60s';
	($ret, $out, $err, $state) = psql_state(
		$node, qq{DO \$\$
BEGIN
	INSERT INTO ids SELECT nextflake(), 6 FROM generate_series(1, 1000);
	COMMIT;
	COPY (SELECT 1) TO '$switch.eio0';
	CALL generate_until_error(6, 5000000);
END \$\$});
}
ok(-e "$switch.eio0", 'the call turned the failure of the copy at offset 0 on');
is($state, '58030', 'the copy at offset 0 failing its writes: generation stops with the I/O error')
  or diag($err);
like($err, qr/could not renew the flakeid time lease in file "flakeid\.state": Input\/output error/,
	'the error names the file and the failed write');
$issued = $node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE phase = 6');
cmp_ok($issued, '>', 1000, 'the call had IDs after the failure began (' . ($issued - 1000) . ')');
@copies = state_file_copies($node);
@valid = grep { $_->{valid} eq 't' } @copies;
my %at = map { $_->{offset} => $_ } @valid;
ok( $at{0} && $at{4096} && $at{4096}{serial} > $at{0}{serial}
	  && $at{4096}{lease_end_ms} > $at{0}{lease_end_ms},
	'both copies are valid, the one at 4096 holds a newer lease than the one at 0')
  or diag(explain(\@copies));
($lease) = sort { $a <=> $b } map { $_->{lease_end_ms} } @valid;
is($node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE $ms_of >= $lease"),
	0, "no ID reaches the lease of the copy at 0 ($lease ms)");
# a clean restart (its lease worker writes its coverage counters on the
# way), and the new worker's renewal fails the same way; then a crash
$node->stop;
start_node();
fails_with($node, 'SELECT nextflake()', '58030',
	'after a clean restart, with the copy at offset 0 still failing');
crash_node($node);
switch_off('eio0');
start_node();
phase_above_all(7, 'after a crash, IDs are above every earlier one');

# 6. The file of flakeid 1.1, its lease above every ID so far.
sub copies_summary
{
	return join ',', map { "$_->{offset}/$_->{version}/$_->{valid}" } state_file_copies($node);
}
$lease = lease_on_disk($node);
$node->stop;
my %v1 = (version => 1, no_timeline => 1, epoch_ms => 1577836800000, node_bits => 14, node_id => 75);
write_state_file(
	$node,
	0   => state_file_record(%v1, serial => 1, lease_end => $lease),
	512 => state_file_record(%v1, serial => 2, lease_end => $lease + 1));
switch_on('eio0');
start_node();
is(copies_summary(), '0/1/t,512/1/t', 'the version 1 file is read: its two copies, both valid');
fails_with($node, 'SELECT nextflake()', '58030',
	'the first write to a version 1 file failing at offset 0, after the copy at 4096: no ID');
is(copies_summary(), '0/1/t,512/1/t,4096/3/t',
	'the copy at 4096 was written, the two version 1 copies are still there');
$node->stop;
switch_off('eio0');
my $log_at = -s $node->logfile;
start_node();
ok( $node->log_contains(
		qr/has a damaged copy of the time lease.*\n.*The copy at offset 0 is not valid; the lease is read from the copy at offset 4096/,
		$log_at),
	'a version 1 copy at 0 beside a newer one at 4096 is reported as a damaged twin');
switch_on('rio512');
fails_with($node, 'SELECT nextflake()', '58030',
	'the copy at 512 failing to be read before it is zeroed: no ID');
# a restart before the write fails, so that the call's error comes from
# that write, and not from the failed read, which calls are told of until
# a write succeeds
$node->stop;
switch_off('rio512');
switch_on('eio512');
start_node();
fails_with($node, 'SELECT nextflake()', '58030',
	'the copy at 512 failing to be zeroed: no ID');
is(copies_summary(), '0/3/t,512/1/t,4096/3/t', 'both new copies written, the version 1 copy at 512 still there');
switch_off('eio512');
ok(ids_come_again($node, 60, 'INSERT INTO ids SELECT nextflake(), 8'),
	'with the copy at 512 writable again, IDs come again');
phase_above_all(8, 'once the copy at 512 is zeroed, IDs are above every earlier one');
is(copies_summary(), '0/3/t,4096/3/t', 'and the version 1 copy at 512 is gone');

is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'),
	0, 'no ID was issued twice');

$node->stop;
done_testing();
