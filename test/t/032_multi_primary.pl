# Multi-primary with PostgreSQL's built-in logical replication: two servers,
# flakeid node ids 1 and 2, both insert into the same table with DEFAULT
# nextflake() while each subscribes to the other with origin = none, so that
# a change made on one server goes to the other and no further.
#
# Then the limits that the README names, each shown on the same pair:
#   - a sequence on the same table hands out the same numbers on both
#     servers, where the flakeid key never collides;
#   - DDL is not replicated: a column added on one server stops the other's
#     apply until it is added there too, and then the rows arrive;
#   - a node id used by both servers makes the same IDs on both, and the
#     first duplicate stops replication (here: disables the subscriptions).
#
# origin = none exists from PostgreSQL 16 on.  On 15 the same topology is
# tested with pglogical in 033_multi_primary_pglogical.pl.
#
# Generated IDs are checked by their properties and never printed.

use strict;
use warnings;

use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $n1 = flake_node(
	'multi1',
	node_id   => 1,
	streaming => 1,
	conf      => q{
wal_level = logical
max_connections = 20
wal_retrieve_retry_interval = '200ms'
});
if ($n1->pg_version < 16)
{
	plan skip_all => 'origin = none needs PostgreSQL 16 or later; '
	  . 'on ' . $n1->pg_version . ' 033_multi_primary_pglogical.pl tests '
	  . 'the same topology';
}
my $n2 = flake_node(
	'multi2',
	node_id   => 2,
	streaming => 1,
	conf      => q{
wal_level = logical
max_connections = 20
wal_retrieve_retry_interval = '200ms'
});

# The workload of each server: $clients pgbench sessions of $txns
# transactions of $batch rows, with a pause, so that the two loads overlap.
my $clients      = 2;
my $txns         = 40;
my $batch        = 100;
my $pause_ms     = 10;
my $preload_rows = 300;    # on server 1, before the subscriptions exist
my $load_rows    = $clients * $txns * $batch;
my $total        = $preload_rows + 2 * $load_rows;

# origin: the node id of the server that inserted the row.  legacy: what a
# bigserial key would have been.
my $schema = q{
	CREATE EXTENSION flakeid;
	CREATE TABLE events (
		id flakeid PRIMARY KEY DEFAULT nextflake(),
		origin int NOT NULL,
		legacy bigserial,
		n int,
		body text);
	CREATE PUBLICATION events_pub FOR TABLE events;
};

# A digest of every row (all its columns) with its decoded parts, in ID
# order.
my $digest_sql = two_primaries_digest_sql();

sub connstr_of
{
	my ($node) = @_;
	return sprintf('host=%s port=%d dbname=postgres', $node->host,
		$node->port);
}

# The subscriptions' error counters, "apply sync" summed.  PostgreSQL 19
# splits sync_error_count into one counter for tables and one for
# sequences: every other counter ending in error_count is a sync error.
sub error_counts
{
	my ($node) = @_;
	return $node->safe_psql(
		'postgres', q{
		SELECT coalesce(sum(n::bigint) FILTER (WHERE k = 'apply_error_count'), 0)
			|| ' ' || coalesce(sum(n::bigint) FILTER (WHERE k <> 'apply_error_count'), 0)
		FROM pg_stat_subscription_stats s, jsonb_each_text(to_jsonb(s)) e(k, n)
		WHERE k LIKE '%error_count'});
}

# The log lines from $offset on that report an error.
sub error_lines
{
	my ($node, $offset) = @_;
	return grep { /ERROR:|FATAL:|PANIC:|duplicate key|conflict/i }
	  split /\n/, slurp_file($node->logfile, $offset);
}

$_->start foreach ($n1, $n2);
$_->safe_psql('postgres', $schema) foreach ($n1, $n2);
foreach my $pair ([ $n1, 1 ], [ $n2, 2 ])
{
	my ($node, $id) = @$pair;
	is( $node->safe_psql(
			'postgres',
			q{SELECT current_setting('wal_level') || ' '
			  || (SELECT node_id || ' ' || state FROM flakeid_status())}),
		"logical $id ready",
		"server $id: wal_level logical, node id $id, generator ready");
}

#
# Rows that exist on server 1 before the replication is set up.
#
$n1->safe_psql(
	'postgres', qq{
	INSERT INTO events (origin, n, body)
	SELECT 1, -g, md5(g::text) FROM generate_series(1, $preload_rows) g});

