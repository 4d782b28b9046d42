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
# faults, clients and statements (their timing is the machine's).
#
# Clients (forked processes, DBD::Pg) run sessions of random statements:
# nextflake() once or per row, nextflakes(n) with n from 1 to 20000,
# bursts of nextflakes() up to 4 million (their range counts as issued),
# prepared and not, cursors fetched in parts, INSERT ... RETURNING into a
# table whose key defaults to nextflake(); sessions with flakeid.cache =
# 64, with statement_timeout; and guests' sessions, of a role without
# superuser that brings flakeid settings of its own as connection options
# (a node id, an epoch, node bits, a bad epoch) and calls flakeid_status()
# too.  Each statement's rows carry the server's clock before and after.  Each client writes what its statements returned
# (runs of consecutive IDs, per lineage) and what they failed with.
#
# Faults: kill -9 of a backend, of the lease worker, of the postmaster;
# fast and immediate restarts, the clock stepped while down; the clock
# stepped back and forward at runtime; node id reloads; the lease worker
# stopped (SIGSTOP) for up to 4 s; cancels; the state file unwritable;
# synchronous replication switched on and off by reload; failover to the
# standby, synchronous or not, the old primary stopped immediately and a
# new standby made from the new primary; the standby's walreceiver stopped,
# with or without failover, and failover after synchronous replication was
# switched on while it was stopped.
#
# Checks, cumulative over the whole campaign:
#   - no ID returned twice, except across an asynchronous failover (each
#     one starts a new lineage, which is checked on its own);
#   - each session's IDs strictly increasing;
#   - an ID returned before a statement of a flakeid.cache = 1 session
#     started is below that statement's IDs (across sessions, restarts and
#     synchronous failovers);
#   - after a crash, restart or synchronous failover, every ID of a session
#     connected after it is above every ID returned before it (after a
#     failover where synchronous replication was switched on late, every
#     ID returned since it was in force);
#   - every ID decodes to a node id the generator had during its statement
#     (after a reload, the old one until flakeid_status() shows the new
#     one adopted), and to a
#     time no further than flakeid.max_lead ahead of the server's clock at
#     the statement's end, and (cache = 1) not before its start;
#   - every error has a documented SQLSTATE (a guest's own calls may
#     also fail for its settings: 22023, 55P02);
#   - no guest reads flakeid_status();
#   - at the end of each round, a session with the server's settings
#     generates (or waits for a clock that was set back);
#   - the servers' logs show no crash other than the injected kills.

use strict;
use warnings;

use DBI;
use File::Path qw(make_path rmtree);
use FlakeFault;
use FlakeTest;
use Getopt::Long;
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

my $conf = qq{
synchronous_commit = remote_write
flakeid.max_lease_wait = '2s'
flakeid.max_clock_wait = '3s'
log_min_messages = warning
max_connections = 40
restart_after_crash = on
};

my $node_seq = 0;
my @all_nodes;         # every server made, for the log check
my $offset = 0.0;      # the servers' clock minus the real one, seconds
my @clock_steps;       # [real time, seconds stepped] at runtime
my @node_history;      # [real time, node id]
my @barriers;          # { kind, start, end, lineage_before, lineage_after }
my $lineage = 0;
my ($primary, $standby);
my $sync_since;        # when synchronous replication was switched on
my $stalled;           # the standby's walreceiver, while stopped
my %faults;

sub offset_text { return sprintf('%+.3f', $offset) }

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
	printf $fh "%s %d %d\n", $primary->host, $primary->port, $lineage;
	close $fh;
	rename "$target_file.new", $target_file or die "cannot rename $target_file: $!";
	return;
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

sub make_standby
{
	my $backup = "b$node_seq";
	$primary->backup($backup);
	$standby = PostgreSQL::Test::Cluster->new(new_node('standby'));
	$standby->init_from_backup($primary, $backup, has_streaming => 1);
	push @all_nodes, $standby;
	start_node($standby) or die 'the standby did not start';
	return;
}

$primary = flake_node(new_node('primary'), node_id => 5, streaming => 1,
	quiet => 1, preload => $preload, conf => $conf);
