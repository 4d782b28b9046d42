# Multi-primary with pglogical 2, on PostgreSQL 15, which has no origin =
# none: two servers, flakeid node ids 1 and 2, both insert into the same
# table with DEFAULT nextflake() while each subscribes to the other with
# forward_origins = '{}', so that a change goes from the server that made it
# to the other and no further.  pglogical.conflict_resolution = 'error'
# turns any key conflict into an apply error, so a clean run proves there
# was none.
#
# Then a node id used on both servers: with 'error' the first duplicate
# stops the apply; with pglogical's default, 'apply_remote' (and batch
# inserts off, so that pglogical checks every row), replication goes on and
# each server overwrites its own row with the other's, so the two servers
# end up with different rows under the same IDs.
#
# From PostgreSQL 16 on, 032_multi_primary.pl tests the same topology with
# the built-in origin = none.
#
# Generated IDs are checked by their properties and never printed.

use strict;
use warnings;

use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $conf = q{
shared_preload_libraries = 'pglogical,flakeid'
wal_level = logical
track_commit_timestamp = on
pglogical.conflict_resolution = 'error'
max_worker_processes = 16
max_connections = 20
};
my $n1 = flake_node('pgl1', node_id => 1, streaming => 1, preload => 0,
	conf => $conf);
if ($n1->pg_version >= 16)
{
	plan skip_all => 'PostgreSQL ' . $n1->pg_version
	  . ' has origin = none: 032_multi_primary.pl tests multi-primary '
	  . 'replication there; pglogical is tested on 15';
}
if ((' ' . ($ENV{FLAKE_UNPACKAGED} // '') . ' ') =~ / postgresql-\d+-pglogical /)
{
	plan skip_all => 'this Debian release has no pglogical package for PostgreSQL '
	  . $n1->pg_version;
}
my $n2 = flake_node('pgl2', node_id => 2, streaming => 1, preload => 0,
	conf => $conf);

my $clients      = 2;
my $txns         = 40;
my $batch        = 100;
my $pause_ms     = 10;
my $preload_rows = 300;    # on server 1, before the subscriptions exist
my $load_rows    = $clients * $txns * $batch;
my $total        = $preload_rows + 2 * $load_rows;

sub dsn_of
{
	my ($node) = @_;
	return sprintf('host=%s port=%d dbname=postgres', $node->host,
		$node->port);
}


# Wait until every pglogical slot of $provider has confirmed its current WAL
# position: the other server has applied (or skipped) all its changes.
sub wait_confirmed
{
	my ($provider) = @_;
	my $lsn = $provider->lsn('write');
	return $provider->poll_query_until(
		'postgres', qq{
		SELECT count(*) > 0 AND bool_and(confirmed_flush_lsn >= '$lsn')
		FROM pg_replication_slots WHERE plugin = 'pglogical_output'});
}

# Wait until the subscription on $node replicates and has copied its tables
# (pglogical's own wait function has no time limit).
sub wait_synced
{
	my ($node) = @_;
	return $node->poll_query_until(
		'postgres', q{
		SELECT (SELECT bool_and(status = 'replicating')
				FROM pglogical.show_subscription_status())
			AND (SELECT count(*) = 0 FROM pglogical.local_sync_status
				WHERE sync_status <> 'r')});
}

$_->start foreach ($n1, $n2);

# Since PostgreSQL 15.19, only the output plugins listed in
# output_plugin_libraries may be used for logical decoding.
foreach my $node ($n1, $n2)
{
	next
	  unless $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_settings WHERE name = 'output_plugin_libraries'});
	$node->safe_psql('postgres',
		q{ALTER SYSTEM SET output_plugin_libraries = 'pgoutput', 'pglogical_output'});
	$node->reload;
}
foreach my $pair ([ $n1, 1 ], [ $n2, 2 ])
{
	my ($node, $id) = @$pair;
	my $available = $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_available_extensions WHERE name = 'pglogical'});
	BAIL_OUT('pglogical is not installed: install postgresql-'
		  . $node->pg_version->major . '-pglogical (test/run does, as root)')
	  unless $available;
	$node->safe_psql(
		'postgres', qq{
		CREATE EXTENSION flakeid;
		CREATE EXTENSION pglogical;
		CREATE TABLE events (
			id flakeid PRIMARY KEY DEFAULT nextflake(),
			origin int NOT NULL,
			legacy bigserial,
			n int,
			body text);
		SELECT pglogical.create_node('node$id', '@{[ dsn_of($node) ]}');
		SELECT pglogical.replication_set_add_table('default', 'events');
	});
	is( $node->safe_psql(
			'postgres',
			q{SELECT current_setting('wal_level') || ' '
			  || (SELECT node_id || ' ' || state FROM flakeid_status()) || ' '
			  || (SELECT extversion FROM pg_extension WHERE extname = 'pglogical')}),
		"logical $id ready 2.4.2",
		"server $id: node id $id, generator ready, pglogical 2.4.2");
}

