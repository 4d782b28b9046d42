# Helpers for flakeid's fault-injection TAP tests: a server whose clock can
# be moved under libfaketime, one whose postmaster can be made unable to
# fork, and crashes.  Everything else a test needs
# (nodes, queries, SQLSTATEs, the generator's status) is in FlakeTest.pm.

package FlakeFault;

use strict;
use warnings;

use Exporter 'import';
use File::Copy qw(move);
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(
  faketime_library start_faked set_clock offset_to server_clock_offset
  wait_clock_offset crash_node server_processes start_fork_switch
  fork_failing state_file_record write_state_file
  start_slow_state_file slow_state_file build_shim
);

# The path of libfaketime's preload library, or undef.
sub faketime_library
{
	foreach my $path (
		'/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
		'/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
		'/usr/lib/faketime/libfaketime.so.1',
		'/usr/local/lib/faketime/libfaketime.so.1')
	{
		return $path if -e $path;
	}
	my $listed = `dpkg -L libfaketime 2>/dev/null`;
	return $1 if $listed =~ m{^(/\S*/libfaketime\.so\.1)$}m;
	return undef;
}

# The file libfaketime reads the clock offset of a node from.
sub clock_file
{
	my ($node) = @_;
	return $node->basedir . '/faketime.rc';
}

# Set the clock of a node started by start_faked: an offset from the real
# clock in libfaketime's notation ("-0.3" seconds, "-1h", "+0").  Every
# process of the server reads the file at each clock read, so the step
# reaches all of them at once.  The file is replaced atomically, so that no
# reader ever sees it empty.
sub set_clock
{
	my ($node, $offset) = @_;
	my $file = clock_file($node);

	die "bad clock offset \"$offset\"" unless $offset =~ /^[+-]\d+(\.\d+)?[smhdy]?$/;
	open my $fh, '>', "$file.new" or die "could not write $file.new: $!";
	print $fh "$offset\n";
	close $fh or die "could not write $file.new: $!";
	move("$file.new", $file) or die "could not rename to $file: $!";
	note "clock of node " . $node->name . " set to real time $offset";
	return;
}

# The clock offset, for set_clock or start_faked, that makes a server's
# clock read the given moment (seconds since 1970) now.
sub offset_to
{
	my ($moment) = @_;
	return sprintf('%+d', int($moment - time()));
}

# libfaketime 0.9.10 turns faking off in a process while it sleeps in
# select(), poll() or epoll_wait().  PostgreSQL 15's postmaster sleeps in
# select() and does its work in signal handlers, so the postmaster and every
# child it forks from a handler (the lease worker among them) would read the
# real clock, forever.  A small preload library, loaded before libfaketime,
# hands these calls straight to the C library so that every process of the
# server reads the one faked clock.
my $shim_source = <<'EOC';
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>

typedef int (*select_f) (int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_f) (int, fd_set *, fd_set *, fd_set *,
						  const struct timespec *, const sigset_t *);
typedef int (*poll_f) (struct pollfd *, nfds_t, int);
typedef int (*ppoll_f) (struct pollfd *, nfds_t, const struct timespec *,
						const sigset_t *);
typedef int (*epoll_wait_f) (int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_f) (int, struct epoll_event *, int, int,
							  const sigset_t *);

static select_f real_select;
static pselect_f real_pselect;
static poll_f real_poll;
static ppoll_f real_ppoll;
static epoll_wait_f real_epoll_wait;
static epoll_pwait_f real_epoll_pwait;

__attribute__((constructor)) static void
shim_init(void)
{
	void	   *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

	if (libc == NULL)
		libc = dlopen("libc.so.6", RTLD_LAZY);
	real_select = (select_f) dlsym(libc, "select");
	real_pselect = (pselect_f) dlsym(libc, "pselect");
	real_poll = (poll_f) dlsym(libc, "poll");
	real_ppoll = (ppoll_f) dlsym(libc, "ppoll");
	real_epoll_wait = (epoll_wait_f) dlsym(libc, "epoll_wait");
	real_epoll_pwait = (epoll_pwait_f) dlsym(libc, "epoll_pwait");
}