push @all_nodes, $primary;
start_node($primary) or die 'the primary did not start';
$primary->safe_psql(
	'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE FUNCTION cms(timestamptz) RETURNS bigint LANGUAGE sql STABLE
		AS 'SELECT floor(extract(epoch FROM $1) * 1000)::bigint';
	CREATE TABLE camp (id flakeid PRIMARY KEY DEFAULT nextflake(), body text);
	CREATE TABLE filler (g int, pad text);
	CREATE ROLE camp_guest LOGIN;
	GRANT SELECT, INSERT ON camp TO camp_guest;
	-- as an install of 1.0 or 1.1 leaves it: the function must refuse
	-- by itself
	GRANT EXECUTE ON FUNCTION flakeid_status() TO camp_guest});
push @node_history, [ time(), 5 ];
my $epoch_ms = $primary->safe_psql('postgres',
	q{SELECT cms(flakeid_timestamp('0'::flakeid))});
my $node_bits = $primary->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()');
my $node_shift = 22 - $node_bits;
my $node_mask = (1 << $node_bits) - 1;
make_standby() if $preload;
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

# A guest's connection options: the server's settings of the generator
# (refused at the door when the library is loaded; otherwise they must
# fail the guest's own calls at most, never generation for others), or
# none.
my @guest_options = (
	'-c flakeid.node_id=7', '-c flakeid.epoch=2024-01-01',
	'-c flakeid.node_bits=16', '-c flakeid.epoch=garbage', '');

sub client_main
{
	my ($client, $client_seed) = @_;
	srand($client_seed);
	open my $log, '>>', "$work/client$client.log" or die;
	my %idfh;
	my $session = 0;
	my $connect_failures = 0;
	my $guests_refused = 0;

	while (!-e $stop_file)
	{
		POSIX::_exit(1) if getppid() == 1;
		open my $tf, '<', $target_file or do { usleep(50_000); next };
		my $target = <$tf>;
		close $tf;
		my ($host, $port, $lin) = split ' ', $target;
		# one session in 8 is a guest's: a role without superuser that
		# brings flakeid settings of its own as connection options
		my $guest = rand() < 0.125 ? $guest_options[ int(rand(@guest_options)) ] : undef;
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
		$dbh->do("SET flakeid.cache = $cache") if $cache > 1;
		$dbh->do("SET statement_timeout = $timeout") if $timeout;
		printf $log "C %s %d %d %d %.6f %d\n", $sid, $lin, $cache, $timeout, $connected,
		  defined $guest ? 1 : 0;
		my $last = -1;
		my $prepared;
		my $statements = 1 + int(rand(defined $guest ? 20 : 300));
		open $idfh{$lin}, '>>', "$work/ids.$lin.$client" or die
		  unless $idfh{$lin};
		my $ids_out = $idfh{$lin};

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
			elsif ($r < 0.003)
			{
				# a burst of up to 1 s of IDs: its reservation is recorded
				# as the range from its first to its last ID, which no
				# other ID of this server may fall into
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
				$err =~ s/\s+/ /g;
				printf $log "E %s %d %s %.6f %.6f %s %s\n", $sid, $lin, $kind, $tb, $ta,
				  ($state eq '' ? 'none' : $state), $err;
			}
			if ($rows && @$rows && $kind eq 'burst')
			{
				my ($lo, $hi, $count, $t0, $t1) = @{ $rows->[0] };
				my %nodes = map { (($_ >> $node_shift) & $node_mask) => 1 } ($lo, $hi);
				printf $log "S %s %d %s %d %.6f %.6f %d %d %d %d %d %d %d %s %d\n",
				  $sid, $lin, $kind, $cache, $tb, $ta, $t0, $t1, $count, $lo, $hi,
				  ($lo >> 22) + $epoch_ms, ($hi >> 22) + $epoch_ms,
				  join(',', sort { $a <=> $b } keys %nodes),
				  ($lo > $last && $hi >= $lo && $count == $burst) ? 1 : 0;
				$last = $hi;
				printf $ids_out "%d %d %s\n", $lo, $hi - $lo + 1, $sid;
				$ids_out->flush;
			}
			elsif ($rows && @$rows)
			{
				my @ids = map { $_->[0] } @$rows;
				my ($t0, $t1) = (min(map { $_->[1] } @$rows), max(map { $_->[2] } @$rows));
				my $sorted = 1;
				foreach my $id (@ids)
				{
					$sorted = 0 unless $id > $last;
					$last = $id;
				}
				my %nodes = map { (($_ >> $node_shift) & $node_mask) => 1 } @ids;
				my ($lo, $hi) = (min(@ids), max(@ids));
				printf $log "S %s %d %s %d %.6f %.6f %d %d %d %d %d %d %d %s %d\n",
				  $sid, $lin, $kind, $cache, $tb, $ta, $t0, $t1, scalar(@ids), $lo, $hi,
				  ($lo >> 22) + $epoch_ms, ($hi >> 22) + $epoch_ms,
				  join(',', sort { $a <=> $b } keys %nodes), $sorted;
				print $ids_out join('', map { "$_->[0] $_->[1] $sid\n" } runs_of([ sort { $a <=> $b } @ids ]));
				$ids_out->flush;
			}
			$log->flush;
			last unless $dbh->ping;
		}
		undef $prepared;
		$dbh->disconnect;
	}
	printf $log "F %d %d\n", $connect_failures, $guests_refused;
	close $log;
	close $_ foreach values %idfh;
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

