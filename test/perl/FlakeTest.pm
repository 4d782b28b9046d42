# The core helpers of flakeid's TAP tests: nodes, queries, SQLSTATEs, the
# generator's status and state file, and checks of generated IDs by their
# properties.  Clock and crash faults are in FlakeFault.pm.

package FlakeTest;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(
  flake_node psql_as psql_state sqlstate_of fails_with start_fails
  settings_locked status_of state_file_copies lease_on_disk ids_unique ids_increasing
  increasing_sql tick_sql wait_until ids_come_again start_pgbench insert_together calls_must_wait
  CLOCKED_TABLE_SQL insert_clocked calls_ended_before ids_at_their_clock
  check_two_primaries two_primaries_digest_sql run_timeout catch_up
  FLAKE_LOW_BITS THROUGH_PROMOTION_SQL
);

# Every psql call of the tests (psql, safe_psql, and what calls them) is
# bounded: without a timeout of its own it gets the harness's default
# (PG_TEST_TIMEOUT_DEFAULT, 180 s), and a call that runs past it dies, so
# that a hang fails the test instead of stalling the run.
{
	no warnings 'redefine';
	my $psql = \&PostgreSQL::Test::Cluster::psql;
	*PostgreSQL::Test::Cluster::psql = sub {
		my ($self, $dbname, $sql, %params) = @_;
		$params{timeout} //= $PostgreSQL::Test::Utils::timeout_default;
		return $psql->($self, $dbname, $sql, %params);
	};
}

# test/run coverage: a node still running when its test ends stops with a
# fast shutdown instead of the harness's immediate one, so that its
# processes (the lease worker, a standby's startup process) exit normally
# and write their coverage counters.  A process the test left stopped
# (SIGSTOP) is let go first; a node that does not stop within 30 s stops
# the immediate way.
if ($ENV{FLAKE_COVERAGE})
{
	no warnings 'redefine';
	my $teardown = \&PostgreSQL::Test::Cluster::teardown_node;
	*PostgreSQL::Test::Cluster::teardown_node = sub {
		my ($self, %params) = @_;
		my $pid = $self->{_pid};
		if (defined $pid)
		{
			foreach my $stat (glob '/proc/[0-9]*/stat')
			{
				open my $fh, '<', $stat or next;
				my $line = <$fh> // '';
				close $fh;
				kill 'CONT', $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) / && $2 == $pid;
			}
			kill 'CONT', $pid;
			local $ENV{PGCTLTIMEOUT} = 30;
			return if $self->stop('fast', fail_ok => 1);
		}
		return $teardown->($self, %params);
	};
}