int
select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
	return real_select(n, r, w, e, t);
}

int
pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
		const sigset_t *m)
{
	return real_pselect(n, r, w, e, t, m);
}

int
poll(struct pollfd *f, nfds_t n, int t)
{
	return real_poll(f, n, t);
}

int
ppoll(struct pollfd *f, nfds_t n, const struct timespec *t, const sigset_t *m)
{
	return real_ppoll(f, n, t, m);
}

int
epoll_wait(int fd, struct epoll_event *ev, int n, int t)
{
	return real_epoll_wait(fd, ev, n, t);
}

int
epoll_pwait(int fd, struct epoll_event *ev, int n, int t, const sigset_t *m)
{
	return real_epoll_pwait(fd, ev, n, t, m);
}

/*
 * libfaketime opens and closes its timestamp file at every clock read, and
 * PostgreSQL reads the clock in signal handlers too (the statement
 * timeout's): a handler that interrupts such a read deadlocks on the C
 * library's lock of open files, and the backend hangs for ever.  Clock
 * reads go on to libfaketime with every signal blocked.
 */
#define CLOCK_READ(type, name, params, args) \
type \
name params \
{ \
	static type (*next) params; \
	sigset_t	all, old; \
	type		r; \
\
	if (next == NULL) \
		next = (type (*) params) dlsym(RTLD_NEXT, #name); \
	sigfillset(&all); \
	sigprocmask(SIG_BLOCK, &all, &old); \
	r = next args; \
	sigprocmask(SIG_SETMASK, &old, NULL); \
	return r; \
}

CLOCK_READ(int, clock_gettime, (clockid_t id, struct timespec *ts), (id, ts))
CLOCK_READ(int, gettimeofday, (struct timeval *restrict tv, void *restrict tz), (tv, tz))
CLOCK_READ(time_t, time, (time_t *t), (t))
EOC

# A preload library that makes fork() fail with EAGAIN, as at the process
# limit, while the file that FLAKE_FAIL_FORK names exists.
my $fork_shim_source = <<'EOC';
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

typedef pid_t (*fork_f) (void);

pid_t
fork(void)
{
	static fork_f real_fork;
	const char *switch_file = getenv("FLAKE_FAIL_FORK");

	if (real_fork == NULL)
		real_fork = (fork_f) dlsym(RTLD_NEXT, "fork");
	if (switch_file != NULL && access(switch_file, F_OK) == 0)
	{
		errno = EAGAIN;
		return -1;
	}
	return real_fork();
}
EOC

# A preload library that makes each open of the state file (flakeid.state)
# take FLAKE_SLOW_STATE_MS longer while the file that FLAKE_SLOW_STATE names
# exists, and with FLAKE_SLOW_CONF each open of postgresql.conf by the lease
# worker too (it reads the file when it takes a reload in).  The server opens the file for each write of a lease (and each
# read), so the lease worker then stays inside its write of a floor or a
# lease for that long, which makes the moments around it wide enough to
# hit every time.  (The test servers run with fsync = off, so an fsync is
# no place to wait.)
my $slow_state_shim_source = <<'EOC';
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

typedef int (*open_f) (const char *, int, ...);

/* Whether this process is the lease worker, by its title. */
static int
is_lease_worker(void)
{
	char		cmd[512];
	ssize_t		len;
	int			fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY);

	if (fd < 0)
		return 0;
	len = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	cmd[len] = '\0';
	for (ssize_t i = 0; i < len; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	return strstr(cmd, "flakeid lease worker") != NULL;
}

static void
maybe_sleep(const char *path)
{
	const char *switch_file = getenv("FLAKE_SLOW_STATE");
	const char *ms = getenv("FLAKE_SLOW_STATE_MS");
	const char *conf = getenv("FLAKE_SLOW_CONF");
	const char *name = strrchr(path, '/');

	name = name ? name + 1 : path;
	if (switch_file == NULL || getenv("FLAKE_SLOW_SYNC") != NULL ||
		access(switch_file, F_OK) != 0)
		return;
	if (strcmp(name, "flakeid.state") == 0 ||
		(conf != NULL && strcmp(name, "postgresql.conf") == 0 && is_lease_worker()))
		usleep((useconds_t) (ms ? atoi(ms) : 500) * 1000);
}

#define OPEN_SHIM(fname) \
int \
fname(const char *path, int flags, ...) \
{ \
	static open_f next; \
	mode_t		mode = 0; \
\
	if (next == NULL) \
		next = (open_f) dlsym(RTLD_NEXT, #fname); \
	if (flags & (O_CREAT | O_TMPFILE)) \
	{ \
		va_list		ap; \
\
		va_start(ap, flags); \
		mode = va_arg(ap, mode_t); \
		va_end(ap); \
	} \
	maybe_sleep(path); \
	return next(path, flags, mode); \
}

OPEN_SHIM(open)
OPEN_SHIM(open64)

typedef int (*sync_f) (int);

/* With FLAKE_SLOW_SYNC, every fsync and fdatasync is slow instead. */
#define SYNC_SHIM(fname) \
int \
fname(int fd) \
{ \
	static sync_f next; \
	const char *switch_file = getenv("FLAKE_SLOW_STATE"); \
	const char *ms = getenv("FLAKE_SLOW_STATE_MS"); \
\
	if (next == NULL) \
		next = (sync_f) dlsym(RTLD_NEXT, #fname); \
	if (switch_file != NULL && getenv("FLAKE_SLOW_SYNC") != NULL && \
		access(switch_file, F_OK) == 0) \
		usleep((useconds_t) (ms ? atoi(ms) : 500) * 1000); \
	return next(fd); \
}

SYNC_SHIM(fsync)
SYNC_SHIM(fdatasync)
EOC

my %built;

# Build a shim once per test script, with any further compiler flags;
# returns the path of the library.
sub build_shim
{
	my ($name, $source, @flags) = @_;
	return $built{$name} if defined $built{$name};

	my $dir = $PostgreSQL::Test::Utils::tmp_check;
	my $src = "$dir/$name.c";
	my $so = "$dir/${name}_$$.so";

	open my $fh, '>', $src or die "could not write $src: $!";
	print $fh $source;
	close $fh;
	my $cc = $ENV{CC} // 'cc';
	system($cc, '-shared', '-fPIC', '-O2', @flags, '-o', $so, $src, '-ldl') == 0
	  or die "could not build $so with $cc";
	$built{$name} = $so;
	return $so;
}

# The LD_PRELOAD value that fakes the clock: the shim and libfaketime.
sub faketime_preload
{
	my $lib = faketime_library() or die 'libfaketime is not installed';
	return build_shim('faketime_shim', $shim_source) . ":$lib";
}

# An LD_PRELOAD value with the libraries: after the sanitizer runtimes that
# test/run sanitize preloads, which must come first.
sub preload_after_sanitizers
{
	my ($libs) = @_;
	my $before = $ENV{LD_PRELOAD} // '';
	return $before eq '' ? $libs : "$before:$libs";
}

# The file whose existence makes a node started by start_fork_switch fail
# to fork.
sub fork_failing
{
	my ($node) = @_;
	return $node->basedir . '/fail_fork';
}

# Start the node so that its postmaster cannot fork while the file
# fork_failing($node) exists.
sub start_fork_switch
{
	my ($node, %params) = @_;
	local $ENV{LD_PRELOAD} = preload_after_sanitizers(build_shim('fork_shim', $fork_shim_source));
	local $ENV{FLAKE_FAIL_FORK} = fork_failing($node);
	return $node->start(%params);
}

# The file whose existence makes each open of the state file of a node
# started by start_slow_state_file slow.
sub slow_state_file
{
	my ($node) = @_;
	return $node->basedir . '/slow_state_file';
}

# Start the node so that each open of its state file, and so each write of
# a lease, takes $ms ms longer (default 500) while the file
# slow_state_file($node) exists; with slow_conf => 1, also the lease
# worker's read of postgresql.conf when it takes a reload in; with
# slow_sync => 1, each fsync and fdatasync of any file instead (the WAL's
# too, where the node runs with fsync = on), and no open.
sub start_slow_state_file
{
	my ($node, $ms, %params) = @_;
	my $conf = delete $params{slow_conf};
	my $sync = delete $params{slow_sync};
	local $ENV{LD_PRELOAD} =
	  preload_after_sanitizers(build_shim('slow_state_shim', $slow_state_shim_source));
	local $ENV{FLAKE_SLOW_STATE} = slow_state_file($node);
	local $ENV{FLAKE_SLOW_STATE_MS} = $ms // 500;
	local $ENV{FLAKE_SLOW_CONF} = '1' if $conf;
	local $ENV{FLAKE_SLOW_SYNC} = '1' if $sync;
	return $node->start(%params);
}

# Start the node under libfaketime, its clock $offset from the real one.
# Only the wall clock is faked: the monotonic clock, which latch waits and
# timeouts measure with, stays real.
sub start_faked
{
	my ($node, $offset, %params) = @_;

	set_clock($node, $offset);
	local $ENV{LD_PRELOAD} = preload_after_sanitizers(faketime_preload());
	local $ENV{FAKETIME_TIMESTAMP_FILE} = clock_file($node);
	local $ENV{FAKETIME_NO_CACHE} = '1';
	local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
	local $ENV{DONT_FAKE_MONOTONIC} = '1';
	local $ENV{NO_FAKE_STAT} = '1';
	delete local $ENV{FAKETIME};
	return $node->start(%params);
}

# The server's wall clock minus the real one, in seconds, as one query
# sees it.  $via is a node or a background psql session (whose round trip
# is shorter, so the figure is sharper).
sub server_clock_offset
{
	my ($via) = @_;
	my $sql = 'SELECT extract(epoch FROM clock_timestamp())';
	my $before = time();
	my $server =
	  $via->isa('PostgreSQL::Test::Cluster')
	  ? $via->safe_psql('postgres', $sql)
	  : $via->query_safe($sql);
	my $after = time();

	return $server - ($before + $after) / 2;
}

# Poll until the server's clock offset is within $tolerance seconds of
# $expected (at most $timeout seconds); returns the last offset measured.
sub wait_clock_offset
{
	my ($via, $expected, $tolerance, $timeout) = @_;
	my $deadline = time() + ($timeout // 10);
	my $offset;

	for (;;)
	{
		$offset = server_clock_offset($via);
		return $offset if abs($offset - $expected) <= $tolerance;
		return $offset if time() > $deadline;
		usleep(20_000);
	}
}

# The children of a process, from /proc.
sub children_of
{
	my ($pid) = @_;
	my @children;

	foreach my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh>;
		close $fh;
		next unless defined $line;
		# pid (comm) state ppid ...: comm may hold spaces and parentheses
		push @children, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) / && $2 == $pid;
	}
	return @children;
}

# The pids of the running server processes of a node whose command line
# (as ps shows it) matches $pattern.
sub server_processes
{
	my ($node, $pattern) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';

	open my $fh, '<', $pidfile or return ();
	my $pm = <$fh>;
	close $fh;
	chomp $pm;
	return grep {
		my $cmd = '';
		if (open my $c, '<', "/proc/$_/cmdline")
		{
			local $/;
			$cmd = <$c> // '';
			close $c;
		}
		$cmd =~ s/\0/ /g;
		process_alive($_) && $cmd =~ $pattern
	} children_of($pm);
}

# Whether a process still runs (a zombie has finished).
sub process_alive
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/stat" or return 0;
	my $line = <$fh>;
	close $fh;
	return 0 unless defined $line && $line =~ /^\d+ \(.*\) (\S+) /;
	return $1 ne 'Z' && $1 ne 'X';
}

# Crash the server: SIGKILL to the postmaster, whose pid postmaster.pid
# gives, and to each of its children, and wait until all of them are gone
# (at most 60 s).  postmaster.pid stays behind, as after a power cut.  A
# new postmaster refuses to start while the old pid exists, so wait for the
# dead postmaster to be reaped too; where nothing reaps orphans, remove the
# lock file of the dead server after 30 s.  Returns the number of processes
# killed.
sub crash_node
{
	my ($node) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';

	open my $fh, '<', $pidfile or die "could not open $pidfile: $!";
	my $pm = <$fh>;
	close $fh;
	chomp $pm;
	die "no pid in $pidfile" unless $pm =~ /^\d+$/;

	my @victims = ($pm, children_of($pm));
	note "killing postmaster $pm and its children @victims[1 .. $#victims]";
	kill 'KILL', $pm;
	kill 'KILL', @victims[1 .. $#victims] if @victims > 1;

	my $dead = wait_until(sub { !grep { process_alive($_) } @victims }, 60);
	die "processes of node " . $node->name . " survived SIGKILL" unless $dead;
	unless (wait_until(sub { !kill(0, $pm) }, 30))
	{
		note "postmaster $pm is a zombie nobody reaps: removing $pidfile";
		unlink $pidfile or die "could not remove $pidfile: $!";
	}

	# the node is down: PostgreSQL::Test::Cluster must not stop it again
	$node->{_pid} = undef;
	return scalar @victims;
}

# CRC-32C (Castagnoli), as PostgreSQL's pg_crc32c computes it.
sub crc32c
{
	my ($data) = @_;
	my $crc = 0xFFFFFFFF;
	foreach my $byte (unpack 'C*', $data)
	{
		$crc ^= $byte;
		$crc = ($crc & 1) ? (($crc >> 1) ^ 0x82F63B78) : ($crc >> 1) foreach 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}

# A copy of the lease as the state file holds it, 512 bytes, with a right
# CRC: for faults that no server writes, such as a record whose CRC is
# good but whose content is impossible.  The format is the one
# src/statefile.c writes (version 3: magic, version, serial, the lease of
# src/record.h, then the CRC of all that); a test that uses it checks
# first that the server reads such a record as it was meant.  Fields:
# serial, epoch_ms, node_bits, node_id, lease_end, and optionally
# timeline (default 1), reserved (0), version (3), and no_timeline (the
# layout of versions 1 and 2: no timeline or reserved field, the CRC at
# byte 40).
sub state_file_record
{
	my (%f) = @_;
	my $body = pack('V V Q< q< l< l< q<',
		0x464c4b31, $f{version} // 3, $f{serial}, $f{epoch_ms}, $f{node_bits},
		$f{node_id}, $f{lease_end});
	$body .= pack('V V', $f{timeline} // 1, $f{reserved} // 0) unless $f{no_timeline};
	my $record = $body . pack('V', crc32c($body));
	return $record . ("\0" x (512 - length $record));
}

# Write a node's state file from records by offset (0 => ..., 4096 => ...).
sub write_state_file
{
	my ($node, %records) = @_;
	my $file = $node->data_dir . '/flakeid.state';
	open my $fh, '>:raw', $file or die "could not write $file: $!";
	foreach my $offset (sort { $a <=> $b } keys %records)
	{
		seek $fh, $offset, 0;
		print $fh $records{$offset};
	}
	close $fh or die "could not write $file: $!";
	return;
}

1;