# After a barrier, IDs above every ID returned before it: by statements of
# the lineage before it, or, with $since, by those that began after $since,
# and by the driver's calls then (up to $before_max).
sub barrier
{
	my ($kind, $start, $end, $same_lineage, $since, $before_max) = @_;
	push @barriers, {
		kind => $kind,
		start => $start,
		end => $end // time(),
		lineage_before => $same_lineage ? $lineage : $lineage - 1,
		lineage_after => $lineage,
		since => $since,
		before_max => $before_max // -1
	};
	return;
}

sub step_clock
{
	my ($down) = @_;
	# back as often as forward, half of the steps back past flakeid.max_lead
	my $step = rand() < 0.5 ? -(0.1 + (rand() < 0.5 ? rand(3) : 3 + rand(5))) : 0.1 + rand(10);
	$offset += $step;
	$offset = max(min($offset, 60), -60);
	set_clock($_, offset_text()) foreach grep { defined } ($primary, $standby);
	push @clock_steps, [ time(), $step ] unless $down;
	return sprintf('%+.1f s', $step);
}

sub restart
{
	my ($mode) = @_;
	my $start = time();
	$primary->stop($mode);
	my $stepped = rand() < 0.4 ? ', clock ' . step_clock(1) : '';
	start_node($primary) or return "the primary did not start again";
	my $up = wait_up($primary) or return "the primary did not come up";
	barrier("restart $mode", $start, $up, 1);
	return "$mode$stepped";
}