$n1->safe_psql(
	'postgres', qq{
	INSERT INTO events (origin, n, body)
	SELECT 1, -g, md5(g::text) FROM generate_series(1, $preload_rows) g});

# Server 2 subscribes first and copies server 1's rows; then server 1
# subscribes without a copy.  forward_origins = '{}': send only the
# changes made on the provider itself, not those it applied.
$n2->safe_psql(
	'postgres', qq{
	SELECT pglogical.create_subscription('from1', '@{[ dsn_of($n1) ]}',
		replication_sets => '{default}', synchronize_data => true,
		forward_origins => '{}');
});
ok(wait_synced($n2), 'server 2 subscribed to server 1 and copied its rows');
$n1->safe_psql(
	'postgres', qq{
	SELECT pglogical.create_subscription('from2', '@{[ dsn_of($n2) ]}',
		replication_sets => '{default}', synchronize_data => false,
		forward_origins => '{}');
});
ok(wait_synced($n1), 'server 1 subscribed to server 2');
foreach my $node ($n1, $n2)
{
	ok( $node->poll_query_until(
			'postgres',
			q{SELECT status = 'replicating'
				AND coalesce(cardinality(forward_origins), 0) = 0
			  FROM pglogical.show_subscription_status()}),
		$node->name . ': the subscription replicates, forwarding no origin');
}
is($n2->safe_psql('postgres', 'SELECT count(*) FROM events'),
	$preload_rows, 'server 2 copied the rows that server 1 had');

my %log_at = (1 => -s $n1->logfile, 2 => -s $n2->logfile);

#
# Both servers insert at the same time.
#
insert_together(
	nodes    => [ [ $n1, 1 ], [ $n2, 2 ] ],
	batch    => $batch,
	pause_ms => $pause_ms,
	clients  => $clients,
	txns     => $txns);
ok( $_->poll_query_until('postgres',
		"SELECT count(*) = $total FROM events"),
	$_->name . " has all $total rows")
  foreach ($n1, $n2);
ok(wait_confirmed($_), $_->name . ': the other server confirmed every change')
  foreach ($n1, $n2);

check_two_primaries($n1, $n2,
	total => $total, preload => $preload_rows, load => $load_rows);
foreach my $node ($n1, $n2)
{
	my $name = $node->name;
	my @bad = grep { /ERROR:|FATAL:|PANIC:|CONFLICT|duplicate key/ }
	  split /\n/, slurp_file($node->logfile, $log_at{ $node eq $n1 ? 1 : 2 });
	is(scalar(@bad), 0, "$name log: no error and no conflict")
	  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));
}

#
# A node id used on both servers.  Replication is paused while both make
# IDs in the same milliseconds.
#
$n1->safe_psql('postgres',
	"SELECT pglogical.alter_subscription_disable('from2', true)");
$n2->safe_psql('postgres',
	"SELECT pglogical.alter_subscription_disable('from1', true)");
$n2->safe_psql('postgres', 'ALTER SYSTEM SET flakeid.node_id = 1');
$n2->reload;
ok( $n2->poll_query_until(
		'postgres', 'SELECT node_id = 1 FROM flakeid_status()'),
	'reuse: server 2 now generates as node 1');

# Both servers reserve half a second of IDs (2,048,000 = 500 x 4,096) from
# the same wall-clock moment and store the first 2 of each millisecond.
my $common = 0;
my %shared;
for (my $round = 1; $round <= 5 && !$common; $round++)
{
	my $at = $n1->safe_psql('postgres',
		q{SELECT (clock_timestamp() + interval '2 s')::text});
	my @h;
	foreach my $pair ([ $n1, 1 ], [ $n2, 2 ])
	{
		my ($node, $id) = @$pair;
		my $err = '';
		push @h,
		  [
			IPC::Run::start(
				[
					$node->installed_command('psql'), '-X',
					'-q', '-v',
					'ON_ERROR_STOP=1', '-d',
					$node->connstr('postgres'), '-c',
					"SELECT pg_sleep(extract(epoch FROM '$at'::timestamptz "
					  . "- clock_timestamp()))",
					'-c',
					"INSERT INTO events (id, origin, n, body) "
					  . "SELECT id, $id, -1, 'reuse' FROM nextflakes(2048000) id "
					  . "WHERE flakeid_sequence(id) < 2"
				],
				'>', \my $out, '2>', \$err, run_timeout()),
			\$err
		  ];
	}
	$_->[0]->finish or die "reuse insert failed: ${$_->[1]}" foreach @h;
	my %on1 = map { $_ => 1 } split /\n/,
	  $n1->safe_psql('postgres', "SELECT id FROM events WHERE body = 'reuse'");
	%shared = map { $_ => 1 } grep { $on1{$_} } split /\n/,
	  $n2->safe_psql('postgres', "SELECT id FROM events WHERE body = 'reuse'");
	$common = keys %shared;
	note("reuse round $round: $common IDs made on both servers");
}
cmp_ok($common, '>', 0, 'reuse: both servers made some of the same IDs');