#
# Server 2 subscribes first and copies what server 1 has; server 1 then
# subscribes without a copy, because server 2's rows are its own.
#
$n2->safe_psql('postgres',
	    "CREATE SUBSCRIPTION from1 CONNECTION '"
	  . connstr_of($n1)
	  . "' PUBLICATION events_pub WITH (origin = none, copy_data = true)");
$n2->wait_for_subscription_sync($n1, 'from1');
$n1->safe_psql('postgres',
	    "CREATE SUBSCRIPTION from2 CONNECTION '"
	  . connstr_of($n2)
	  . "' PUBLICATION events_pub WITH (origin = none, copy_data = false)");
$n1->wait_for_subscription_sync($n2, 'from2');

is($n2->safe_psql('postgres', 'SELECT count(*) FROM events'),
	$preload_rows, 'server 2 copied the rows that server 1 had');
is( $n1->safe_psql('postgres', 'SELECT count(*) FROM events'),
	$preload_rows,
	'server 1 did not get its own rows back from server 2');

my %log_at = (
	1 => -s $n1->logfile,
	2 => -s $n2->logfile);

#
# Both servers insert at the same time.
#
my $load_start = time;
insert_together(
	nodes    => [ [ $n1, 1 ], [ $n2, 2 ] ],
	batch    => $batch,
	pause_ms => $pause_ms,
	clients  => $clients,
	txns     => $txns);

# Both ways, until each server has every row and has confirmed the other's
# last change.
ok( $_->poll_query_until('postgres',
		"SELECT count(*) = $total FROM events"),
	$_->name . " has all $total rows")
  foreach ($n1, $n2);
$n1->wait_for_catchup('from1');
$n2->wait_for_catchup('from2');
note(sprintf('load and convergence took %.1f s', time - $load_start));

#
# What both servers hold.
#
check_two_primaries($n1, $n2,
	total => $total, preload => $preload_rows, load => $load_rows);

# The loads interleave in ID order: the key sorts the two servers' rows by
# time.
cmp_ok(
	$n1->safe_psql(
		'postgres', q{
		SELECT count(*) FROM (
			SELECT origin <> lag(origin) OVER (ORDER BY id) AS switch
			FROM events WHERE n > 0) s
		WHERE switch}),
	'>', 10,
	'in ID order the two servers\' rows interleave');


is(error_counts($n1), '0 0', 'server 1: no apply or sync error');
is(error_counts($n2), '0 0', 'server 2: no apply or sync error');

# From PostgreSQL 18 on, the subscription statistics count conflicts too.
foreach my $node ($n1, $n2)
{
	is( $node->safe_psql(
			'postgres', q{
			SELECT coalesce(sum(value::bigint), 0)
			FROM pg_stat_subscription_stats s,
				jsonb_each_text(to_jsonb(s)) AS j(key, value)
			WHERE key LIKE 'confl\_%'}),
		'0',
		$node->name . ': no conflict counted, where the server counts them');
	my @bad = error_lines($node, $log_at{ $node eq $n1 ? 1 : 2 });
	is(scalar(@bad), 0, $node->name . ' log: no error, duplicate or conflict')
	  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));
}

#
# DDL is not replicated.  A column added on server 1 and written there stops
# server 2's apply until server 2 has the column too.
#
$n1->safe_psql('postgres', 'ALTER TABLE events ADD COLUMN note text');
$n1->safe_psql('postgres',
	"INSERT INTO events (origin, n, note) VALUES (1, 0, 'after DDL')");
ok( $n2->poll_query_until(
		'postgres',
		q{SELECT apply_error_count > 0 FROM pg_stat_subscription_stats
		  WHERE subname = 'from1'}),
	'DDL: server 2 cannot apply a row with a column it lacks');
like(
	slurp_file($n2->logfile, $log_at{2}),
	qr/missing replicated column: "note"/,
	'DDL: server 2 logs the missing column');
$n2->safe_psql('postgres', 'ALTER TABLE events ADD COLUMN note text');
ok( $n2->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM events WHERE note IS NOT NULL}),
	'DDL: once the column exists on server 2, the row arrives');
$n2->safe_psql('postgres',
	"INSERT INTO events (origin, n, note) VALUES (2, 0, 'after DDL')");
ok( $n1->poll_query_until(
		'postgres', q{SELECT count(*) = 2 FROM events WHERE note IS NOT NULL}),
	'DDL: and server 2\'s rows with the new column reach server 1');
$n1->wait_for_catchup('from1');
$n2->wait_for_catchup('from2');
is( $n1->safe_psql('postgres', $digest_sql),
	$n2->safe_psql('postgres', $digest_sql),
	'DDL: both servers hold the same rows again');