# The timeout of a command the tests start themselves (pgbench, pg_dump):
# the harness's default, or $seconds.
sub run_timeout
{
	my ($seconds) = @_;
	return IPC::Run::timeout($seconds // $PostgreSQL::Test::Utils::timeout_default);
}

# The low bits of an ID, shared by the node id and the sequence: the one
# fact of the layout the tests cannot ask the server for.  Everything else
# (node bits, sequence bits) comes from flakeid_status() or the settings.
use constant FLAKE_LOW_BITS => 22;

# A function for sessions that call through a promotion:
# through_promotion(calls) runs in one statement begun on a server in
# recovery, takes the standby's refusal (25006) and tries again until it
# is promoted, then returns the IDs of `calls` calls of nextflakes(64),
# each with the clock (ms since 1970) before and after its call (x, t0,
# t1).  Create it on the primary before the standby's base backup.
use constant THROUGH_PROMOTION_SQL => q{
CREATE FUNCTION through_promotion(calls int, OUT x bigint, OUT t0 bigint, OUT t1 bigint)
RETURNS SETOF record LANGUAGE plpgsql AS $f$
DECLARE
	got int := 0;
	deadline timestamptz := clock_timestamp() + interval '120 s';
	started bigint;
BEGIN
	WHILE got < calls LOOP
		BEGIN
			started := floor(extract(epoch FROM clock_timestamp()) * 1000);
			RETURN QUERY SELECT id::bigint, started,
				floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM nextflakes(64) id;
			got := got + 1;
		EXCEPTION WHEN read_only_sql_transaction THEN
			IF clock_timestamp() > deadline THEN
				RAISE EXCEPTION 'the server was not promoted';
			END IF;
			PERFORM pg_sleep(0.002);
		END;
	END LOOP;
END
$f$;};

# A new, initialised but not started node.  Options:
#   preload   => 0 to leave flakeid out of shared_preload_libraries
#   node_id   => the flakeid.node_id to write into postgresql.conf
#   conf      => more postgresql.conf lines
#   streaming => 1 for a primary that standbys can be made from
#   archiving => 1 for a primary that archives its WAL
#   quiet     => 1 for tests that run millions of statements: no statement
#                logging, room for background workers
#   initdb    => more initdb arguments (an array ref)
#   install_path => another installation of PostgreSQL and flakeid (an
#                older flakeid: FLAKE_OLD_INSTALL)
sub flake_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $opts{install_path} ? (install_path => $opts{install_path}) : ());

	$node->init(
		allows_streaming => $opts{streaming} ? 1 : 0,
		has_archiving    => $opts{archiving} ? 1 : 0,
		extra            => $opts{initdb} // []);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'flakeid'")
	  unless defined $opts{preload} && !$opts{preload};
	$node->append_conf('postgresql.conf', "flakeid.node_id = $opts{node_id}")
	  if defined $opts{node_id};
	$node->append_conf(
		'postgresql.conf', q{
max_worker_processes = 16
log_statement = none
log_min_duration_statement = -1
}) if $opts{quiet};
	$node->append_conf('postgresql.conf', $opts{conf}) if defined $opts{conf};
	# test/run cache: every server with blocks of IDs per backend
	$node->append_conf('postgresql.conf', "flakeid.cache = $ENV{FLAKE_TAP_CACHE}")
	  if $ENV{FLAKE_TAP_CACHE};
	return $node;
}