# The reuse rows of a server, as [id, origin].
sub origins
{
	my ($node) = @_;
	return map { [ split /\|/ ] } split /\n/,
	  $node->safe_psql('postgres',
		"SELECT id || '|' || origin FROM events WHERE body = 'reuse'");
}

# Every reuse row once: what the two servers made, less the shared IDs.
my $reuse_sql = "SELECT count(*) FROM events WHERE body = 'reuse'";
my $reuse_rows = $n1->safe_psql('postgres', $reuse_sql) +
  $n2->safe_psql('postgres', $reuse_sql) - $common;
my %made = (
	1 => $n1->safe_psql('postgres', $reuse_sql),
	2 => $n2->safe_psql('postgres', $reuse_sql));

# With conflict_resolution = 'error', the apply stops at the first one:
# pglogical refuses the conflicting row, or, where it applies the
# transaction as a batch insert (pglogical.batch_inserts, on by default),
# the unique index does.
%log_at = (1 => -s $n1->logfile, 2 => -s $n2->logfile);
$n1->safe_psql('postgres',
	"SELECT pglogical.alter_subscription_enable('from2', true)");
$n2->safe_psql('postgres',
	"SELECT pglogical.alter_subscription_enable('from1', true)");
foreach my $pair ([ $n1, 1 ], [ $n2, 2 ])
{
	my ($node, $id) = @$pair;
	ok( $node->wait_for_log(
			qr/ERROR:  (?:cannot apply conflicting row|duplicate key value violates unique constraint "events_pkey")/,
			$log_at{$id}),
		"reuse, 'error': server $id refuses to apply a row with an existing ID"
	);
	is(scalar(grep { $shared{ $_->[0] } && $_->[1] != $id } origins($node)),
		0, "reuse, 'error': server $id still holds its own row under every shared ID");
}

# With pglogical's default, 'apply_remote', the incoming row replaces the
# local one: replication goes on, and each server keeps the other's row.
# Without batch inserts, so that pglogical checks every row.  The
# subscriptions are restarted, so that the apply workers start again now.
%log_at = (1 => -s $n1->logfile, 2 => -s $n2->logfile);
foreach my $pair ([ $n1, 'from2' ], [ $n2, 'from1' ])
{
	my ($node, $sub) = @$pair;
	$node->safe_psql('postgres',
		"SELECT pglogical.alter_subscription_disable('$sub', true)");
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET pglogical.conflict_resolution = 'apply_remote'");
	$node->safe_psql('postgres',
		'ALTER SYSTEM SET pglogical.batch_inserts = off');
	$node->reload;
	$node->safe_psql('postgres',
		"SELECT pglogical.alter_subscription_enable('$sub', true)");
}
foreach my $pair ([ $n1, 1, 2 ], [ $n2, 2, 1 ])
{
	my ($node, $id, $other) = @$pair;
	ok( $node->poll_query_until(
			'postgres', qq{
			SELECT count(*) = $made{$other} FROM events
			WHERE body = 'reuse' AND origin = $other}),
		"reuse, 'apply_remote': server $id got all of server ${other}'s rows");
	ok(wait_confirmed($node), $node->name . ': the other server confirmed every change');
	is( $node->safe_psql('postgres', $reuse_sql),
		$reuse_rows, "reuse, 'apply_remote': server $id has one row per ID");
	like(
		slurp_file($node->logfile, $log_at{$id}),
		qr/CONFLICT: remote INSERT on relation public\.events .*Resolution: apply_remote/,
		"reuse, 'apply_remote': server $id logs the conflicts it resolved");
	is(scalar(grep { $shared{ $_->[0] } && $_->[1] == $other } origins($node)),
		$common,
		"reuse, 'apply_remote': under every shared ID server $id now holds "
		  . "server ${other}'s row");
}

$_->stop foreach ($n1, $n2);
done_testing();
