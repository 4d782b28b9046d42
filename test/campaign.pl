# The fault campaign: rounds of concurrent clients against throwaway
# servers while faults are injected at random, and after every round a
# check of every promise against every ID that any statement returned.
# Run it through test/campaign or test/run campaign (they set up the
# private installation and the harness's environment):
#
#   test/campaign [--seed N] [--minutes M] [--clients N] [--no-preload]
#                  [--faults NAME,...]
#
# The seed is printed first; the same seed replays the same choices of
# faults, clients and statements (their timing is the machine's).  Four
# clients (--clients) and rounds of about 15 s by default; --faults runs
# only the faults named (a wrong name lists them); --no-preload (17 and
# later) runs without preloading, and so without the standbys' faults.
#
# Servers: a primary that archives its WAL and, preloaded, two streaming
# standbys, which synchronous_standby_names knows as a and b (their
# application_name); every server runs under one faked clock.
#
# Clients (forked processes, DBD::Pg) run sessions of random statements:
# nextflake() once or per row, nextflakes(n) with n from 1 to 20000,
# bursts of nextflakes() up to 4 million (their range counts as issued),
# prepared and not, cursors fetched in parts, INSERT ... RETURNING into a
# table whose key defaults to nextflake(); sessions with flakeid.cache =
# 64, with statement_timeout; and guests' sessions, of a role without
# superuser that brings flakeid settings of its own as connection options
# (a node id, an epoch, node bits, a bad epoch, the server's own layout)
# or none, and calls flakeid_status() too; half of the guests' sessions
# use parallel plans: debug_parallel_query (force_parallel_mode on 15),
# and parallel scans whose nextflake() runs in parallel workers.  Each
# statement's rows carry the server's clock before and after.  Each
# client writes what its statements returned (runs of consecutive IDs)
# and what they failed with; the driver's own statements (bursts, calls
# while the synchronous standbys change) are written the same way.
#
# Faults: kill -9 of a backend, of the lease worker, of the postmaster;
# fast and immediate restarts, the clock stepped while down; the clock
# stepped back and forward at runtime; node id reloads; the lease worker
# stopped (SIGSTOP) for up to 4 s; cancels; the state file unwritable;
# synchronous replication switched on (FIRST 1, FIRST 2 or ANY 1 of a and
# b) and off by reload; failover to the synchronous standby or to either
# one, the old primary stopped immediately before, new standbys made from
# the new primary; a standby's walreceiver stopped, with or without
# failover, and failover after synchronous replication was switched on
# while it was stopped; a synchronous standby lost (killed, stopped, or
# its walreceiver stopped with the connection full) while the other one,
# behind, takes its place, then both back in either order or failover;
# the list reloaded to make the standby that is behind count while the
# lease worker is ended (pg_terminate_backend or SIGTERM) or stopped; an
# asynchronous failover right after a burst, to a standby that missed it,
# sometimes with flakeid.max_lead lowered on every server just before;
# a base backup restored to the end of the archived WAL or to a point
# before a burst, promoted in place of the primary, which is stopped
# first; with an older flakeid at hand (FLAKE_OLD_INSTALL: 1.2, which
# test/run builds from the git history), a rolling upgrade in the
# README's order: the servers replaced by a primary of the older version
# and standbys of this one, a burst ahead of the clock on it (synchronous
# replication on, or off with the
# standby to be promoted mostly stalled, so that it misses the burst's
# lease), failover to a standby, then ALTER EXTENSION flakeid UPDATE (the
# final line of faults says when it could not be drawn).  Through every
# promotion and restore, sessions connected to the server in recovery call
# nextflakes() until it is promoted.
#
# Checks, cumulative over the whole campaign:
#   - no ID returned twice, across every restart, failover and restore:
#     each promotion stops the old primary first and every server has the
#     same clock, the two conditions of the promise after a promotion
#     (a clock set back shortly before a promotion breaks the second one
#     in time: see clock_for_promotion);
#   - each session's IDs strictly increasing (a parallel scan's rows come
#     in any order: its IDs above the session's earlier ones);
#   - an ID returned before a statement of a flakeid.cache = 1 session
#     started is below that statement's IDs (across sessions, restarts and
#     promotions);
#   - after a crash, restart, failover or restore, every ID of a session
#     connected after it is above every ID returned before it;
#   - while every standby that pg_stat_replication counts as synchronous
#     is stalled (FIRST: any of them; ANY: all), no statement that began
#     then returns an ID at or past the lease they have flushed (as their
#     own state files show it);
#   - every ID decodes to a node id the generator had during its statement
#     (after a reload, the old one until flakeid_status() shows the new one
#     adopted), and to a time no further than flakeid.max_lead ahead of
#     the server's clock at the statement's end, and (cache = 1) not
#     before its start;
#   - every error has a documented SQLSTATE (a guest's own calls may also
#     fail for its settings: 22023, 55P02; a session that waits through a
#     promotion holds its snapshot while the archive is replayed, which
#     PostgreSQL may cancel as a conflict with recovery: 40001);
#   - no guest reads flakeid_status();
#   - at the end of each round, a session with the server's settings
#     generates (or waits for a clock that was set back);
#   - the servers' logs show no crash other than the injected kills (a
#     child of restore_command that dies of a signal or hangs, as seen
#     only under libfaketime 0.9.12, is the harness's: the
#     restored server, which that ends, is started again and counted;
#     see restore_child_lost).

use strict;
use warnings;

use DBI;
use File::Path qw(make_path rmtree);
use FlakeFault;
use FlakeTest;
use Getopt::Long;
use IPC::Run;
use List::Util qw(max min shuffle sum);
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $seed = int(rand(1 << 30));
my $minutes = 3;
my $clients = 4;
my $preload = 1;
my $round_seconds = 15;
my $only_faults;
GetOptions(
	'seed=i'    => \$seed,
	'minutes=f' => \$minutes,
	'clients=i' => \$clients,
	'round=f'   => \$round_seconds,
	'faults=s'  => \$only_faults,
	'preload!'  => \$preload)
  or die "usage: test/campaign [--seed N] [--minutes M] [--clients N] [--no-preload] [--faults NAME,...]\n";