# Failover to the standby.  With $since: synchronous replication in force
# only since then, so only what was returned after it must stay below the
# promoted standby's IDs.
sub failover
{
	my ($since, $before_max) = @_;
	my $state = admin($primary, 'SELECT sync_state FROM pg_stat_replication LIMIT 1');
	my $sync = !defined $since && defined $sync_since && time() - $sync_since > 2
	  && defined $state && $state eq 'sync';
	my $start = time();
	$primary->stop('immediate');
	# a standby stalled by the fault gets what reached it, then is promoted
	kill 'CONT', $stalled if $stalled;
	$stalled = undef;
	$standby->promote;
	my $old = $primary;
	$primary = $standby;
	$standby = undef;
	$lineage++ unless $sync;
	wait_up($primary) or return 'the promoted standby did not come up';
	# the promoted server has the node id of its base backup's configuration
	my $node = current_node_id($primary);
	push @node_history, [ $start, $node ] if defined $node;
	write_target();
	if (defined $since)
	{
		barrier('failover, synchronous since ' . sprintf('%.3f', $since), $start, time(), 0, $since,
			$before_max);
		$faults{'failover sync since a reload'}++;
	}
	else
	{
		barrier($sync ? 'synchronous failover' : 'asynchronous failover', $start, time(), $sync);
		$faults{$sync ? 'failover sync' : 'failover async'}++;
	}
	make_standby();
	# the promoted server has the configuration of its base backup
	$sync_since = (admin($primary, 'SHOW synchronous_standby_names') // '') ne ''
	  ? time() : undef;
	return defined $since ? 'synchronous since the reload' : $sync ? 'synchronous' : 'asynchronous';
}

# A burst of 4 million IDs (about 1 s of them) by the driver, within 1 s;
# the range it returned is written beside the clients' IDs.
sub driver_burst
{
	my ($ret, $out) = $primary->psql('postgres',
		"SET statement_timeout = '1s';
		 SELECT min(x)::bigint || ' ' || (max(x) - min(x) + 1)::bigint FROM nextflakes(4000000) x",
		timeout => 30);
	return 'timed out' unless $ret == 0 && $out =~ /^(\d+) (\d+)$/;
	open my $fh, '>>', "$work/ids.$lineage.0" or die;
	print $fh "$1 $2 driver\n";
	close $fh;
	$faults{'burst while stalled, returned'}++;
	return 'returned';
}

# A reservation that puts the IDs about 4 s ahead of the clock (its lease
# with them), of which only the first ID is returned.
sub driver_far_burst
{
	my $n = min((1 << $node_shift) * ($max_lead_ms - 1000), 2_000_000_000);
	my ($ret, $out) = $primary->psql('postgres',
		"SET statement_timeout = '3s'; SELECT nextflakes($n) LIMIT 1", timeout => 30);
	return 'failed' unless $ret == 0 && $out =~ /^(\d+)$/;
	open my $fh, '>>', "$work/ids.$lineage.0" or die;
	print $fh "$1 1 driver\n";
	close $fh;
	return 'returned';
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
		barrier('kill backend', $start, $up, 1);
		return "pid $pids[0]";
	},
	'kill postmaster' => sub {
		my $start = time();
		crash_node($primary);
		my $stepped = rand() < 0.4 ? ', clock ' . step_clock(1) : '';
		start_node($primary) or return 'the primary did not start again';
		my $up = wait_up($primary) or return 'the primary did not come up';
		barrier('kill postmaster', $start, $up, 1);
		return "restarted$stepped";
	},
	'kill lease worker' => sub {
		my $pid = lease_worker($primary) or return 'no lease worker';
		my $start = time();
		kill 'KILL', $pid;
		usleep(200_000);
		my $up = wait_up($primary) or return 'the server did not come back';
		barrier('kill lease worker', $start, $up, 1);
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
		return 'no standby' unless $standby;
		defined admin($primary, "ALTER SYSTEM SET synchronous_standby_names = '*'")
		  && defined admin($primary, 'SELECT pg_reload_conf()')
		  or return 'failed';
		$sync_since //= time();
		return 'on';
	},
	'synchronous off' => sub {
		defined admin($primary, "ALTER SYSTEM SET synchronous_standby_names = ''")
		  && defined admin($primary, 'SELECT pg_reload_conf()')
		  or return 'failed';
		$sync_since = undef;
		return 'off';
	},
	'standby stalled' => sub {
		return 'no standby' unless $standby;
		my ($pid) = server_processes($standby, qr/walreceiver/);
		return 'no walreceiver' unless $pid;
		# mostly with synchronous replication on, in force for 2 s
		if (!defined $sync_since && rand() < 0.7)
		{
			$fault_subs{'synchronous on'}->();
			$faults{'synchronous on'}++;
		}
		usleep(max(0, $sync_since + 2.2 - time()) * 1e6) if defined $sync_since;
		my $pause = 0.3 + rand(3);
		kill 'STOP', $pid;
		$stalled = $pid;
		# with synchronous replication on, a burst past the lease meanwhile
		# must wait for the stalled standby (and time out): what it returns
		# counts as issued
		driver_burst() if defined $sync_since;
		usleep($pause * 1e6);
		# now and then the primary fails while its standby is stalled
		return sprintf('%.1f s, then failover: %s', $pause, failover())
		  if rand() < 0.5;
		kill 'CONT', $pid;
		$stalled = undef;
		return sprintf('%.1f s', $pause);
	},
	# The standby stalled while asynchronous, the IDs put 4 s ahead
	# meanwhile (their lease reaches only the primary's disk), synchronous
	# replication switched on by reload, then failover: an ID returned once
	# the reload is in force (1 s after it) must be under a lease the standby
	# confirmed, and so below every ID of the promoted standby.
	'synchronous on while stalled' => sub {
		return 'no standby' unless $standby;
		if (defined $sync_since)
		{
			$fault_subs{'synchronous off'}->();
			$faults{'synchronous off'}++;
			usleep(500_000);
		}
		my ($pid) = server_processes($standby, qr/walreceiver/);
		return 'no walreceiver' unless $pid;
		kill 'STOP', $pid;
		$stalled = $pid;
		# fill the replication connection, so that what follows stays on
		# the primary (at failover the standby reads what was sent)
		my $filled = defined admin($primary,
			"INSERT INTO filler SELECT g, repeat('x', 200) FROM generate_series(1, 300000) g");
		for (my $i = 0; $filled && $i < 100; $i++)
		{
			my $lag = admin($primary,
				'SELECT pg_current_wal_lsn() - sent_lsn > 8 * 1024 * 1024 FROM pg_stat_replication');
			last if defined $lag && $lag eq 't';
			$filled = 0 if $i == 99;
			usleep(200_000);
		}
		admin($primary, 'TRUNCATE filler');
		my $burst = driver_far_burst();
		# now and then the lease worker is stopped while the reload happens
		my $worker = rand() < 0.75 ? lease_worker($primary) : undef;
		kill 'STOP', $worker if $worker;
		$fault_subs{'synchronous on'}->() eq 'on' or return 'failed';
		my $on = time();
		# the clients soon wait in commits; the driver asks for IDs only
		my $until = $on + 1.5 + rand(1.5);
		my ($calls, $returned, $max) = (0, 0, -1);
		while (time() < $until)
		{
			my $tb = time();
			my ($ret, $out) = $primary->psql('postgres',
				"SET statement_timeout = '500ms';
				 SELECT min(x)::bigint || ' ' || max(x)::bigint FROM nextflakes(1000) x",
				timeout => 10);
			$calls++ if $tb >= $on + 1;
			next unless $ret == 0 && $out =~ /^(\d+) (\d+)$/;
			open my $fh, '>>', "$work/ids.$lineage.0" or die;
			print $fh "$1 1 driver\n$2 1 driver\n";
			close $fh;
			next unless $tb >= $on + 1;
			$returned++;
			$max = max($max, $2);
		}
		kill 'CONT', $worker if $worker;
		return sprintf('%sburst %s, %s%d of %d calls after the reload returned, then failover: %s',
			$filled ? '' : 'connection not filled, ', $burst, $worker ? 'lease worker stopped, ' : '',
			$returned, $calls, failover($on + 1, $max));
	},
	'failover' => sub {
		return 'no standby' unless $standby;
		return failover();
	});

