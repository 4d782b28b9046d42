# Parallel workers without preloading (PostgreSQL 17 and later): a
# parallel worker loads the library with the server's configuration and
# then takes its leader's settings, which PostgreSQL first resets to their
# defaults.  A worker therefore never sets the generator up, records or
# changes its layout or node id, whoever its leader is; and the worker of a
# session whose settings came from elsewhere refuses to generate, as its
# leader does (55P02).  The configuration here is not the default layout
# (epoch 2024-01-01, 12 node bits, node id 1), so that IDs made or decoded
# with the defaults would show.
#
# Each case starts the server afresh, so that a parallel worker is the
# first process to touch the generator: through debug_parallel_query, and
# through a real parallel scan of a table.
#
# Last, the lease worker's background worker slot: with 3 slots, 3
# sleeping parallel queries keep it out, and the first call fails after
# 10 s (55000); with max_parallel_workers = 2, the call generates at once.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node(
	'parallel_workers',
	preload => 0,
	node_id => 1,
	conf    => q{
flakeid.epoch = '2024-01-01 00:00:00+00'
flakeid.node_bits = 12
max_worker_processes = 16
max_parallel_workers = 8
});
$node->start;
plan skip_all => 'generation without preloading needs PostgreSQL 17 or later'
  if $node->safe_psql('postgres', 'SHOW server_version_num') < 170000;
$node->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE ROLE app LOGIN;
GRANT pg_read_all_data TO app;
CREATE TABLE big AS SELECT g FROM generate_series(1, 200000) g;
ANALYZE big;
});

# Plans that run in parallel workers: debug_parallel_query puts a whole
# query into one worker; the other settings make a parallel scan of big.
my $in_worker = "SET debug_parallel_query = on;\n";
my $parallel_scan = q{
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 4;
SET parallel_leader_participation = off;
};

# IDs made in the workers of a parallel scan of big: how many, whether all
# are distinct, whether all decode to node 1 and to a time near the clock
# under the configured layout, as one line.  With a timestamp near the
# clock under epoch 2024, an ID made with the default epoch (2020) would
# decode four years ahead.
my $scan_ids = q{
SELECT count(*) || ' ' || (count(*) = count(DISTINCT id)) || ' '
	|| bool_and(flakeid_node(id) = 1) || ' '
	|| bool_and(flakeid_timestamp(id) BETWEEN now() - interval '1 minute'
		AND clock_timestamp() + interval '10 s')
FROM (SELECT nextflake() AS id FROM big) s};

# The decode of an ID by a parallel worker (read from a table, so that the
# planner does not fold it): its millisecond counts from the configured
# epoch, and its node bits are the configured ones.
my $decode_in_worker = $in_worker . q{
SELECT flakeid_timestamp((g - 1)::bigint::flakeid) = '2024-01-01 00:00:00+00',
	flakeid_node((g + 1023)::bigint::flakeid)
FROM big WHERE g = 1};

# Run SQL as role app with connection options; (exit code, stdout,
# stderr, SQLSTATE).
sub as_app_with
{
	my ($options, $sql) = @_;
	local $ENV{PGOPTIONS} = $options;
	return psql_state($node, $sql, user => 'app');
}

# Assert that the generator has the configured layout and node id, as
# flakeid_status() and the state file show, and that a session of the
# configuration generates with them.
sub generator_configured
{
	my ($case) = @_;
	is( $node->safe_psql('postgres',
			'SELECT state, node_id, node_bits, epoch FROM flakeid_status()'),
		'ready|1|12|2024-01-01 00:00:00+00',
		"$case: the generator has the configured node id and layout");
	my ($ret, $out, $err) = as_app_with('', $scan_ids);
	is($out, '200000 true true true',
		"$case: a session of the configuration generates with them in parallel workers")
	  or diag($err);
	is( $node->safe_psql('postgres', q{
SELECT bool_and(valid AND node_bits = 12 AND epoch = '2024-01-01 00:00:00+00')
FROM flakeid_state_file() WHERE version > 1}),
		't', "$case: the state file records the configured layout");
	return;
}