my $pg_major = (PostgreSQL::Test::Utils::run_command([ $ENV{PG_CONFIG} // 'pg_config', '--version' ]))[0];
$pg_major = $1 if $pg_major =~ /PostgreSQL (\d+)/;
plan skip_all => "PostgreSQL $pg_major generates only when preloaded"
  if !$preload && $pg_major < 17;
plan skip_all => 'libfaketime is not installed' unless faketime_library();

srand($seed);
diag(sprintf('campaign seed %d: %s min, %d clients, %s (replay: test/campaign --seed %d --minutes %s%s%s)',
		$seed, $minutes, $clients, $preload ? 'preloaded' : 'not preloaded',
		$seed, $minutes, $preload ? '' : ' --no-preload',
		defined $only_faults ? " --faults '$only_faults'" : ''));

my $max_lead_ms = 5000;
# a directory of its own: a campaign run before in the same tmp_check (the
# preloaded one before --no-preload) left its clients' files and stop file
my $work = sprintf('%s/campaign-%s-%d', $PostgreSQL::Test::Utils::tmp_check,
	$preload ? 'preload' : 'no-preload', $seed);
rmtree($work);
make_path($work);
my $target_file = "$work/target";
my $stop_file = "$work/stop";

# ---------------------------------------------------------------------
# Servers

# The WAL that fills a stalled standby's connection is kept for it, so
# that it catches up however it reconnects.
my $conf = qq{
synchronous_commit = remote_write
flakeid.max_lease_wait = '2s'
flakeid.max_clock_wait = '3s'
log_min_messages = warning
max_connections = 40
restart_after_crash = on
wal_keep_size = '512MB'
};

my $node_seq = 0;
my @all_nodes;         # every server made, for the log check
my $offset = 0.0;      # the servers' clock minus the real one, seconds
my $clock_high = 0;    # the latest time the servers' clock showed
my @clock_steps;       # [real time, seconds stepped] at runtime
my @node_history;      # [real time, node id]
my @barriers;          # { kind, start, end }
my @windows;           # { what, start, end, limit_ms }: see open_window
my $window;            # the window open now
my ($primary, $archive);
my %standby;           # a, b: the standbys, by their application_name
my %down;              # a standby stopped or killed by a fault
my %stalled;           # a standby's walreceiver while stopped (SIGSTOP)
my %flushed;           # the lease end (ms) that a stalled standby flushed
my $sync_list = '';    # the primary's synchronous_standby_names
my $sync_since;        # when synchronous replication was switched on
my $last_backup;       # the newest base backup of the primary
my $backup_seq = 0;
my %faults;

sub offset_text { return sprintf('%+.3f', $offset) }

# The servers' clock now, as seconds since 1970.
sub clock_reading { return time() + $offset }

sub new_node
{
	my ($kind) = @_;
	$node_seq++;
	return "c${node_seq}_$kind";
}

sub start_node
{
	my ($node) = @_;
	start_faked($node, offset_text(), fail_ok => 1) or return 0;
	return 1;
}

sub write_target
{
	open my $fh, '>', "$target_file.new" or die "cannot write $target_file.new: $!";
	printf $fh "%s %d\n", $primary->host, $primary->port;
	close $fh;
	rename "$target_file.new", $target_file or die "cannot rename $target_file: $!";
	return;
}

# A node's processes, one line each (pid, state, what it waits in, how long
# it has run, its command line), for a failure that a process stuck in a
# wait explains: its postmaster and every process below it.
sub process_tree
{
	my ($node) = @_;
	my $pid = $node->{_pid} // return '(the node has no postmaster)';
	my %below = ($pid => 1);
	my @lines;
	foreach my $line (`ps -e -o pid=,ppid=,stat=,wchan:24=,etime=,args=`)
	{
		my ($p, $pp) = $line =~ /^\s*(\d+)\s+(\d+)/ or next;
		next unless $below{$p} || $below{$pp};
		$below{$p} = 1;
		push @lines, $line;
	}
	return join '', @lines;
}

# Now and then a child that restore_command runs (sh, cp) under libfaketime
# 0.9.12, as PostgreSQL 18 and 19 have it here, dies of a signal (SIGBUS)
# or hangs at once; the startup process, and so the server, then ends with
# "could not restore file ... child process was terminated by signal".
# That child is the harness's, not flakeid's: a copy that hung for 20 s is
# killed, and a server that ended so is started again, as an operator
# would (unless $no_start: the caller does), and counted.  Returns the
# offset of the node's log read so far, which moves on when it did.
sub restore_child_lost
{
	my ($node, $log_from, $no_start) = @_;
	foreach my $line (split /\n/, process_tree($node))
	{
		my ($pid, $etime, $args) = $line =~ /^\s*(\d+)\s+\d+\s+\S+\s+\S+\s+(\S+)\s+(.*)$/ or next;
		next unless $args =~ /^(?:sh -c )?cp "?\Q$archive\E\//;
		my @t = reverse split /[-:]/, $etime;
		my $s = ($t[0] // 0) + 60 * ($t[1] // 0) + 3600 * ($t[2] // 0) + 86400 * ($t[3] // 0);
		next unless $s >= 20;
		note "restore_command's child $pid hung for $s s: killed";
		kill 'KILL', $pid;
		$faults{"restore_command's child hung, killed"}++;
	}
	return $log_from if -e $node->data_dir . '/postmaster.pid';
	return $log_from
	  unless $node->log_contains(qr/could not restore file .* from archive: child process was terminated by signal/,
		$log_from);
	my $end = -s $node->logfile;
	note 'restore_command\'s child died of a signal, so did the server: started again';
	$faults{"restore_command's child died of a signal, server started again"}++;
	start_node($node) unless $no_start;
	return $end;
}

# Run SQL on a node; returns its output, or undef when it failed.
sub admin
{
	my ($node, $sql, $timeout) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql, timeout => $timeout // 30);
	if ($ret != 0)
	{
		note "admin query on " . $node->name . " failed: $sql: $err";
		return undef;
	}
	return $out;
}

# Wait until a node accepts connections and generates (or says why not
# for a reason of the faults); returns the time it did.
sub wait_up
{
	my ($node, $timeout) = @_;
	my $deadline = time() + ($timeout // 60);
	while (time() < $deadline)
	{
		my ($ret, $out) = $node->psql('postgres', 'SELECT 1', timeout => 5);
		return time() if $ret == 0 && $out eq '1';
		usleep(50_000);
	}
	return undef;
}

sub current_node_id
{
	my ($node) = @_;
	return admin($node, 'SHOW flakeid.node_id');
}

# The standbys that run, by name.
sub running_standbys
{
	return grep { $standby{$_} && !$down{$_} } sort keys %standby;
}

# A base backup of the primary; returns its name.
sub take_backup
{
	$last_backup = 'b' . ++$backup_seq;
	$primary->backup($last_backup);
	return $last_backup;
}

# Two standbys of the primary, a and b, from one base backup.  Their
# postgresql.conf comes from the primary's, with its archive_command:
# every server archives into the archive of the last primary that
# new_primary made.
sub make_standbys
{
	my $backup = take_backup();
	foreach my $name ('a', 'b')
	{
		my $node = PostgreSQL::Test::Cluster->new(new_node("standby_$name"));
		$node->init_from_backup($primary, $backup, has_streaming => 1);
		$node->append_conf('postgresql.conf',
			sprintf("primary_conninfo = '%s application_name=%s'", $primary->connstr, $name));
		push @all_nodes, $node;
		start_node($node) or die "standby $name did not start";
		$standby{$name} = $node;
		delete $down{$name};
	}
	return;
}

# A server that is no longer part of the campaign: stopped (a stalled
# walreceiver goes on first, so that it can stop), its data removed.  Its
# log stays for the log check.
sub retire
{
	my ($node) = @_;
	$node->stop('immediate', fail_ok => 1);
	rmtree($node->data_dir);
	rmtree($node->backup_dir);
	return;
}

# A new primary, started with the campaign's tables, functions and guest
# role, in place of any other; its WAL goes into an archive of its own,
# which every server made from it shares.  $install: another installation
# of PostgreSQL and flakeid (FLAKE_OLD_INSTALL).
sub new_primary
{
	my ($node_id, $install) = @_;
	$primary = flake_node(new_node($install ? 'old_primary' : 'primary'),
		node_id => $node_id, streaming => 1, archiving => $preload, quiet => 1,
		preload => $preload, conf => $conf, install_path => $install);
	$archive = $primary->archive_dir;
	# a segment appears in the archive whole, or not at all: a restore must
	# not read one that an immediate stop cut short
	$primary->append_conf('postgresql.conf',
		qq{archive_command = 'cp "%p" "$archive/%f.part" && mv "$archive/%f.part" "$archive/%f"'})
	  if $preload;
	push @all_nodes, $primary;
	start_node($primary) or die $primary->name . ' did not start';
	$primary->safe_psql(
		'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE FUNCTION cms(timestamptz) RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE
		AS 'SELECT floor(extract(epoch FROM $1) * 1000)::bigint';
	CREATE TABLE camp (id flakeid PRIMARY KEY DEFAULT nextflake(), body text);
	CREATE TABLE filler (g int, pad text);
	CREATE TABLE par AS SELECT g FROM generate_series(1, 2000) g;
	ANALYZE par;
	CREATE ROLE camp_guest LOGIN;
	GRANT SELECT, INSERT ON camp TO camp_guest;
	GRANT SELECT ON par TO camp_guest;
	-- as an install of 1.0 or 1.1 leaves it: the function must refuse
	-- by itself
	GRANT EXECUTE ON FUNCTION flakeid_status() TO camp_guest});
	$primary->safe_psql('postgres', THROUGH_PROMOTION_SQL);
	return $primary;
}

new_primary(5);
push @node_history, [ time(), 5 ];
my $epoch_ms = $primary->safe_psql('postgres',
	q{SELECT cms(flakeid_timestamp('0'::flakeid))});
my $node_bits = $primary->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()');
my $node_shift = 22 - $node_bits;
my $node_mask = (1 << $node_bits) - 1;

# Parallel plans for guests: debug_parallel_query puts a whole statement
# into a worker, the cost settings make a parallel scan of par, whose
# nextflake() the workers call.
my $debug_parallel = $pg_major >= 16 ? 'debug_parallel_query' : 'force_parallel_mode';
my @parallel_settings = (
	'SET parallel_setup_cost = 0', 'SET parallel_tuple_cost = 0',
	'SET min_parallel_table_scan_size = 0', 'SET max_parallel_workers_per_gather = 2');
my $parallel_scan = 'SELECT nextflake()::bigint, cms(statement_timestamp()), cms(clock_timestamp())
	FROM par WHERE g <= %d';
{
	my ($ret, $out, $err) = psql_as($primary,
		join(";\n", @parallel_settings,
			'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' . sprintf($parallel_scan, 2000))
		  . ";\n",
		user => 'camp_guest');
	like($out, qr/Workers Launched: [1-9].*Parallel Seq Scan on public\.par.*\n\s*Output: .*nextflake\(\)/s,
		"a guest's parallel scan calls nextflake() in parallel workers")
	  or diag("$out\n$err");
	($ret, $out, $err) = psql_as($primary,
		"SET $debug_parallel = on;\nEXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT nextflake();",
		user => 'camp_guest');
	like($out, qr/Workers Launched: 1/, "a guest's call runs in a parallel worker under $debug_parallel")
	  or diag("$out\n$err");
}
make_standbys() if $preload;
write_target();

# ---------------------------------------------------------------------
# Clients

# Compress ascending IDs into runs of consecutive integers.
sub runs_of
{
	my ($ids) = @_;
	my @runs;
	foreach my $id (@$ids)
	{
		if (@runs && $runs[-1][0] + $runs[-1][1] == $id)
		{
			$runs[-1][1]++;
		}
		else
		{
			push @runs, [ $id, 1 ];
		}
	}
	return @runs;
}

# A guest's connection options: settings of the generator, foreign or the
# server's own layout (refused at the door when the library is loaded;
# otherwise a foreign one must fail the guest's own calls at most, never
# generation for others), or none.
my @guest_options = (
	'-c flakeid.node_id=7', '-c flakeid.epoch=2024-01-01',
	'-c flakeid.node_bits=16', '-c flakeid.epoch=garbage',
	"-c flakeid.node_bits=$node_bits", '-c flakeid.epoch=2020-01-01', '');

# The line of a session in a client's log: C sid cache timeout connected
# guest parallel.
sub log_session
{
	my ($log, $sid, $cache, $timeout, $connected, $guest, $parallel) = @_;
	printf $log "C %s %d %d %.6f %d %d\n", $sid, $cache, $timeout, $connected,
	  $guest ? 1 : 0, $parallel ? 1 : 0;
	$log->flush;
	return;
}

# Write what a statement returned or failed with into a client's log (a
# line S or E) and its IDs into the client's file of IDs, as runs of
# consecutive IDs (a burst: the range from its first to its last ID, which
# no other ID of this server may fall into).  $last refers to the
# session's last ID, for the check of its order; a parallel scan's rows
# come in any order, so its IDs are sorted first.
sub log_statement
{
	my ($log, $ids_out, $sid, $kind, $cache, $tb, $ta, $rows, $err, $state, $last, $burst) = @_;
	if (!defined $rows || defined $err)
	{
		$err //= 'unknown error';
		$state //= '';
		$err =~ s/\s+/ /g;
		printf $log "E %s %s %.6f %.6f %s %s\n", $sid, $kind, $tb, $ta,
		  ($state eq '' ? 'none' : $state), $err;
	}
	if ($rows && @$rows && defined $burst)
	{
		my ($lo, $hi, $count, $t0, $t1) = @{ $rows->[0] };
		my %nodes = map { (($_ >> $node_shift) & $node_mask) => 1 } ($lo, $hi);
		printf $log "S %s %s %d %.6f %.6f %d %d %d %d %d %d %d %s %d\n",
		  $sid, $kind, $cache, $tb, $ta, $t0, $t1, $count, $lo, $hi,
		  ($lo >> 22) + $epoch_ms, ($hi >> 22) + $epoch_ms,
		  join(',', sort { $a <=> $b } keys %nodes),
		  ($lo > $$last && $hi >= $lo && $count == $burst) ? 1 : 0;
		$$last = $hi;
		printf $ids_out "%d %d %s\n", $lo, $hi - $lo + 1, $sid;
	}
	elsif ($rows && @$rows)
	{
		my @ids = map { $_->[0] } @$rows;
		@ids = sort { $a <=> $b } @ids if $kind eq 'parallel';
		my ($t0, $t1) = (min(map { $_->[1] } @$rows), max(map { $_->[2] } @$rows));
		my $sorted = 1;
		foreach my $id (@ids)
		{
			$sorted = 0 unless $id > $$last;
			$$last = $id;
		}
		my %nodes = map { (($_ >> $node_shift) & $node_mask) => 1 } @ids;
		my ($lo, $hi) = (min(@ids), max(@ids));
		printf $log "S %s %s %d %.6f %.6f %d %d %d %d %d %d %d %s %d\n",
		  $sid, $kind, $cache, $tb, $ta, $t0, $t1, scalar(@ids), $lo, $hi,
		  ($lo >> 22) + $epoch_ms, ($hi >> 22) + $epoch_ms,
		  join(',', sort { $a <=> $b } keys %nodes), $sorted;
		print $ids_out join('', map { "$_->[0] $_->[1] $sid\n" } runs_of([ sort { $a <=> $b } @ids ]));
	}
	$ids_out->flush;
	$log->flush;
	return;
}

sub client_main
{
	my ($client, $client_seed) = @_;
	srand($client_seed);
	open my $log, '>>', "$work/client$client.log" or die;
	open my $ids_out, '>>', "$work/ids.$client" or die;
	my $session = 0;
	my $connect_failures = 0;
	my $guests_refused = 0;

	while (!-e $stop_file)
	{
		POSIX::_exit(1) if getppid() == 1;
		open my $tf, '<', $target_file or do { usleep(50_000); next };
		my $target = <$tf>;
		close $tf;
		my ($host, $port) = split ' ', $target;
		# one session in 5 is a guest's: a role without superuser that
		# brings flakeid settings of its own as connection options, or
		# (half of them) none
		my $guest = rand() >= 0.2 ? undef
		  : rand() < 0.5 ? '' : $guest_options[ int(rand(@guest_options)) ];
		local $ENV{PGOPTIONS} = $guest // '';
		my $dbh = DBI->connect(
			"dbi:Pg:dbname=postgres;host=$host;port=$port;application_name=campaign",
			defined $guest ? 'camp_guest' : '', '',
			{ AutoCommit => 1, RaiseError => 0, PrintError => 0 });
		unless ($dbh)
		{
			# a setting that the server's configuration fixes refuses the
			# guest at the door
			if (defined $guest && ($DBI::errstr // '') =~ /parameter "flakeid\.\w+" cannot be changed/)
			{
				$guests_refused++;
			}
			else { $connect_failures++ }
			usleep(20_000 + int(rand(50_000)));
			next;
		}
		my $connected = time();
		$session++;
		my $sid = "$client.$session";
		my $cache = !defined $guest && rand() < 0.3 ? 64 : 1;
		my $timeout = rand() < 0.3 ? 100 + int(rand(2000)) : 0;
		# half of the guests' sessions plan in parallel: everything in a
		# worker now and then, and parallel scans of par
		my $parallel = defined $guest && rand() < 0.5;
		$dbh->do("SET flakeid.cache = $cache") if $cache > 1;
		$dbh->do("SET statement_timeout = $timeout") if $timeout;
		if ($parallel)
		{
			$dbh->do("SET $debug_parallel = on") if rand() < 0.5;
			$dbh->do($_) foreach @parallel_settings;
		}
		log_session($log, $sid, $cache, $timeout, $connected, defined $guest, $parallel);
		my $last = -1;
		my $prepared;
		my $statements = 1 + int(rand(defined $guest ? 20 : 300));

		for (my $i = 0; $i < $statements && !-e $stop_file; $i++)
		{
			my $r = rand();
			my $n = rand() < 0.7 ? 1 + int(rand(20))
			  : rand() < 0.85 ? 20 + int(rand(500))
			  : 500 + int(rand(19500));
			my ($kind, $rows, $err, $state, $burst);
			my $tb = time();
			if (defined $guest && $r < 0.2)
			{
				# flakeid_status() is pg_monitor's only
				$kind = 'status';
				my $seen = $dbh->selectall_arrayref('SELECT last_id FROM flakeid_status()');
				printf $log "V %s flakeid_status() answered a role without pg_monitor\n", $sid
				  if $seen;
				my $refused = !$seen && ($dbh->state // '') eq '42501';
				printf $log "P %s\n", $sid if $refused;
				next if $seen || $refused;
			}
			elsif ($parallel && $r < 0.45)
			{
				# nextflake() in the workers of a parallel scan
				$kind = 'parallel';
				$rows = $dbh->selectall_arrayref(sprintf($parallel_scan, 1 + int(rand(2000))),
					{ pg_server_prepare => 0 });
			}
			elsif ($r < 0.003)
			{
				# a burst of up to 1 s of IDs: its reservation is recorded
				# as the range from its first to its last ID
				$kind = 'burst';
				$burst = 500_000 + int(rand(3_500_000));
				$rows = $dbh->selectall_arrayref(
					"SELECT min(x)::bigint, max(x)::bigint, count(*),
						cms(statement_timestamp()), cms(clock_timestamp())
					 FROM nextflakes($burst) x", { pg_server_prepare => 0 });
			}
			elsif ($r < 0.25)
			{
				$kind = 'one';
				$rows = $dbh->selectall_arrayref(
					'SELECT nextflake()::bigint, cms(statement_timestamp()), cms(clock_timestamp())',
					{ pg_server_prepare => 0 });
			}
			elsif ($r < 0.35)
			{
				$kind = 'rows';
				$n = min($n, 500);
				$rows = $dbh->selectall_arrayref(
					"SELECT nextflake()::bigint, cms(statement_timestamp()), cms(clock_timestamp())
					 FROM generate_series(1, $n)", { pg_server_prepare => 0 });
			}
			elsif ($r < 0.55)
			{
				$kind = 'batch';
				$rows = $dbh->selectall_arrayref(
					"SELECT x::bigint, cms(statement_timestamp()), cms(clock_timestamp())
					 FROM nextflakes($n) x", { pg_server_prepare => 0 });
			}
			elsif ($r < 0.75)
			{
				$kind = 'prepared';
				$prepared //= $dbh->prepare(
					'SELECT x::bigint, cms(statement_timestamp()), cms(clock_timestamp())
					 FROM nextflakes($1::int) x', { pg_server_prepare => 1 });
				$rows = $prepared->execute($n)
				  ? $prepared->fetchall_arrayref : undef;
			}
			elsif ($r < 0.9)
			{
				$kind = 'insert';
				$n = min($n, 200);
				$rows = $dbh->selectall_arrayref(
					"INSERT INTO camp (body) SELECT 'c' FROM generate_series(1, $n)
					 RETURNING id::bigint, cms(statement_timestamp()), cms(clock_timestamp())",
					{ pg_server_prepare => 0 });
			}
			else
			{
				# a cursor fetched in parts: what earlier FETCHes returned
				# counts even when a later one fails
				$kind = 'cursor';
				$rows = [];
				my $ok = $dbh->begin_work
				  && $dbh->do("DECLARE c NO SCROLL CURSOR FOR
					SELECT x::bigint, cms(statement_timestamp()), cms(clock_timestamp())
					FROM nextflakes($n) x");
				while ($ok)
				{
					my $part = $dbh->selectall_arrayref('FETCH 100 FROM c');
					if (!$part) { $ok = 0; last }
					last unless @$part;
					push @$rows, @$part;
				}
				if ($ok)
				{
					$ok = $dbh->commit;
				}
				else
				{
					$err = $dbh->errstr;
					$state = $dbh->state;
					$dbh->rollback;
				}
				$rows = undef if !$ok && !@$rows;
				$err //= $dbh->errstr unless $ok;
				$state //= $dbh->state unless $ok;
			}
			my $ta = time();
			if (!defined $rows || defined $err)
			{
				$err //= $dbh->errstr // 'unknown error';
				$state //= $dbh->state // '';
			}
			log_statement($log, $ids_out, $sid, $kind, $cache, $tb, $ta, $rows, $err, $state,
				\$last, $burst);
			last unless $dbh->ping;
		}
		undef $prepared;
		$dbh->disconnect;
	}
	printf $log "F %d %d\n", $connect_failures, $guests_refused;
	close $log;
	close $ids_out;
	# no END block of the harness in a client: they are the parent's
	POSIX::_exit(0);
}

my @children;
for my $c (1 .. $clients)
{
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		client_main($c, $seed * 100 + $c);
	}
	push @children, $pid;
}

# The driver's own statements, written as client 0's, each in a session of
# its own.
open my $driver_log, '>>', "$work/client0.log" or die;
open my $driver_ids, '>>', "$work/ids.0" or die;
my $driver_session = 0;

# A statement of the driver on the primary, with a statement timeout (ms);
# returns its rows, or undef.  $burst: the count of a burst's range.
sub driver_query
{
	my ($kind, $sql, $timeout, $burst) = @_;
	my $dbh = DBI->connect(
		sprintf('dbi:Pg:dbname=postgres;host=%s;port=%d', $primary->host, $primary->port),
		'', '', { AutoCommit => 1, RaiseError => 0, PrintError => 0 })
	  or return undef;
	my $sid = '0.' . ++$driver_session;
	log_session($driver_log, $sid, 1, $timeout, time(), 0, 0);
	$dbh->do("SET statement_timeout = $timeout");
	my $last = -1;
	my $tb = time();
	my $rows = $dbh->selectall_arrayref($sql, { pg_server_prepare => 0 });
	my $ta = time();
	log_statement($driver_log, $driver_ids, $sid, $kind, 1, $tb, $ta, $rows,
		$rows ? undef : $dbh->errstr // 'unknown error', $dbh->state, \$last, $burst);
	$dbh->disconnect;
	return $rows;
}

# ---------------------------------------------------------------------
# Faults

sub campaign_backends
{
	my ($node, $active) = @_;
	my $out = admin($node,
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'campaign'"
		  . ($active ? " AND state = 'active'" : ''), 10)
	  // '';
	return grep { /^\d+$/ } split /\n/, $out;
}

sub lease_worker
{
	my ($node) = @_;
	my ($pid) = server_processes($node, qr/flakeid lease worker/);
	return $pid;
}

# After a barrier (a restart, crash, failover or restore), IDs above every
# ID returned before it.
sub barrier
{
	my ($kind, $start, $end) = @_;
	push @barriers, { kind => $kind, start => $start, end => $end // time() };
	return;
}

# Step the clock of every server by $step seconds (within 60 s of the real
# one); $down: while the primary is down, which the check of the IDs'
# times need not know of.
sub move_clock
{
	my ($step, $down) = @_;
	$clock_high = max($clock_high, clock_reading());
	my $was = $offset;
	$offset = max(min($offset + $step, 60), -60);
	set_clock($_, offset_text()) foreach $primary, values %standby;
	push @clock_steps, [ time(), $offset - $was ] unless $down;
	return $offset - $was;
}

sub step_clock
{
	my ($down) = @_;
	# back as often as forward, half of the steps back past flakeid.max_lead
	my $step = rand() < 0.5 ? -(0.1 + (rand() < 0.5 ? rand(3) : 3 + rand(5))) : 0.1 + rand(10);
	return sprintf('%+.1f s', move_clock($step, $down));
}

# The promise after a promotion holds while the clocks agree within
# flakeid.max_clock_skew (1 s): the new primary continues above its clock
# plus flakeid.max_lead, a lease and that allowance, and the old primary
# returned no ID further ahead of its clock than flakeid.max_lead and a
# lease.  The servers here share one clock, but a clock set back before a
# promotion is a disagreement in time all the same: the old primary
# returned IDs ahead of a clock that read later than the new primary's
# reads at the promotion, and where the new primary lacks their leases (a
# restore to the end of the archive after an immediate stop, whose last
# segment was never archived) nothing is promised for them.  So before
# each promotion a clock more than 0.5 s behind the latest time it showed
# is stepped forward to it.
sub clock_for_promotion
{
	my $behind = $clock_high - clock_reading();
	return '' if $behind <= 0.5;
	move_clock($behind, 0);
	$faults{'clock caught up before a promotion'}++;
	return sprintf('clock %+.1f s first, ', $behind);
}

sub restart
{
	my ($mode) = @_;
	my $start = time();
	$primary->stop($mode);
	my $stepped = rand() < 0.4 ? ', clock ' . step_clock(1) : '';
	start_node($primary) or return "the primary did not start again";
	my $up = wait_up($primary) or return "the primary did not come up";
	barrier("restart $mode", $start, $up);
	return "$mode$stepped";
}

# synchronous_standby_names of the primary, by reload ($before: SQL to run
# first, in the same session).
sub set_sync_list
{
	my ($list, $before) = @_;
	defined admin($primary, ($before // '')
		  . "ALTER SYSTEM SET synchronous_standby_names = '$list';\nSELECT pg_reload_conf();")
	  or return 0;
	$sync_since = $list eq '' ? undef : $sync_since // time();
	$sync_list = $list;
	return 1;
}

# A list that names both standbys: FIRST 1, FIRST 2 or ANY 1, in either
# order.
sub random_sync_list
{
	my @names = shuffle('a', 'b');
	return sprintf('%s (%s, %s)', ('FIRST 1', 'FIRST 2', 'ANY 1')[ int(rand(3)) ], @names);
}

# pg_stat_replication's sync_state of each standby connected.
sub sync_states
{
	my $out = admin($primary, 'SELECT application_name, sync_state FROM pg_stat_replication', 10) // '';
	return { map { split /\|/ } grep { /\|/ } split /\n/, $out };
}

sub states_text
{
	my ($states) = @_;
	return join(' ', map { "$_=$states->{$_}" } sort keys %$states) || 'none';
}

# Wait (at most $timeout s) until pg_stat_replication shows what $want (a
# code ref, given the states) wants; returns the states.
sub wait_states
{
	my ($want, $timeout) = @_;
	my $deadline = time() + $timeout;
	my $states = sync_states();
	until ($want->($states) || time() > $deadline)
	{
		usleep(100_000);
		$states = sync_states();
	}
	return $states;
}

# Whether a standby is counted as synchronous in these states.
sub counted
{
	my ($states, $name) = @_;
	return ($states->{$name} // '') =~ /^(sync|quorum)$/;
}

# The lease end (ms) that the standbys counted as synchronous now can have
# flushed, as pg_stat_replication shows them: FIRST n (sync), every one
# of them must have a lease, so the least of their bounds; ANY n
# (quorum), any one may, so the greatest.  Only a stalled standby has a
# bound.  undef when nothing bounds it.
sub confirm_limit
{
	my $states = sync_states();
	my @sync = grep { $states->{$_} eq 'sync' } keys %$states;
	my @quorum = grep { $states->{$_} eq 'quorum' } keys %$states;
	if (@sync)
	{
		my @bounds = grep { defined } map { $flushed{$_} } @sync;
		return @bounds ? min(@bounds) : undef;
	}
	return undef if !@quorum || grep { !defined $flushed{$_} } @quorum;
	return max(map { $flushed{$_} } @quorum);
}

# A window of the check that no statement returns an ID past what the
# synchronous standbys have: open from now while confirm_limit() bounds
# the lease, until close_window(), which every change of the standbys
# calls first.
sub open_window
{
	my ($what) = @_;
	close_window();
	my $limit = confirm_limit();
	return '' unless defined $limit;
	$window = { what => $what, start => time(), limit_ms => $limit };
	return sprintf(' (checked: their lease ends %+d ms from the clock)', $limit - clock_reading() * 1000);
}

sub close_window
{
	return unless $window;
	$window->{end} = time();
	push @windows, $window;
	undef $window;
	return;
}

# Fill a stalled standby's replication connection, so that what follows
# stays on the primary (at failover the standby reads what was sent);
# returns whether it is full.  Nothing waits for the stalled standby.
sub fill_connection
{
	my ($name) = @_;
	my $filled = defined admin($primary, "SET synchronous_commit = local;
		INSERT INTO filler SELECT g, repeat('x', 200) FROM generate_series(1, 300000) g");
	for (my $i = 0; $filled && $i < 100; $i++)
	{
		my $lag = admin($primary, "SELECT pg_current_wal_lsn() - sent_lsn > 8 * 1024 * 1024
			FROM pg_stat_replication WHERE application_name = '$name'");
		last if defined $lag && $lag eq 't';
		$filled = 0 if $i == 99 || !defined $lag || $lag eq '';
		usleep(200_000);
	}
	admin($primary, "SET synchronous_commit = local;\nTRUNCATE filler");
	return $filled;
}

# The lease end (ms since 1970) in a standby's state file, once it has
# replayed what its walreceiver flushed: what the standby can confirm
# while its walreceiver is stopped.
sub flushed_lease_ms
{
	my ($node) = @_;
	my $replayed = '';
	for (my $i = 0; $i < 30; $i++)
	{
		my $now = admin($node,
			'SELECT pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()', 5)
		  // last;
		my ($done, $lsn) = split /\|/, $now;
		# caught up, or stopped within a record that never came whole
		last if $done eq 't' || $lsn eq $replayed;
		$replayed = $lsn;
		usleep(100_000);
	}
	my $ms = admin($node, 'SELECT cms(max(lease_end)) FROM flakeid_state_file() WHERE valid', 5);
	return defined $ms && $ms =~ /^\d+$/ ? $ms : undef;
}

# Stop a standby's walreceiver (SIGSTOP), with $fill its connection filled
# too; the lease end it has flushed is then the bound of what it can
# confirm.  Returns whether it is stalled.
sub stall
{
	my ($name, $fill) = @_;
	return 0 if !$standby{$name} || $down{$name} || $stalled{$name};
	my ($pid) = server_processes($standby{$name}, qr/walreceiver/);
	return 0 unless $pid;
	close_window();
	kill 'STOP', $pid;
	$stalled{$name} = $pid;
	note "standby $name: its connection could not be filled"
	  if $fill && !fill_connection($name);
	$flushed{$name} = flushed_lease_ms($standby{$name});
	note "standby $name: its lease end could not be read" unless defined $flushed{$name};
	return 1;
}

# The standby's walreceiver goes on.
sub resume
{
	my ($name) = @_;
	close_window();
	kill 'CONT', $stalled{$name} if $stalled{$name};
	delete $stalled{$name};
	delete $flushed{$name};
	return;
}

# A standby stopped or killed by a fault starts again; a stalled one goes
# on.
sub bring_back
{
	my ($name) = @_;
	close_window();
	resume($name) if $stalled{$name};
	if ($down{$name})
	{
		start_node($standby{$name}) or return "standby $name did not start again";
		delete $down{$name};
	}
	return "$name back";
}

# The driver's calls for IDs during $seconds, each with a statement
# timeout of 500 ms; says how many returned.
sub driver_calls
{
	my ($seconds) = @_;
	my $until = time() + $seconds;
	my ($calls, $returned) = (0, 0);
	while (time() < $until)
	{
		$calls++;
		my $rows = driver_query('call',
			'SELECT x::bigint, cms(statement_timestamp()), cms(clock_timestamp()) FROM nextflakes(1000) x',
			500);
		$returned++ if $rows && @$rows;
	}
	return "$returned of $calls calls returned";
}

# A burst of 4 million IDs (about 1 s of them) by the driver, within
# $timeout ms (default 1 s); the whole range it returned counts.
sub driver_burst
{
	my ($timeout) = @_;
	my $rows = driver_query('burst',
		'SELECT min(x)::bigint, max(x)::bigint, count(*), cms(statement_timestamp()), cms(clock_timestamp())
		 FROM nextflakes(4000000) x', $timeout // 1000, 4000000);
	return 'timed out' unless $rows && @$rows;
	$faults{'driver bursts returned'}++;
	return 'returned';
}

# A reservation that puts the IDs about 4 s ahead of the clock (its lease
# with them), of which only the first ID is returned.
sub driver_far_burst
{
	my $n = min((1 << $node_shift) * ($max_lead_ms - 1000), 2_000_000_000);
	my $rows = driver_query('far_burst',
		"SELECT x::bigint, cms(statement_timestamp()), cms(clock_timestamp())
		 FROM (SELECT nextflakes($n) AS x LIMIT 1) s", 3000);
	return 'failed' unless $rows && @$rows;
	$faults{'driver bursts returned'}++;
	return 'returned';
}

# Sessions connected to a server in recovery that call through its
# promotion (a pooler's, or a multi-host connection string's): each runs
# through_promotion() in one statement, begun before the end of recovery.
sub promotion_sessions
{
	my ($node) = @_;
	my @sessions;
	foreach (1 .. 2 + int(rand(3)))
	{
		my %s = (out => '', err => '', sid => '0.' . ++$driver_session, connected => time());
		$s{h} = IPC::Run::start(
			[
				'psql', '-X', '-A', '-t', '-F', ' ', '-v', 'VERBOSITY=verbose',
				'-d', $node->connstr('postgres') . ' application_name=campaign_promotion',
				'-c', 'SELECT x, t0, t1 FROM through_promotion(8)'
			],
			'>', \$s{out}, '2>', \$s{err}, IPC::Run::timeout(180));
		push @sessions, \%s;
	}
	$faults{'sessions connected through a promotion'} += @sessions;
	return @sessions;
}

# Wait for those sessions, and log what each returned or failed with.
sub promotion_sessions_done
{
	foreach my $s (@_)
	{
		eval { IPC::Run::finish($s->{h}); };
		my $ta = time();
		my @rows = map { [ split / / ] } grep { /^\d+ \d+ \d+$/ } split /\n/, $s->{out};
		log_session($driver_log, $s->{sid}, 1, 180000, $s->{connected}, 0, 0);
		my $last = -1;
		my $ok = @rows && $s->{err} !~ /ERROR/;
		log_statement($driver_log, $driver_ids, $s->{sid}, 'through_promotion', 1, $s->{connected}, $ta,
			$ok ? \@rows : undef, $ok ? undef : $s->{err}, sqlstate_of($s->{err}), \$last);
	}
	return;
}

# flakeid.max_lead lowered to 1 s on every server by a reload, after IDs
# ran up to the campaign's flakeid.max_lead ahead of the clock: the floor
# of a promotion soon after keeps counting with the old value.  The new
# primary gets the campaign's value back once promoted.
my $lead_lowered = 0;
sub lower_max_lead
{
	foreach my $node ($primary, map { $standby{$_} } grep { !$down{$_} } keys %standby)
	{
		$node->append_conf('postgresql.conf', "flakeid.max_lead = '1s'");
		$node->reload;
	}
	usleep(200_000);
	$lead_lowered = 1;
	$faults{'flakeid.max_lead lowered before a failover'}++;
	return 1;
}

# Promotion done: the new primary serves, without synchronous standbys
# (its base backup's list names none that exists yet); the old primary and
# the standbys are retired, two new standbys made from it.
sub promoted
{
	my ($new, $old, $start, $what) = @_;
	$primary = $new;
	wait_up($primary) or return "$what did not come up";
	if ($lead_lowered)
	{
		$primary->append_conf('postgresql.conf', "flakeid.max_lead = '${max_lead_ms}ms'");
		$primary->reload;
		$lead_lowered = 0;
	}
	set_sync_list('');
	# the promoted server has the node id of its base backup's configuration
	my $node = current_node_id($primary);
	push @node_history, [ $start, $node ] if defined $node;
	write_target();
	barrier($what, $start, time());
	retire($old);
	retire($_) foreach values %standby;
	%standby = %down = %stalled = %flushed = ();
	make_standbys();
	return undef;
}

# Failover: the primary stopped immediately (the fencing a failover tool
# does), then a standby promoted.  $target names it; 'sync' asks for the
# standby that is synchronous now, as a failover tool picks it (FIRST: one
# that pg_stat_replication shows as sync; ANY: of the quorum, the one with
# the most WAL once the primary is down); undef for either.  A stalled
# standby gets what reached it first.
sub failover
{
	my ($target) = @_;
	my @up = running_standbys();
	return 'no standby' unless @up;
	my $states = sync_states();
	my @sync = grep { ($states->{$_} // '') eq 'sync' } @up;
	my @quorum = grep { ($states->{$_} // '') eq 'quorum' } @up;
	my $clock = clock_for_promotion();
	close_window();
	my $start = time();
	$primary->stop('immediate');
	kill 'CONT', $_ foreach values %stalled;
	if (defined $target && $target eq 'sync')
	{
		$target = @sync ? $sync[ int(rand(@sync)) ] : undef;
		if (@quorum)
		{
			usleep(300_000);
			my %lsn = map { $_ => admin($standby{$_}, 'SELECT pg_last_wal_receive_lsn() - \'0/0\'', 5) // 0 } @quorum;
			($target) = sort { $lsn{$b} <=> $lsn{$a} } @quorum;
		}
	}
	$target = $up[ int(rand(@up)) ] unless defined $target && grep { $_ eq $target } @up;
	my $state = $states->{$target} // 'not connected';
	$faults{"promotions of a standby ($state)"}++;
	my $new = $standby{$target};
	delete $standby{$target};
	my @through = promotion_sessions($new);
	usleep(100_000);
	$new->promote;
	my $what = "failover to $target ($state)";
	my $failed = promoted($new, $primary, $start, $what);
	promotion_sessions_done(@through);
	return $failed // "$clock$target, $state";
}

# Stop a standby ($how: killed, fast, immediate) or stall it with its
# connection full (stalled).
sub standby_out
{
	my ($name, $how) = @_;
	close_window();
	if ($how eq 'stalled')
	{
		return stall($name, 1);
	}
	if ($how eq 'killed')
	{
		crash_node($standby{$name});
	}
	else
	{
		$standby{$name}->stop($how);
	}
	$down{$name} = 1;
	return 1;
}

# The list reloaded so that a standby that is behind (its walreceiver
# stopped, its connection full) counts, after a burst that the other one
# confirmed, while the lease worker is ended (pg_terminate_backend() or
# SIGTERM) or stopped (SIGSTOP): from FIRST 1 naming the other first to
# FIRST 1 naming it first, or from the other alone to it alone.  With
# $method, the number or the method of the
# synchronous standbys changes too: from ANY 1 or FIRST 1 to FIRST 2, or
# from ANY 1 to FIRST 1.  Then failover, to the standby synchronous now or
# to either, or the standby behind goes on.
sub worker_gone_reload
{
	my ($method) = @_;
	my @up = running_standbys();
	return 'needs two standbys' unless @up == 2;
	my ($now, $behind) = shuffle(@up);
	my ($from, $to) = ("FIRST 1 ($now, $behind)", "FIRST 1 ($behind, $now)");
	($from, $to) = ($now, $behind) if rand() < 0.3;
	if ($method)
	{
		$from = sprintf('%s (%s, %s)', rand() < 0.5 ? 'FIRST 1' : 'ANY 1', $now, $behind);
		$to = $from =~ /^ANY/ && rand() < 0.5 ? "FIRST 1 ($behind, $now)" : "FIRST 2 ($now, $behind)";
	}
	set_sync_list($from) or return 'failed';
	wait_states(sub { counted($_[0], $now) && exists $_[0]{$behind} }, 10);
	stall($behind, 1) or return 'no walreceiver';
	my $burst = driver_far_burst();
	my $worker = lease_worker($primary) or return 'no lease worker';
	my $how = ('pg_terminate_backend', 'SIGTERM', 'SIGSTOP')[ int(rand(3)) ];
	if ($how eq 'pg_terminate_backend')
	{
		set_sync_list($to, "SELECT pg_terminate_backend($worker);\n") or return 'failed';
	}
	else
	{
		kill substr($how, 3), $worker;
		set_sync_list($to) or return 'failed';
	}
	my $states = wait_states(sub { counted($_[0], $behind) }, 10);
	my $checked = open_window("$from to $to, lease worker $how, $behind stalled");
	my $calls = driver_calls(0.8 + rand(1));
	kill 'CONT', $worker if $how eq 'SIGSTOP';
	$calls .= ', then ' . driver_calls(0.5 + rand(1));
	my $what = sprintf('%s, %s stalled, burst %s, %s, to %s: %s, %s%s', $from, $behind, $burst, $how, $to,
		states_text($states), $calls, $checked);
	return "$what, then failover: " . failover(rand() < 0.7 ? 'sync' : undef)
	  if rand() < 0.5;
	resume($behind);
	return $what;
}

# The time (ms since 1970) of the highest ID that any statement returned.
sub highest_id_ms
{
	my $high = -1;
	foreach my $c (0 .. $clients)
	{
		foreach (read_lines("$work/ids.$c"))
		{
			my ($start, $len) = split;
			$high = max($high, $start + $len - 1);
		}
	}
	return $high < 0 ? undef : ($high >> 22) + $epoch_ms;
}

# A rolling upgrade in the order the README gives, the standbys first: the
# servers replaced by a primary of the older flakeid (FLAKE_OLD_INSTALL,
# with the node id of the one it replaces) and two standbys of this
# version made from it.  The clients generate on the old primary, the
# driver runs a burst (synchronous replication on, or off with the standby
# to be promoted mostly stalled, so that it misses the burst's lease),
# then failover to a standby, the old primary stopped immediately first,
# and ALTER EXTENSION flakeid UPDATE on the promoted server.  The old
# primary starts afresh: its clock first reads past every ID returned.
sub rolling_upgrade
{
	my $node_id = current_node_id($primary) // 5;
	close_window();
	kill 'CONT', $_ foreach values %stalled;
	my $start = time();
	retire($_) foreach $primary, values %standby;
	%standby = %down = %stalled = %flushed = ();
	($sync_list, $sync_since, $lead_lowered) = ('', undef, 0);
	my $old = new_primary($node_id, $ENV{FLAKE_OLD_INSTALL});
	push @node_history, [ $start, $node_id ];
	# before the clients come, its clock goes forward past every ID they
	# wrote (the old primary's setup took seconds), or time passes
	my $high_ms = highest_id_ms() // 0;
	my $behind = ($high_ms + 100) / 1000 - clock_reading();
	my $clock = $behind > 0 ? sprintf('clock %+.1f s first, ', move_clock($behind, 1)) : '';
	usleep(50_000) while clock_reading() * 1000 <= $high_ms + 100;
	my $layout = admin($primary,
		q{SELECT extversion || ' ' || cms(flakeid_timestamp('0'::flakeid)) || ' ' || node_bits
		FROM pg_extension, flakeid_status() WHERE extname = 'flakeid'}) // '';
	is($layout, "$ENV{FLAKE_OLD_VERSION} $epoch_ms $node_bits",
		"the old primary runs flakeid $ENV{FLAKE_OLD_VERSION}, with the campaign's epoch and node bits")
	  or return "the old primary: $layout";
	make_standbys();
	write_target();
	barrier('servers replaced by an older flakeid', $start, time());
	foreach my $name ('a', 'b')
	{
		my $said = wait_until(sub {
			$standby{$name}->log_contains(
				qr/flakeid continues above the old primary's IDs if this server is promoted/)
		}, 30);
		ok($said, "standby $name of the old primary runs this version, which says it continues above")
		  or return "standby $name did not say it continues above";
	}
	my ($target, $behind_standby, $sync) = ('sync', 0, '');
	if (rand() < 0.6)
	{
		$target = (running_standbys())[ int(rand(2)) ];
		$behind_standby = rand() < 0.7 && stall($target, 1);
	}
	else
	{
		$sync = random_sync_list();
		set_sync_list($sync) or return 'failed';
		wait_states(sub { grep { /^(sync|quorum)$/ } values %{ $_[0] } }, 10);
	}
	usleep((1 + rand(3)) * 1e6);
	my $burst = rand() < 0.5 ? 'of 4 million ' . driver_burst(5000) : '4 s ahead ' . driver_far_burst();
	usleep(rand(1) * 1e6);
	my $what = sprintf('%s%s, %sburst %s, then failover: %s', $clock, $old->name,
		$sync ne '' ? "$sync, " : $behind_standby ? "$target behind, " : '', $burst, failover($target));
	my $updated = admin($primary, q{ALTER EXTENSION flakeid UPDATE;
		SELECT extversion = default_version FROM pg_extension JOIN pg_available_extensions ON name = extname
		WHERE extname = 'flakeid'});
	is($updated, 't', 'the promoted server updates the extension to this version')
	  or return "$what, not updated";
	return "$what, updated";
}

my %fault_subs;
%fault_subs = (
	'kill backend' => sub {
		my @pids = shuffle(campaign_backends($primary, 0));
		return 'no backend' unless @pids;
		my $start = time();
		kill 'KILL', $pids[0];
		usleep(200_000);
		my $up = wait_up($primary) or return 'the server did not come back';
		barrier('kill backend', $start, $up);
		return "pid $pids[0]";
	},
	'kill postmaster' => sub {
		my $start = time();
		crash_node($primary);
		my $stepped = rand() < 0.4 ? ', clock ' . step_clock(1) : '';
		start_node($primary) or return 'the primary did not start again';
		my $up = wait_up($primary) or return 'the primary did not come up';
		barrier('kill postmaster', $start, $up);
		return "restarted$stepped";
	},
	'kill lease worker' => sub {
		my $pid = lease_worker($primary) or return 'no lease worker';
		my $start = time();
		kill 'KILL', $pid;
		usleep(200_000);
		my $up = wait_up($primary) or return 'the server did not come back';
		barrier('kill lease worker', $start, $up);
		return "pid $pid";
	},
	'stop lease worker' => sub {
		my $pid = lease_worker($primary) or return 'no lease worker';
		my $pause = 0.2 + rand(4);
		kill 'STOP', $pid;
		usleep($pause * 1e6);
		kill 'CONT', $pid;
		return sprintf('%.1f s', $pause);
	},
	'restart fast' => sub { restart('fast') },
	'restart immediate' => sub { restart('immediate') },
	'clock step' => sub { step_clock(0) },
	'node reload' => sub {
		my $new = 1 + int(rand($node_mask));
		my $at = time();
		defined admin($primary, "ALTER SYSTEM SET flakeid.node_id = $new")
		  && defined admin($primary, 'SELECT pg_reload_conf()')
		  or return 'failed';
		# the lease worker adopts it for the generator when it gets to the
		# reload (later while it waits for the clock, say): until then the
		# old node id is in force too
		my $adopted;
		for (my $i = 0; $i < 200 && !defined $adopted; $i++)
		{
			my $now = admin($primary, 'SELECT node_id FROM flakeid_status()', 5);
			$adopted = time() if defined $now && $now eq $new;
			usleep(100_000) unless defined $adopted;
		}
		push @node_history, [ $at, $new, $adopted // time() ];
		return defined $adopted
		  ? sprintf('node %d, adopted in %.1f s', $new, $adopted - $at)
		  : "node $new, not adopted within 20 s";
	},
	'cancel' => sub {
		my $n = 0;
		for (1 .. 5)
		{
			foreach my $pid (grep { rand() < 0.5 } campaign_backends($primary, 1))
			{
				$n++ if admin($primary, "SELECT pg_cancel_backend($pid)");
			}
			usleep(100_000);
		}
		return "$n cancels";
	},
	'state file unwritable' => sub {
		my $file = $primary->data_dir . '/flakeid.state';
		return 'no state file' unless -f $file;
		my $pause = 0.5 + rand(3);
		chmod 0444, $file;
		usleep($pause * 1e6);
		chmod 0600, $file;
		return sprintf('%.1f s', $pause);
	},
	'synchronous on' => sub {
		return 'no standby' unless running_standbys();
		my $list = random_sync_list();
		set_sync_list($list) or return 'failed';
		return $list;
	},
	'synchronous off' => sub {
		set_sync_list('') or return 'failed';
		return 'off';
	},
	'standby stalled' => sub {
		my @up = running_standbys();
		return 'no standby' unless @up;
		my $name = $up[ int(rand(@up)) ];
		# mostly with synchronous replication on, in force for 2 s
		if (!defined $sync_since && rand() < 0.7)
		{
			$fault_subs{'synchronous on'}->();
			$faults{'synchronous on'}++;
		}
		usleep(max(0, $sync_since + 2.2 - time()) * 1e6) if defined $sync_since;
		my $pause = 0.3 + rand(3);
		stall($name, 0) or return 'no walreceiver';
		my $checked = open_window("standby $name stalled, $sync_list");
		# with synchronous replication on, a burst past the lease meanwhile
		# must wait for a stalled synchronous standby (and time out)
		driver_burst() if defined $sync_since;
		usleep($pause * 1e6);
		# now and then the primary fails while its standby is stalled
		return sprintf('%s %.1f s%s, then failover: %s', $name, $pause, $checked,
			failover(rand() < 0.5 ? $name : 'sync'))
		  if rand() < 0.5;
		resume($name);
		return sprintf('%s %.1f s%s', $name, $pause, $checked);
	},
	# A standby stalled while asynchronous, the IDs put 4 s ahead meanwhile
	# (their lease reaches only the primary's disk and the other standby),
	# synchronous replication switched on by reload so that the stalled
	# standby counts, then failover to it: once pg_stat_replication shows
	# it synchronous, no statement returns an ID past the lease it has.
	'synchronous on while stalled' => sub {
		my @up = running_standbys();
		return 'no standby' unless @up;
		if ($sync_list ne '')
		{
			$fault_subs{'synchronous off'}->();
			$faults{'synchronous off'}++;
			usleep(500_000);
		}
		my ($name) = shuffle(@up);
		my $other = $name eq 'a' ? 'b' : 'a';
		stall($name, 1) or return 'no walreceiver';
		my $burst = driver_far_burst();
		# now and then the lease worker is stopped while the reload happens
		my $worker = rand() < 0.75 ? lease_worker($primary) : undef;
		kill 'STOP', $worker if $worker;
		my $list = rand() < 0.5 ? "FIRST 1 ($name, $other)" : "FIRST 2 ($name, $other)";
		set_sync_list($list) or return 'failed';
		my $states = wait_states(sub { counted($_[0], $name) }, 10);
		my $checked = open_window("$list, $name stalled");
		my $calls = driver_calls(1.5 + rand(1.5));
		kill 'CONT', $worker if $worker;
		return sprintf('burst %s, %s%s: %s, %s%s, then failover: %s', $burst,
			$worker ? 'lease worker stopped, ' : '', $list, states_text($states), $calls, $checked,
			failover($name));
	},
	'failover' => sub {
		return failover(rand() < 0.5 ? 'sync' : undef);
	},
	# A synchronous standby lost while the other one, behind (its
	# walreceiver stopped, its connection full), takes its place after a
	# burst that the lost one confirmed: killed, stopped, or stalled itself.
	# Then failover, to the standby synchronous now or to either, or both
	# back in either order.
	'synchronous standby lost' => sub {
		my @up = running_standbys();
		return 'needs two standbys' unless @up == 2;
		my ($lost, $behind) = shuffle(@up);
		my $list = sprintf('%s (%s, %s)', ('FIRST 1', 'FIRST 2', 'ANY 1')[ int(rand(3)) ], $lost, $behind);
		set_sync_list($list) or return 'failed';
		wait_states(sub { counted($_[0], $lost) && exists $_[0]{$behind} }, 10);
		stall($behind, 1) or return 'no walreceiver';
		# FIRST 2: the standby behind counts already
		open_window("$list, $behind stalled");
		my $burst = driver_far_burst();
		my $how = ('killed', 'fast', 'immediate', 'stalled')[ int(rand(4)) ];
		standby_out($lost, $how);
		my $states = wait_states(sub { !exists $_[0]{$lost} || $how eq 'stalled' }, 10);
		my $checked = open_window("$list, $lost $how, $behind stalled");
		my $calls = driver_calls(1 + rand(1.5));
		my $what = sprintf('%s, %s stalled, burst %s, %s %s: %s, %s%s', $list, $behind, $burst, $lost, $how,
			states_text($states), $calls, $checked);
		return "$what, then failover: " . failover(rand() < 0.7 ? 'sync' : undef)
		  if rand() < 0.5;
		my @back;
		foreach my $name (shuffle($lost, $behind))
		{
			push @back, bring_back($name);
			usleep(int(rand(1e6)));
		}
		return "$what, " . join(', ', @back);
	},
	# The list reloaded so that a standby that is behind counts, while the
	# lease worker is away (see worker_gone_reload); two times in five its
	# number or method changes, so that each round that starts with this
	# fault may try that too.
	'lease worker gone during a reload' => sub { worker_gone_reload(rand() < 0.4 ? 1 : 0) },
	'lease worker gone during a reload of the method' => sub { worker_gone_reload(1) },
	# Asynchronous failover right after a burst, mostly to a standby that
	# missed the burst's lease (its walreceiver stopped, its connection
	# full): the promoted standby continues above every ID returned.
	'asynchronous failover after a burst' => sub {
		my @up = running_standbys();
		return 'no standby' unless @up;
		set_sync_list('') if $sync_list ne '';
		my $target = $up[ int(rand(@up)) ];
		my $behind = rand() < 0.7 && stall($target, 1);
		my $burst = rand() < 0.5 ? 'of 4 million ' . driver_burst(5000) : '4 s ahead ' . driver_far_burst();
		my $lowered = rand() < 0.3 && lower_max_lead();
		return sprintf('%sburst %s, %sthen failover: %s', $behind ? "$target behind, " : '', $burst,
			$lowered ? 'flakeid.max_lead lowered to 1 s everywhere, ' : '', failover($target));
	},
	# A base backup of the primary (the newest one, or a new one) restored
	# in its place to the end of the archived WAL or to a point before a
	# burst, and promoted there (recovery_target_action = 'promote'), after
	# the primary is stopped (fast, which archives its last WAL, or
	# immediate).
	'restore and promote' => sub {
		return 'no archive' unless $preload;
		resume($_) foreach keys %stalled;
		my $backup = defined $last_backup && rand() < 0.5 ? $last_backup : take_backup();
		my $target = '';
		my $before = rand() < 0.5;
		if ($before)
		{
			my $lsn = admin($primary, 'SELECT pg_current_wal_lsn()') // return 'failed';
			# the segment that holds the record at the point: at a segment's
			# boundary pg_walfile_name() names the one before
			my $segment = admin($primary, "SELECT pg_walfile_name('$lsn'::pg_lsn + 1)") // return 'failed';
			# a record at the point, and its WAL archived before the primary
			# goes (a switch right after the last one switches nothing)
			admin($primary, "SELECT pg_create_restore_point('campaign')");
			admin($primary, 'SELECT pg_switch_wal()');
			wait_until(sub { -e "$archive/$segment" }, 30) or return "$segment not archived";
			$target = "recovery_target_lsn = '$lsn'";
		}
		my $burst = driver_far_burst();
		my $mode = rand() < 0.5 ? 'fast' : 'immediate';
		my $clock = clock_for_promotion();
		close_window();
		my $start = time();
		$primary->stop($mode);
		my $restored = PostgreSQL::Test::Cluster->new(new_node('restored'));
		$restored->init_from_backup($primary, $backup);
		$restored->append_conf('postgresql.conf', qq{
restore_command = 'cp "$archive/%f" "%p"'
recovery_target_action = 'promote'
$target});
		$restored->set_recovery_mode;
		push @all_nodes, $restored;
		my $log_from = 0;
		for (my $try = 1; !start_node($restored); $try++)
		{
			my $next = restore_child_lost($restored, $log_from, 1);
			die 'the restored backup did not start' if $try == 3 || $next == $log_from;
			$log_from = $next;
		}
		my @through = promotion_sessions($restored);
		wait_until(
			sub {
				return 1 if (admin($restored, 'SELECT pg_is_in_recovery()', 5) // '') eq 'f';
				$log_from = restore_child_lost($restored, $log_from);
				return 0;
			},
			120)
		  or die "the restored backup was not promoted; its processes:\n" . process_tree($restored);
		# not for the standbys that its base backups make
		$restored->append_conf('postgresql.conf', q{
restore_command = ''
recovery_target_action = 'pause'
recovery_target_lsn = ''});
		my $what = sprintf('restore of %s%s (%s stop)', $backup, $before ? ' to before a burst' : '', $mode);
		my $failed = promoted($restored, $primary, $start, $what);
		promotion_sessions_done(@through);
		return $failed // "$clock$backup, " . ($before ? 'to before a burst' : 'to the end of the archive')
		  . ", burst $burst, $mode stop";
	},
	'rolling upgrade' => \&rolling_upgrade);

# Weights: the cheap faults often, the slow ones (failover) now and then.
my @menu = (
	[ 'kill backend', 2 ], [ 'kill postmaster', 2 ], [ 'kill lease worker', 1 ],
	[ 'stop lease worker', 2 ], [ 'restart fast', 1 ], [ 'restart immediate', 1 ],
	[ 'clock step', 4 ], [ 'node reload', 2 ], [ 'cancel', 2 ],
	[ 'state file unwritable', 1 ]);
push @menu, [ 'synchronous on', 3 ], [ 'synchronous off', 1 ], [ 'failover', 1 ],
  [ 'standby stalled', 2 ], [ 'synchronous on while stalled', 1 ],
  [ 'synchronous standby lost', 1 ], [ 'lease worker gone during a reload', 1 ],
  [ 'asynchronous failover after a burst', 1 ], [ 'restore and promote', 1 ],
  # the number or the method of the synchronous standbys changed while the
  # lease worker is away: what only the worker reads (seed 2 found
  # src/confirm.c counting with the worker's last reading, 56 of 58 calls in
  # 1.8 s after a SIGTERM returning IDs 5.5 s past the standby's lease)
  [ 'lease worker gone during a reload of the method', 1 ]
  if $preload;
# the rolling upgrade needs the older flakeid that test/run builds
my %unavailable;
if ($preload && $ENV{FLAKE_OLD_INSTALL})
{
	push @menu, [ 'rolling upgrade', 1 ];
}
elsif ($preload)
{
	$unavailable{'rolling upgrade'} = 'no older flakeid (FLAKE_OLD_INSTALL: test/run builds 1.2 '
	  . 'where the source tree has its git history)';
}
# --faults: only these (to replay one kind of fault at length)
if (defined $only_faults)
{
	my %want = map { $_ => 1 } split /\s*,\s*/, $only_faults;
	die join('', map { "$_: not available, $unavailable{$_}\n" } grep { $unavailable{$_} } sort keys %want)
	  if grep { $unavailable{$_} } keys %want;
	my @unknown = grep { my $w = $_; !grep { $_->[0] eq $w } @menu } sort keys %want;
	die 'unknown fault(s): ' . join(', ', @unknown) . '; the faults: '
	  . join(', ', map { $_->[0] } @menu) . "\n" if @unknown;
	@menu = map { [ $_->[0], $_->[1] || 1 ] } grep { $want{ $_->[0] } } @menu;
}
@menu = grep { $_->[1] > 0 } @menu;
# Each round starts with the next of these, in an order the seed draws, so
# that a 2-minute campaign has each of them.
my @each_round = grep { my $f = $_; grep { $_->[0] eq $f } @menu } shuffle(
	'synchronous standby lost', 'lease worker gone during a reload',
	'asynchronous failover after a burst', 'restore and promote');

sub pick_fault
{
	my $total = sum(map { $_->[1] } @menu);
	my $r = rand($total);
	foreach my $m (@menu)
	{
		return $m->[0] if ($r -= $m->[1]) < 0;
	}
	return $menu[-1][0];
}

# ---------------------------------------------------------------------
# Checks

my %allowed_states = map { $_ => 1 } qw(
  55000 58000 53400 42501 53100 58030 57014 57P01 57P02 57P03 25006
);
my %guest_states = map { $_ => 1 } qw(22023 55P02);
# a statement on a server in recovery, past max_standby_archive_delay or
# max_standby_streaming_delay (hot standby's conflict with recovery)
my %recovery_states = map { $_ => 1 } qw(40001);

sub read_lines
{
	my ($file) = @_;
	open my $fh, '<', $file or return ();
	local $/;
	my $text = <$fh> // '';
	close $fh;
	$text =~ s/[^\n]*\z//;    # a line still being written
	return split /\n/, $text;
}

sub in_window
{
	my ($events, $from, $to) = @_;
	return grep { $_->[0] >= $from && $_->[0] <= $to } @$events;
}

sub node_ids_during
{
	my ($from, $to) = @_;
	my %ids;
	my ($before, $prev);
	foreach my $h (@node_history)
	{
		if ($h->[0] <= $from)
		{
			$before = $h->[1];
			# the node id before a reload, until the generator adopted it
			$ids{$prev} = 1 if defined $prev && defined $h->[2] && $h->[2] > $from;
		}
		elsif ($h->[0] <= $to) { $ids{ $h->[1] } = 1 }
		$prev = $h->[1];
	}
	$ids{$before} = 1 if defined $before;
	return \%ids;
}

my %summary;

sub check_all
{
	my ($label, $final) = @_;
	my (@stmts, %sessions, %errors, @bad_errors, @violations, $fails);
	foreach my $c (0 .. $clients)
	{
		foreach (read_lines("$work/client$c.log"))
		{
			my @f = split / /;
			if ($f[0] eq 'C')
			{
				$sessions{ $f[1] } = { cache => $f[2], connected => $f[4], guest => $f[5],
					parallel => $f[6] };
			}
			elsif ($f[0] eq 'V')
			{
				push @violations, join(' ', @f[ 1 .. $#f ]);
			}
			elsif ($f[0] eq 'P')
			{
				$summary{"guests' flakeid_status() refused"}++ if $final;
			}
			elsif ($f[0] eq 'S')
			{
				push @stmts, {
					sid => $f[1], kind => $f[2], cache => $f[3], tb => $f[4], ta => $f[5],
					t0 => $f[6], t1 => $f[7], n => $f[8], lo => $f[9], hi => $f[10],
					lo_ms => $f[11], hi_ms => $f[12], nodes => $f[13], sorted => $f[14] };
			}
			elsif ($f[0] eq 'E')
			{
				my $state = $f[5];
				my $msg = join(' ', @f[ 6 .. $#f ]);
				$state = 'connection' if $state =~ /^(08|S8)/ || $msg =~
				  /server closed the connection|terminating connection|no connection to the server|could not receive data|SSL SYSCALL|connection to server/;
				$errors{$state}++;
				# a guest's own view of the settings may fail its own calls
				push @bad_errors, "$f[1] $f[2]: $state $msg"
				  unless $allowed_states{$state} || $state eq 'connection'
				  || ($sessions{ $f[1] }{guest} && $guest_states{$state})
				  || ($f[2] eq 'through_promotion' && $recovery_states{$state}
					  && $msg =~ /conflict with recovery/);
			}
			elsif ($f[0] eq 'F')
			{
				$summary{'connection attempts refused'} += $f[1] if $final;
				$summary{'guests refused at the door'} += $f[2] if $final;
			}
		}
	}
	my $ids = sum(0, map { $_->{n} } @stmts);
	note sprintf('%s: %d sessions, %d statements, %d IDs, errors: %s', $label,
		scalar(keys %sessions), scalar(@stmts), $ids,
		join(', ', map { "$_ $errors{$_}" } sort keys %errors) || 'none');
	if ($final)
	{
		my @guests = grep { $sessions{ $_->{sid} }{guest} } @stmts;
		%summary = (%summary, sessions => scalar(keys %sessions),
			"guests' sessions" => scalar(grep { $_->{guest} } values %sessions),
			"guests' sessions with parallel plans" => scalar(grep { $_->{parallel} } values %sessions),
			"guests' statements that returned IDs" => scalar(@guests),
			"guests' parallel statements that returned IDs" =>
			  scalar(grep { $sessions{ $_->{sid} }{parallel} } @guests),
			"guests' parallel scans that returned IDs" => scalar(grep { $_->{kind} eq 'parallel' } @guests),
			"driver's statements that returned IDs" => scalar(grep { $_->{sid} =~ /^0\./ } @stmts),
			statements => scalar(@stmts), IDs => $ids,
			'restarts, failovers and restores checked' => scalar(@barriers));
		$summary{"errors $_"} = $errors{$_} foreach keys %errors;
		# the checks are worth something only if every client got IDs
		my %per_client;
		$per_client{ (split /\./, $_->{sid})[0] }++ foreach @stmts;
		my @idle = grep { !$per_client{$_} } 1 .. $clients;
		is(scalar(@idle), 0, "$label: every client's statements returned IDs")
		  or diag("clients without a statement that returned: @idle");
	}

	# no ID twice in the whole campaign, across every promotion: the runs of
	# all clients and the driver, sorted
	my @dups;
	my $sorted = "$work/sorted";
	open my $all, '>', "$sorted.in" or die;
	print $all "$_\n" foreach map { read_lines("$work/ids.$_") } 0 .. $clients;
	close $all;
	system("LC_ALL=C sort -n -k1,1 -S 20% -o '$sorted' '$sorted.in'") == 0
	  or die 'sort failed';
	open my $in, '<', $sorted or die;
	my ($end, $who) = (-1, '');
	while (<$in>)
	{
		my ($start, $len, $sid) = split;
		push @dups, "$start (sessions $who and $sid)" if $start <= $end && @dups < 5;
		($end, $who) = ($start + $len - 1, $sid) if $start + $len - 1 > $end;
	}
	close $in;
	unlink "$sorted.in", $sorted;
	is(scalar(@dups), 0, "$label: no ID returned twice ($ids IDs)")
	  or diag("returned twice: @dups");

	my @unsorted = map { "$_->{sid} $_->{kind}" } grep { !$_->{sorted} } @stmts;
	is(scalar(@unsorted), 0, "$label: each session's IDs strictly increasing")
	  or diag("not increasing: @unsorted[0 .. min(4, $#unsorted)]");

	# an ID returned before a cache = 1 statement began is below its IDs
	my @order_bad;
	my @done = sort { $a->{ta} <=> $b->{ta} } @stmts;
	my @by_start = sort { $a->{tb} <=> $b->{tb} } grep { $_->{cache} == 1 } @stmts;
	my ($i, $max, $max_of) = (0, -1, undef);
	foreach my $s (@by_start)
	{
		while ($i < @done && $done[$i]{ta} < $s->{tb})
		{
			($max, $max_of) = ($done[$i]{hi}, $done[$i]) if $done[$i]{hi} > $max;
			$i++;
		}
		push @order_bad, sprintf('%s %s (%.3f) got %d, not above %d of %s %s (ended %.3f)',
			$s->{sid}, $s->{kind}, $s->{tb}, $s->{lo}, $max, $max_of->{sid},
			$max_of->{kind}, $max_of->{ta})
		  if $s->{lo} <= $max && @order_bad < 5;
	}
	is(scalar(@order_bad), 0,
		"$label: an ID returned before a statement began is below its IDs (cache = 1)")
	  or diag(join("\n", @order_bad));

	# after a crash, restart, failover or restore: above all before
	my @barrier_bad;
	foreach my $b (@barriers)
	{
		my $before = max(-1, map { $_->{hi} }
			grep { $sessions{ $_->{sid} }{connected} < $b->{start} && $_->{ta} <= $b->{end} } @stmts);
		# and of a session that called through the promotion
		my @after = grep {
			$sessions{ $_->{sid} }{connected} > $b->{end}
			  || ($_->{kind} eq 'through_promotion' && $sessions{ $_->{sid} }{connected} > $b->{start})
		} @stmts;
		my $lowest = min(map { $_->{lo} } @after);
		push @barrier_bad, "$b->{kind} at $b->{start}: $lowest not above $before"
		  if defined $lowest && $lowest <= $before;
	}
	is(scalar(@barrier_bad), 0,
		"$label: after each of " . scalar(@barriers) . ' restarts, failovers and restores, IDs above every earlier one')
	  or diag(join("\n", @barrier_bad));

	# while the synchronous standbys were stalled: no ID past the lease they
	# had flushed, in a statement that began then (50 ms after the window
	# opened: a block of flakeid.cache lasts a millisecond) and ended before
	# anything changed
	my (@window_bad, %in_windows);
	foreach my $w (@windows)
	{
		my @in = grep { $_->{tb} >= $w->{start} + 0.05 && $_->{ta} <= $w->{end} } @stmts;
		$in_windows{"$_->{sid} $_->{tb}"} = 1 foreach @in;
		my @past = grep { $_->{hi_ms} >= $w->{limit_ms} } @in;
		push @window_bad, sprintf('%s (%.3f to %.3f): %d of %d statements went past the lease end %d, '
			  . 'the furthest by %d ms (%s %s at %.3f)', $w->{what}, $w->{start}, $w->{end}, scalar(@past),
			scalar(@in), $w->{limit_ms}, map { ($_->{hi_ms} - $w->{limit_ms}, $_->{sid}, $_->{kind}, $_->{tb}) }
			  (sort { $b->{hi_ms} <=> $a->{hi_ms} } @past)[0])
		  if @past;
	}
	is(scalar(@window_bad), 0,
		sprintf('%s: while the synchronous standbys were stalled (%d times), none of the %d statements '
			  . 'that returned IDs went past the lease they had', $label, scalar(@windows), scalar(keys %in_windows)))
	  or diag(join("\n", @window_bad));
	if ($final)
	{
		$summary{'windows with the synchronous standbys stalled'} = scalar(@windows);
		$summary{'statements that returned IDs in them'} = scalar(keys %in_windows);
	}

	# node ids and times
	my (@node_bad, @time_bad);
	my $timed = 0;
	foreach my $s (@stmts)
	{
		my $ok_nodes = node_ids_during($s->{tb} - 2, $s->{ta});
		push @node_bad, "$s->{sid} $s->{kind}: node $s->{nodes} not in " . join(',', sort keys %$ok_nodes)
		  if grep { !$ok_nodes->{$_} } split /,/, $s->{nodes};
		next if in_window(\@clock_steps, $s->{tb} - 0.2, $s->{ta} + 0.2);
		$timed++;
		push @time_bad, sprintf('%s %s: ID at %d, clock at end %d: %d ms ahead',
			$s->{sid}, $s->{kind}, $s->{hi_ms}, $s->{t1}, $s->{hi_ms} - $s->{t1})
		  if $s->{hi_ms} > $s->{t1} + $max_lead_ms + 1;
		push @time_bad, sprintf('%s %s: ID at %d, before the clock at the start %d',
			$s->{sid}, $s->{kind}, $s->{lo_ms}, $s->{t0})
		  if $s->{cache} == 1 && $s->{kind} ne 'cursor' && $s->{lo_ms} < $s->{t0} - 1;
	}
	is(scalar(@node_bad), 0, "$label: every ID decodes to a node id in force")
	  or diag(join("\n", @node_bad[0 .. min(4, $#node_bad)]));
	is(scalar(@time_bad), 0,
		"$label: every ID's time within flakeid.max_lead of the clock ($timed statements without a clock step)")
	  or diag(join("\n", @time_bad[0 .. min(4, $#time_bad)]));

	is(scalar(@bad_errors), 0, "$label: every error has a documented SQLSTATE")
	  or diag(join("\n", @bad_errors[0 .. min(9, $#bad_errors)]));
	is(scalar(@violations), 0, "$label: no role without pg_monitor reads flakeid_status()")
	  or diag(join("\n", @violations[0 .. min(4, $#violations)]));

	# the servers' logs: no crash but the injected kills (an immediate stop
	# ends an archive command with SIGQUIT), and restore_command's children
	# (see restore_child_lost)
	my $crash = join('|',
		'(?<!archive command was )(?<!from archive: child process was )terminated by signal (?!9\b)\d+[^\n]*',
		'archive command was terminated by signal (?!3\b|9\b)\d+[^\n]*',
		'PANIC:[^\n]*', 'TRAP:[^\n]*');
	my (@crashes, @context);
	foreach my $node (@all_nodes)
	{
		my @lines = split /\n/, slurp_file($node->logfile);
		foreach my $i (0 .. $#lines)
		{
			next unless $lines[$i] =~ /($crash)/;
			push @crashes, $node->name . ": $1";
			# what the server wrote before it: the process, and what a
			# library that aborted said on its stderr
			push @context, "--- " . $node->name . ", the lines before that one:",
			  @lines[ max(0, $i - 15) .. $i ]
			  if @context < 100;
		}
	}
	is(scalar(@crashes), 0, "$label: the servers' logs show no crash but the injected ones")
	  or diag(join("\n", @crashes[0 .. min(4, $#crashes)], @context));
	return;
}

# ---------------------------------------------------------------------
# Rounds

# Whether a session with the server's own settings generates within 45 s
# (what the faults hold up ends sooner), or only waits for a clock that
# was set back (58000); otherwise why not.
sub generation_fails
{
	my ($node) = @_;
	my $deadline = time() + 45;
	my ($state, $err) = ('', 'no connection');
	while (time() < $deadline)
	{
		my $dbh = DBI->connect(
			sprintf('dbi:Pg:dbname=postgres;host=%s;port=%d', $node->host, $node->port),
			'', '', { AutoCommit => 1, RaiseError => 0, PrintError => 0 });
		if ($dbh)
		{
			$dbh->do("SET statement_timeout = '10s'");
			my $got = $dbh->selectrow_array('SELECT nextflake()');
			($state, $err) = ($dbh->state // '', $dbh->errstr // '') unless defined $got;
			$dbh->disconnect;
			return undef if defined $got;
		}
		usleep(500_000);
	}
	return $state eq '58000' ? undef : "nextflake() failed for 45 s: $state $err";
}

my $campaign_end = time() + $minutes * 60;
my $round = 0;
while (time() < $campaign_end)
{
	$round++;
	my $round_end = min(time() + $round_seconds, $campaign_end);
	my @done;
	while (time() < $round_end - 1)
	{
		usleep(int((0.3 + rand(2.5)) * 1e6));
		last if time() >= $round_end - 1;
		my $fault = !@done && @each_round ? $each_round[ ($round - 1) % @each_round ] : pick_fault();
		my $what = $fault_subs{$fault}->();
		$faults{$fault}++;
		push @done, "$fault ($what)";
		note sprintf('round %d, %.1f s: %s (%s)', $round, $round_end - time(), $fault, $what);
	}
	usleep(max(0, $round_end - time()) * 1e6);
	# the primary serves again before the round's check
	wait_up($primary, 60) or BAIL_OUT("round $round: the primary stays down");
	my $why_not = generation_fails($primary);
	ok(!defined $why_not, "round $round: a session with the server's settings generates")
	  or diag($why_not);
	check_all("round $round (" . join('; ', @done) . ')', 0);
}

open my $stop, '>', $stop_file or die;
close $stop;
# a client whose statement never ends fails the campaign instead of
# holding it: 60 s for all of them, then the rest are killed
my $clients_deadline = time() + 60;
foreach my $pid (@children)
{
	while (waitpid($pid, POSIX::WNOHANG) == 0)
	{
		if (time() > $clients_deadline)
		{
			diag("client $pid still waits for a statement 60 s after the end; its server's sessions:\n"
				  . (admin($primary, q{SELECT pid, state, wait_event_type, wait_event, now() - query_start, left(query, 60)
					FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()}, 10) // '(none)'));
			kill 'KILL', $pid;
			waitpid($pid, 0);
			last;
		}
		usleep(100_000);
	}
	is($?, 0, "client $pid ended cleanly");
}
check_all('campaign', 1);

diag("campaign seed $seed: $round rounds; "
	  . join(', ', map { "$_ $summary{$_}" } sort keys %summary));
diag('faults: ' . join(', ', map { "$_ $faults{$_}" } sort keys %faults)
	  . join('', map { "; $_ not available: $unavailable{$_}" } sort keys %unavailable));
done_testing();