#
# A node id used on both servers.  Replication is paused while both make
# IDs in the same milliseconds; then the first duplicate stops it.
#
foreach my $pair ([ $n1, 'from2' ], [ $n2, 'from1' ])
{
	my ($node, $sub) = @$pair;
	$node->safe_psql('postgres',
		"ALTER SUBSCRIPTION $sub DISABLE; "
		  . "ALTER SUBSCRIPTION $sub SET (disable_on_error = true)");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_subscription WHERE pid IS NOT NULL")
	  or die 'apply worker did not stop';
}
$n2->safe_psql('postgres', 'ALTER SYSTEM SET flakeid.node_id = 1');
$n2->reload;
ok( $n2->poll_query_until(
		'postgres', 'SELECT node_id = 1 FROM flakeid_status()'),
	'reuse: server 2 now generates as node 1');

# Both servers reserve half a second of IDs (2,048,000 = 500 x 4,096) from
# the same wall-clock moment and store the first 2 of each millisecond, so
# the two ranges overlap.  A few rounds, in case one server was descheduled
# for longer than the range.
my %reuse_sql = map {
	$_ => "INSERT INTO events (id, origin, n, body) "
	  . "SELECT id, $_, -1, 'reuse' FROM nextflakes(2048000) id "
	  . "WHERE flakeid_sequence(id) < 2"
} (1, 2);
my $common = 0;
for (my $round = 1; $round <= 5 && !$common; $round++)
{
	my $at = $n1->safe_psql('postgres',
		q{SELECT (clock_timestamp() + interval '2 s')::text});
	my @h;
	foreach my $pair ([ $n1, 1 ], [ $n2, 2 ])
	{
		my ($node, $id) = @$pair;
		my ($out, $err) = ('', '');
		push @h,
		  [
			IPC::Run::start(
				[
					$node->installed_command('psql'), '-X', '-q',
					'-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
					'-c',
					"SELECT pg_sleep(extract(epoch FROM '$at'::timestamptz "
					  . "- clock_timestamp()))",
					'-c', $reuse_sql{$id}
				],
				'>', \$out, '2>', \$err, run_timeout()),
			\$err
		  ];
	}
	foreach my $run (@h)
	{
		$run->[0]->finish or die "reuse insert failed: ${$run->[1]}";
	}
	my %on1 = map { $_ => 1 } split /\n/,
	  $n1->safe_psql('postgres', "SELECT id FROM events WHERE body = 'reuse'");
	$common = grep { $on1{$_} } split /\n/,
	  $n2->safe_psql('postgres', "SELECT id FROM events WHERE body = 'reuse'");
	note("reuse round $round: $common IDs made on both servers");
}
cmp_ok($common, '>', 0, 'reuse: both servers made some of the same IDs');
is( $n2->safe_psql(
		'postgres',
		q{SELECT count(*) > 0 AND bool_and(flakeid_node(id) = 1)
		  FROM events WHERE body = 'reuse'}),
	't',
	'reuse: server 2\'s new rows decode to node 1, not to the server that made them');

%log_at = (1 => -s $n1->logfile, 2 => -s $n2->logfile);
$n1->safe_psql('postgres', 'ALTER SUBSCRIPTION from2 ENABLE');
$n2->safe_psql('postgres', 'ALTER SUBSCRIPTION from1 ENABLE');
foreach my $pair ([ $n1, 'from2', 1 ], [ $n2, 'from1', 2 ])
{
	my ($node, $sub, $id) = @$pair;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT NOT subenabled FROM pg_subscription WHERE subname = '$sub'"
		),
		"reuse: server $id stops applying at the first duplicate ID");
	# PostgreSQL 18 reports the duplicate as an insert_exists conflict
	# and counts it.
	my $log = slurp_file($node->logfile, $log_at{$id});
	like(
		$log,
		qr/ERROR:  (?:duplicate key value violates unique constraint "events_pkey"|conflict detected on relation "public\.events": conflict=insert_exists)/,
		"reuse: server $id logs the duplicate key");
	ok( $node->poll_query_until(
			'postgres', qq{
			SELECT coalesce(bool_and((to_jsonb(s)->>'confl_insert_exists')::int > 0),
				true)
			FROM pg_stat_subscription_stats s WHERE subname = '$sub'}),
		"reuse: server $id counts an insert_exists conflict, where it counts them");
	like(
		$log,
		qr/subscription "$sub" has been disabled because of an error/,
		"reuse: server $id disabled the subscription, as disable_on_error asks");
}

$_->stop foreach ($n1, $n2);
done_testing();