# Whether a query as role app runs in parallel workers.
my ($ret, $out, $err) = as_app_with('', "$parallel_scan
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM (SELECT nextflake() FROM big) s;");
like($out, qr/Workers Launched: [1-9]/, 'a scan of big runs in parallel workers')
  or diag("$out\n$err");
($ret, $out, $err) = as_app_with('', "$in_worker
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT nextflake();");
like($out, qr/Workers Launched: 1/, 'debug_parallel_query runs a call in a worker')
  or diag("$out\n$err");

# 1. A session whose settings are the configuration's: its worker is the
# first to touch the generator, and does not set it up itself.  A decode
# needs no lease: the lease worker runs only because it set the generator
# up.
foreach my $plan ([ 'debug_parallel_query', $in_worker . 'SELECT nextflake()' ],
	[ 'a parallel scan', $parallel_scan . $scan_ids ],
	[ 'a decode in a worker', $decode_in_worker ])
{
	my ($how, $sql) = @$plan;
	$node->restart;
	($ret, $out, $err) = as_app_with('', "SELECT '1'::flakeid;\n$sql");
	is($ret, 0, "configured session, $how first: succeeds") or diag($err);
	is( $node->safe_psql('postgres',
			q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'flakeid lease worker'}),
		'1', "configured session, $how first: the lease worker set the generator up")
	  if $how eq 'a decode in a worker';
	generator_configured("configured session, $how first");
}

# 2. A session given settings from elsewhere loads the library without
# touching the generator, then lets a worker be the first to touch it.
foreach my $case (
	[ '-c flakeid.epoch=2000-01-01', 'flakeid.epoch' ],
	[ '-c flakeid.node_bits=10',     'flakeid.node_bits' ],
	[ '-c flakeid.node_id=7',        'flakeid.node_id' ])
{
	my ($opts, $name) = @$case;
	foreach my $plan (
		[ 'debug_parallel_query', $in_worker . 'SELECT nextflake()' ],
		[ 'a parallel scan', $parallel_scan . $scan_ids ],
		[ 'a decode in a worker', $decode_in_worker ])
	{
		my ($how, $sql) = @$plan;
		my $case_name = "$opts, $how first";
		$node->restart;
		($ret, $out, $err, my $state) =
		  as_app_with($opts, "SELECT '1'::flakeid;\n$sql");
		if ($how eq 'a decode in a worker')
		{
			is($out, "1\nt|1",
				"$case_name: the worker decodes with the configured layout")
			  or diag($err);
		}
		else
		{
			is($state, '55P02', "$case_name: the worker refuses to generate, as its leader does")
			  or diag("stdout: $out\nstderr: $err");
			like($err, qr/parameter "\Q$name\E" of this session was set outside the server's configuration/,
				"$case_name: the error names the parameter");
			unlike($out, qr/^\d{10,}$/m, "$case_name: no ID is returned");
		}
		generator_configured($case_name);

		# the same session, once the generator is set up, and its
		# workers: still refused, and decoding as configured
		($ret, $out, $err, $state) = as_app_with($opts,
			"${in_worker}SELECT nextflake()");
		is($state, '55P02', "$case_name: later, its worker still refuses")
		  or diag("stdout: $out\nstderr: $err");
		($ret, $out, $err) = as_app_with($opts, $decode_in_worker);
		is($out, "t|1", "$case_name: and decodes with the configured layout")
		  or diag($err);
	}
}

# 2b. Such a session's first use of flakeid is inside a parallel query: a
# function that only the leader may run (PARALLEL RESTRICTED) decodes the
# rows of a parallel scan, and the library loads in the leader while the
# query runs in parallel mode.  The query works, and the session's later
# workers still refuse to generate.
$node->safe_psql('postgres', q{
CREATE FUNCTION node_of(bigint) RETURNS int LANGUAGE plpgsql PARALLEL RESTRICTED
AS $$BEGIN RETURN flakeid_node($1::flakeid); END$$;});
foreach my $opts ('-c flakeid.epoch=2000-01-01', '-c flakeid.node_id=7')
{
	($ret, $out, $err, my $state) = as_app_with($opts,
		"${in_worker}SELECT node_of((g + 1023)::bigint) FROM big WHERE g = 1;\nSELECT nextflake();");
	is($out, '1', "$opts, the library loaded inside a parallel query: it decodes")
	  or diag($err);
	is($state, '55P02', "$opts, the library loaded inside a parallel query: a later worker refuses")
	  or diag($err);
}

# 3. After a restart the generator is as configured: the layout it
# recorded is the configuration's.
$node->restart;
($ret, $out, $err) = as_app_with('', $scan_ids);
is($out, '200000 true true true', 'after a restart: generates as configured')
  or diag($err);
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'ready', 'after a restart: the layout recorded is the configured one');
$node->stop;

# 4. The lease worker takes a background worker slot when a call first
# needs it.  Parallel queries that hold every slot keep it from starting
# (the call fails after 10 s, 55000); with max_parallel_workers one below
# the slots, the slot stays free for it.
my $slots = flake_node(
	'worker_slots',
	preload => 0,
	node_id => 1,
	conf    => q{
max_worker_processes = 3
max_logical_replication_workers = 0
});
foreach my $parallel (3, 2)
{
	$slots->append_conf('postgresql.conf', "max_parallel_workers = $parallel");
	$slots->start;
	$slots->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS flakeid');
	$slots->restart;
	my @sleepers = map {
		my $s = $slots->background_psql('postgres');
		$s->query_until(qr/sleeping/, "SET debug_parallel_query = on;\n"
			  . "SET parallel_leader_participation = off;\n\\echo sleeping\n"
			  . "SELECT pg_sleep(20);\n");
		$s;
	} 1 .. 3;
	wait_until(
		sub {
			$slots->safe_psql('postgres',
				q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'})
			  == $parallel;
		},
		10);
	($ret, $out, $err, my $state) = psql_state($slots, 'SELECT nextflake() > 0');
	if ($parallel == 3)
	{
		is($state, '55000', 'every worker slot taken by parallel queries: the first call fails')
		  or diag("$out\n$err");
		like($err, qr/timed out waiting for the flakeid lease worker/,
			'and says that it waited for the lease worker');
	}
	else
	{
		is($out, 't', 'max_parallel_workers below the slots: the first call generates')
		  or diag($err);
	}
	$slots->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE query = 'SELECT pg_sleep(20);' AND backend_type = 'client backend'});
	# their psql ended with the backend
	eval { $_->quit } foreach @sleepers;
	$slots->stop;
}

done_testing();