# Weights: the cheap faults often, the slow ones (failover) now and then.
my @menu = (
	[ 'kill backend', 2 ], [ 'kill postmaster', 2 ], [ 'kill lease worker', 1 ],
	[ 'stop lease worker', 2 ], [ 'restart fast', 1 ], [ 'restart immediate', 1 ],
	[ 'clock step', 4 ], [ 'node reload', 2 ], [ 'cancel', 2 ],
	[ 'state file unwritable', 1 ]);
push @menu, [ 'synchronous on', 3 ], [ 'synchronous off', 1 ], [ 'failover', 1 ],
  [ 'standby stalled', 3 ], [ 'synchronous on while stalled', 2 ]
  if $preload;
# --faults: only these (to replay one kind of fault at length)
if (defined $only_faults)
{
	my %want = map { $_ => 1 } split /\s*,\s*/, $only_faults;
	my @unknown = grep { my $w = $_; !grep { $_->[0] eq $w } @menu } sort keys %want;
	die 'unknown fault(s): ' . join(', ', @unknown) . '; the faults: '
	  . join(', ', map { $_->[0] } @menu) . "\n" if @unknown;
	@menu = grep { $want{ $_->[0] } } @menu;
}

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
	foreach my $c (1 .. $clients)
	{
		foreach (read_lines("$work/client$c.log"))
		{
			my @f = split / /;
			if ($f[0] eq 'C')
			{
				$sessions{ $f[1] } = { lineage => $f[2], cache => $f[3], connected => $f[5],
					guest => $f[6] };
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
					sid => $f[1], lineage => $f[2], kind => $f[3], cache => $f[4],
					tb => $f[5], ta => $f[6], t0 => $f[7], t1 => $f[8], n => $f[9],
					lo => $f[10], hi => $f[11], lo_ms => $f[12], hi_ms => $f[13],
					nodes => $f[14], sorted => $f[15] };
			}
			elsif ($f[0] eq 'E')
			{
				my $state = $f[6];
				my $msg = join(' ', @f[ 7 .. $#f ]);
				$state = 'connection' if $state =~ /^(08|S8)/ || $msg =~
				  /server closed the connection|terminating connection|no connection to the server|could not receive data|SSL SYSCALL|connection to server/;
				$errors{$state}++;
				# a guest's own view of the settings may fail its own calls
				push @bad_errors, "$f[1] $f[3]: $state $msg"
				  unless $allowed_states{$state} || $state eq 'connection'
				  || ($sessions{ $f[1] }{guest} && $guest_states{$state});
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
		%summary = (%summary, sessions => scalar(keys %sessions),
			"guests' sessions" => scalar(grep { $_->{guest} } values %sessions),
			statements => scalar(@stmts), IDs => $ids);
		$summary{"errors $_"} = $errors{$_} foreach keys %errors;
		# the checks are worth something only if every client got IDs
		my %per_client;
		$per_client{ (split /\./, $_->{sid})[0] }++ foreach @stmts;
		my @idle = grep { !$per_client{$_} } 1 .. $clients;
		is(scalar(@idle), 0, "$label: every client's statements returned IDs")
		  or diag("clients without a statement that returned: @idle");
	}

	# no ID twice within a lineage: the runs of all clients, sorted
	my @dups;
	foreach my $lin (0 .. $lineage)
	{
		my @files = grep { -s } map { "$work/ids.$lin.$_" } 0 .. $clients;
		next unless @files;
		my $sorted = "$work/sorted.$lin";
		open my $all, '>', "$sorted.in" or die;
		print $all "$_\n" foreach map { read_lines($_) } @files;
		close $all;
		system("LC_ALL=C sort -n -k1,1 -S 20% -o '$sorted' '$sorted.in'") == 0
		  or die 'sort failed';
		open my $in, '<', $sorted or die;
		my ($end, $who) = (-1, '');
		while (<$in>)
		{
			my ($start, $len, $sid) = split;
			push @dups, "lineage $lin: $start (sessions $who and $sid)"
			  if $start <= $end && @dups < 5;
			($end, $who) = ($start + $len - 1, $sid) if $start + $len - 1 > $end;
		}
		close $in;
		unlink "$sorted.in", $sorted;
	}
	is(scalar(@dups), 0, "$label: no ID returned twice ($ids IDs)")
	  or diag("returned twice: @dups");

	my @unsorted = map { "$_->{sid} $_->{kind}" } grep { !$_->{sorted} } @stmts;
	is(scalar(@unsorted), 0, "$label: each session's IDs strictly increasing")
	  or diag("not increasing: @unsorted[0 .. min(4, $#unsorted)]");

	# an ID returned before a cache = 1 statement began is below its IDs
	my @order_bad;
	foreach my $lin (0 .. $lineage)
	{
		my @done = sort { $a->{ta} <=> $b->{ta} } grep { $_->{lineage} == $lin } @stmts;
		my @by_start = sort { $a->{tb} <=> $b->{tb} }
		  grep { $_->{lineage} == $lin && $_->{cache} == 1 } @stmts;
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
	}
	is(scalar(@order_bad), 0,
		"$label: an ID returned before a statement began is below its IDs (cache = 1)")
	  or diag(join("\n", @order_bad));

	# after a crash, restart or synchronous failover: above all before
	my @barrier_bad;
	foreach my $b (@barriers)
	{
		next unless $b->{lineage_before} == $b->{lineage_after} || defined $b->{since};
		my $before = max($b->{before_max}, map { $_->{hi} }
			grep { $_->{lineage} == $b->{lineage_before} && $sessions{ $_->{sid} }{connected} < $b->{start} && $_->{ta} <= $b->{end}
				  && (!defined $b->{since} || $_->{tb} >= $b->{since}) } @stmts);
		my @after = grep { $_->{lineage} == $b->{lineage_after} && $sessions{ $_->{sid} }{connected} > $b->{end} } @stmts;
		my $lowest = min(map { $_->{lo} } @after);
		push @barrier_bad, "$b->{kind} at $b->{start}: $lowest not above $before"
		  if defined $lowest && $lowest <= $before;
	}
	is(scalar(@barrier_bad), 0,
		"$label: after each of " . scalar(@barriers) . ' restarts and failovers, IDs above every earlier one')
	  or diag(join("\n", @barrier_bad));

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

	# the servers' logs: no crash but the injected kills
	my @crashes;
	foreach my $node (@all_nodes)
	{
		my $log = slurp_file($node->logfile);
		push @crashes, $node->name . ": $1"
		  while $log =~ /(terminated by signal (?!9\b)\d+[^\n]*|PANIC:[^\n]*|TRAP:[^\n]*)/g;
	}
	is(scalar(@crashes), 0, "$label: the servers' logs show no crash but the injected ones")
	  or diag(join("\n", @crashes[0 .. min(4, $#crashes)]));
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
		my $fault = pick_fault();
		my $what = $fault_subs{$fault}->();
		$faults{$fault}++ unless $fault eq 'failover';
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
diag('faults: ' . join(', ', map { "$_ $faults{$_}" } sort keys %faults));
done_testing();