# Wait until $standby has replayed (mode => 'flush': flushed) the WAL that
# $primary has written; via => the standby it streams from, for a cascaded
# one.  A transaction with an XID commits on $primary first (without
# waiting for synchronous standbys), so that the position waited for ends
# a record: after a base backup the insert position follows a WAL segment
# switch with nothing after it, and PostgreSQL 19's wait_for_catchup (WAIT
# FOR LSN on the standby) then waits for whatever record a background
# process writes next, 20 s here.  A commit that ends a WAL page leaves the
# insert position past the next page's header, so another one follows.
sub catch_up
{
	my ($primary, $standby, %opts) = @_;
	my $lsn;
	do
	{
		$primary->safe_psql('postgres',
			"SET synchronous_commit = local;\nSELECT pg_current_xact_id();");
		$lsn = $primary->lsn('insert');
	} while (hex((split m{/}, $lsn)[1]) % 8192 <= 40);    # a page header's size
	($opts{via} // $primary)->wait_for_catchup($standby, $opts{mode} // 'replay', $lsn);
	return;
}

# Run SQL with verbose error messages (they carry the SQLSTATE), as the
# bootstrap superuser or as the role given by user =>, in database db =>
# (default postgres).  Returns (exit code, stdout, stderr).
sub psql_as
{
	my ($node, $sql, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my $connstr = $node->connstr($db);
	$connstr .= " user=$opts{user}" if defined $opts{user};

	my ($ret, $out, $err) = $node->psql(
		$db, $sql,
		connstr      => $connstr,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($ret, $out, $err);
}

# The SQLSTATE of the first error in verbose psql output, or undef.
sub sqlstate_of
{
	my ($err) = @_;
	return undef unless defined $err;
	return $err =~ /\b(?:ERROR|FATAL|PANIC):  ([0-9A-Z]{5}):/ ? $1 : undef;
}

# psql_as, and the SQLSTATE of the first error (or undef) as a fourth value.
sub psql_state
{
	my ($node, $sql, %opts) = @_;
	my ($ret, $out, $err) = psql_as($node, $sql, %opts);
	return ($ret, $out, $err, sqlstate_of($err));
}

# Calls that need IDs the synchronous standbys have not confirmed, one
# after another, each in a session of its own with a 500 ms statement
# timeout: each must wait and fail (with the statement timeout, 57014, or
# the lease's own bound, 55000), never return an ID.  One after another:
# a call that comes half a second or more after the one before checks
# later states of the standbys and of the lease worker's reading, whose
# own bound is 50 ms (run at once, the three let a mutant of that reading
# survive 059).  Asserts it for
# each, as "$phase: CALL $what"; returns the IDs returned anyway.
sub calls_must_wait
{
	my ($node, $phase, $what) = @_;
	my @returned;
	foreach my $call ('SELECT nextflake()', 'SELECT nextflakes(50000)',
		'SELECT nextflakes(1) FROM generate_series(1, 3)')
	{
		my ($ret, $out, $err, $state) = psql_state($node,
			"SET statement_timeout = '500ms';\n$call;");
		push @returned, grep { /^\d+$/ } split /\n/, $out;
		ok($ret != 0 && defined $state && $state =~ /^(57014|55000)$/, "$phase: $call $what")
		  or diag("exit code $ret, SQLSTATE " . ($state // 'none') . "\n$err");
	}
	return @returned;
}

# Assert that SQL fails with an ERROR of the given SQLSTATE (or of one of
# several, as in "55P02|42501"); returns the error text (with DETAIL and
# HINT lines) for further checks.
sub fails_with
{
	my ($node, $sql, $sqlstate, $test_name, %opts) = @_;
	my ($ret, $out, $err, $state) = psql_state($node, $sql, %opts);

	ok($ret != 0 && defined $state && $state =~ /^(?:$sqlstate)$/,
		"$test_name: fails with SQLSTATE $sqlstate")
	  or diag("exit code $ret\nstdout: $out\nstderr: $err");
	return $err;
}

# Assert that the node refuses to start and that its log, from this start
# on, matches every pattern given.  A node that starts all the same is
# stopped again, so that the test can go on.
sub start_fails
{
	my ($node, $test_name, @patterns) = @_;
	my $offset = -s $node->logfile // 0;

	my $started = $node->start(fail_ok => 1);
	ok(!$started, "$test_name: server refuses to start");
	$node->stop if $started;
	my $log = slurp_file($node->logfile, $offset);
	like($log, $_, "$test_name: log says why") foreach @patterns;
	return;
}

# Assert that role $user, connected to database $db (which it may own),
# cannot give parameter $guc the value $value by any means a session has:
# SET, SET LOCAL, set_config(), ALTER ROLE ... SET, ALTER DATABASE ... SET,
# a function's SET clause, ALTER SYSTEM and the connection's options.  The
# setting, as new sessions see it, must stay unchanged.
sub settings_locked
{
	my ($node, $user, $db, $guc, $value) = @_;
	my $before = $node->safe_psql($db, "SHOW $guc");
	my $who = "$user may not set $guc";
	my %as = (user => $user, db => $db);

	fails_with($node, "SET $guc = '$value'", '55P02|42501',
		"$who: SET", %as);
	fails_with($node, "BEGIN; SET LOCAL $guc = '$value'",
		'55P02|42501', "$who: SET LOCAL", %as);
	fails_with($node, "SELECT set_config('$guc', '$value', false)",
		'55P02|42501', "$who: set_config()", %as);
	fails_with($node, "ALTER ROLE CURRENT_USER SET $guc = '$value'",
		'55P02|42501', "$who: ALTER ROLE SET", %as);
	fails_with($node, "ALTER DATABASE \"$db\" SET $guc = '$value'",
		'55P02|42501', "$who: ALTER DATABASE SET", %as);
	fails_with(
		$node,
		"CREATE FUNCTION pg_temp.sneaky() RETURNS text LANGUAGE sql "
		  . "SET $guc = '$value' AS \$\$SELECT current_setting('$guc')\$\$",
		'55P02|42501',
		"$who: function SET clause",
		%as);
	fails_with($node, "ALTER SYSTEM SET $guc = '$value'",
		'42501', "$who: ALTER SYSTEM", %as);

	# a connection's startup options: refused, or at least without effect.
	# The query goes with -c, not on psql's standard input: a server that
	# refuses the connection would close that pipe under a writer.
	{
		local $ENV{PGOPTIONS} = "-c $guc=$value";
		my ($out, $err) = ('', '');
		my $ok = IPC::Run::run(
			[
				'psql', '-X', '-A', '-t', '-d',
				$node->connstr($db) . " user=$user", '-c', "SHOW $guc"
			],
			'<', \undef, '>', \$out, '2>', \$err, run_timeout());
		chomp $out;
		ok(!$ok || $out eq $before,
			"$who: connection option leaves it unchanged")
		  or diag("stdout: $out\nstderr: $err");
	}

	my (undef, $after) = psql_as($node, "SHOW $guc", %as);
	is($after, $before, "$who: still $before");
	return;
}

# Run a query through a node or a background psql session.
sub query_via
{
	my ($via, $sql) = @_;
	return $via->isa('PostgreSQL::Test::Cluster')
	  ? $via->safe_psql('postgres', $sql)
	  : $via->query_safe($sql);
}

# flakeid_status() as a hash (columns as psql prints them).
sub status_of
{
	my ($via) = @_;
	my @cols = qw(state node_id node_bits epoch last_id last_time lead_ms
	  lease_end issued waits clock_steps_back started);
	my $line =
	  query_via($via, 'SELECT ' . join(', ', @cols) . ' FROM flakeid_status()');
	my %status;
	@status{@cols} = split /\|/, $line, -1;
	return \%status;
}

# The copies of the time lease in a node's state file, as the server reads
# them (flakeid_state_file()): a list of hashes, in file order.  The format
# of the file is defined in src/statefile.c alone.
sub state_file_copies
{
	my ($via) = @_;
	my @cols = qw(offset valid version serial node_bits node_id lease_end_ms);
	my $rows = query_via($via,
		'SELECT "offset", valid, version, serial, node_bits, node_id, lease_end_ms '
		  . 'FROM flakeid_state_file() ORDER BY "offset"');
	my @copies;
	foreach my $line (split /\n/, $rows)
	{
		my %copy;
		@copy{@cols} = split /\|/, $line, -1;
		push @copies, \%copy;
	}
	return @copies;
}

# The lease end on disk, in ms since the flakeid epoch: the newest valid
# copy's (undef when none is valid).
sub lease_on_disk
{
	my ($via) = @_;
	my ($newest) = sort { $b->{serial} <=> $a->{serial} }
	  grep { $_->{valid} eq 't' } state_file_copies($via);
	return $newest ? $newest->{lease_end_ms} : undef;
}

# Assert that a query's column id holds no duplicate; returns the count.
sub ids_unique
{
	my ($node, $query, $test_name) = @_;
	my ($total, $distinct) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT count(*), count(DISTINCT id) FROM ($query) AS ids");
	is($total - $distinct, 0, "$test_name: no duplicate among $total IDs");
	return $total;
}

# SQL that is true when the column id of a query is unique and strictly
# increasing in the order of column $order (within each group of column
# $partition, when given).
sub increasing_sql
{
	my ($query, $order, $partition) = @_;
	my $over =
	  defined $partition
	  ? "PARTITION BY $partition ORDER BY $order"
	  : "ORDER BY $order";
	return qq{
	SELECT count(*) = count(DISTINCT id) AND coalesce(bool_and(id > prev), true)
	FROM (SELECT id, lag(id) OVER ($over) AS prev FROM ($query) AS q) AS s};
}

# Assert that the IDs of a query are unique and strictly increasing in the
# order of $order (within each $partition).
sub ids_increasing
{
	my ($node, $query, $order, $test_name, %opts) = @_;
	is($node->safe_psql($opts{db} // 'postgres',
			increasing_sql($query, $order, $opts{partition})),
		't', "$test_name: unique and strictly increasing");
	return;
}

# SQL for the generator's tick of an ID expression: milliseconds and
# sequence without the node bits, for a layout of $node_bits node bits.
# Consecutive IDs of one node have consecutive ticks.
sub tick_sql
{
	my ($expr, $node_bits) = @_;
	my $seq_bits = FLAKE_LOW_BITS - ($node_bits // 10);
	return "(((($expr)::bigint >> "
	  . FLAKE_LOW_BITS
	  . ") << $seq_bits) | (($expr)::bigint & "
	  . ((1 << $seq_bits) - 1) . "))";
}

# Poll $cond (a code ref) every $interval seconds until it returns true or
# $timeout seconds have passed; returns its last result.
sub wait_until
{
	my ($cond, $timeout, $interval) = @_;
	my $deadline = time() + $timeout;
	my $result;

	until (($result = $cond->()) || time() > $deadline)
	{
		usleep(int(($interval // 0.1) * 1_000_000));
	}
	return $result;
}

# Run $sql (default: one nextflake()) on $node until it succeeds, for at
# most $timeout seconds: whether IDs come again after a fault ends.
sub ids_come_again
{
	my ($node, $timeout, $sql) = @_;
	return wait_until(sub { (psql_state($node, $sql // 'SELECT nextflake()'))[0] == 0 },
		$timeout);
}

# Start pgbench in the background on a script of one SQL line; returns the
# IPC::Run handle and references to its standard output and error.
sub start_pgbench
{
	my ($node, $name, $sql, $timeout, @options) = @_;
	my $script = $node->basedir . "/$name.sql";
	my ($out, $err) = ('', '');

	PostgreSQL::Test::Utils::append_to_file($script, "$sql\n");
	my $handle = IPC::Run::start(
		[
			'pgbench', '-n', @options, '-f', $script,
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err,
		run_timeout($timeout));
	return ($handle, \$out, \$err);
}

# A table t whose defaults read the clock before (t0) and after (t1)
# nextflake(), in column order; sess is the inserting pgbench client.
use constant CLOCKED_TABLE_SQL => q{
CREATE EXTENSION flakeid;
CREATE TABLE t (
	ord bigserial,
	sess int NOT NULL,
	t0 timestamptz NOT NULL DEFAULT clock_timestamp(),
	id flakeid PRIMARY KEY DEFAULT nextflake(),
	t1 timestamptz NOT NULL DEFAULT clock_timestamp());
};

# Four pgbench clients insert 100 rows a statement into that table t,
# $txns statements each; asserts that all ran and that each inserted.
sub insert_clocked
{
	my ($node, $txns) = @_;
	my ($bench, $out, $err) = start_pgbench($node, 'insert100_clocked',
		'INSERT INTO t (sess) SELECT :client_id FROM generate_series(1, 100);',
		600, '-c', '4', '-j', '2', '-t', $txns);
	ok($bench->finish, 'pgbench ran without error') or diag($$err);
	my $all = 4 * $txns;
	like($$out, qr/number of transactions actually processed: $all\/$all/,
		"pgbench ran all $all transactions");
	is($node->safe_psql('postgres', 'SELECT count(DISTINCT sess) FROM t'),
		'4', 'four sessions inserted');
	return;
}

# Assert that no ID of table t is behind the clock at its call, nor further
# ahead of it than flakeid.max_lead.
sub ids_at_their_clock
{
	my ($node) = @_;
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM t
WHERE flakeid_timestamp(id) < date_trunc('milliseconds', t0)
   OR flakeid_timestamp(id) > t1 + current_setting('flakeid.max_lead')::interval}),
		'0',
		'no ID is behind the clock at its call, nor further ahead than flakeid.max_lead');
	return;
}

# Order across the sessions of table t: for each row, the largest ID of the
# calls whose t1 lies before $bound (an SQL expression of the row's t0).
# Returns how many rows have such calls, and how many of those have an ID
# that is not above that largest ID.
sub calls_ended_before
{
	my ($node, $bound) = @_;
	$node->safe_psql(
		'postgres', q{
CREATE TABLE ended AS
	SELECT t1, max(id::bigint) OVER (ORDER BY t1, id) AS max_before FROM t;
CREATE INDEX ON ended (t1);
ANALYZE ended;
});
	return split /\|/, $node->safe_psql(
		'postgres', qq{
SELECT count(*) FILTER (WHERE prior IS NOT NULL),
	   count(*) FILTER (WHERE prior >= id::bigint)
FROM (SELECT id,
			 (SELECT max_before FROM ended e WHERE e.t1 < $bound
			  ORDER BY e.t1 DESC LIMIT 1) AS prior
	  FROM t) s});
}

# Several servers insert into their table events (origin, n, body) at the
# same time, each with pgbench: $opts{clients} clients run $opts{txns}
# batches of $opts{batch} rows, origin the server's number, pausing
# $opts{pause_ms} between batches.  nodes => [[$node, $number], ...].
# Asserts that every run finishes without a failed transaction.
sub insert_together
{
	my (%opts) = @_;
	my $tmp = PostgreSQL::Test::Utils::tempdir;
	my @runs;

	foreach my $pair (@{ $opts{nodes} })
	{
		my ($node, $id) = @$pair;
		my $script = "$tmp/insert_$id.sql";
		my ($out, $err) = ('', '');

		PostgreSQL::Test::Utils::append_to_file($script,
			    "INSERT INTO events (origin, n, body) "
			  . "SELECT $id, g, md5(g::text || random()::text) "
			  . "FROM generate_series(1, $opts{batch}) g;\n"
			  . "\\sleep $opts{pause_ms} ms\n");
		my $h = IPC::Run::start(
			[
				$node->installed_command('pgbench'), '-n',
				'-f', $script, '-c', $opts{clients}, '-j', $opts{clients},
				'-t', $opts{txns}, '-h', $node->host, '-p', $node->port,
				'postgres'
			],
			'>', \$out, '2>', \$err, run_timeout(600));
		push @runs, [ $id, $h, \$out, \$err ];
	}
	foreach my $run (@runs)
	{
		my ($id, $h, $out, $err) = @$run;
		ok($h->finish, "server $id: pgbench load finished")
		  or diag("stdout:\n$$out\nstderr:\n$$err");
		my ($failed) = $$out =~ /number of failed transactions: (\d+)/;
		ok(!$failed, "server $id: no failed transactions");
	}
	return;
}

# Two servers (numbers 1 and 2) that replicate their table events (origin,
# n, body, legacy bigserial) to each other: assert that they hold the same
# rows, decoded alike, every row once with no duplicate ID and none sent
# back (server 1 also has $opts{preload} rows from before the load), each
# row decoding to the server that made it, and that their bigserial columns
# handed out the same numbers.  Returns the SQL of the rows' digest.
sub check_two_primaries
{
	my ($n1, $n2, %opts) = @_;
	my ($total, $preload, $load) = @opts{qw(total preload load)};

	is( $n1->safe_psql('postgres', two_primaries_digest_sql()),
		$n2->safe_psql('postgres', two_primaries_digest_sql()),
		'both servers hold the same rows, decoded alike');
	foreach my $node ($n1, $n2)
	{
		my $name = $node->name;
		is( $node->safe_psql(
				'postgres',
				q{SELECT count(*) || ' ' || count(DISTINCT id) || ' '
				  || count(*) FILTER (WHERE origin = 1) || ' '
				  || count(*) FILTER (WHERE origin = 2)
				  FROM events}),
			"$total $total " . ($preload + $load) . " $load",
			"$name: every row once, no duplicate ID, none sent back");
		is( $node->safe_psql(
				'postgres',
				'SELECT count(*) FROM events WHERE flakeid_node(id) <> origin'),
			'0',
			"$name: every row decodes to the node that made it");
	}
	# A sequence is per server and is not replicated: both servers handed
	# out the same numbers, which a bigserial key could not have held.
	cmp_ok(
		$n1->safe_psql(
			'postgres', q{
			SELECT count(*) FROM (
				SELECT legacy FROM events GROUP BY legacy
				HAVING count(DISTINCT origin) = 2) s}),
		'>=', $load,
		'the bigserial column has the same values from both servers');
	return;
}

# The digest of a server's table events: its rows and their decoded IDs.
sub two_primaries_digest_sql
{
	return q{
	SELECT count(*) || ' ' || md5(string_agg(
			format('%s|%s|%s', to_jsonb(e), flakeid_node(id),
				flakeid_sequence(id)),
			',' ORDER BY id))
	FROM events e};
}

1;
