# Without preloading (PostgreSQL 17 and later, through the DSM registry):
# one node id and one layout per server, whatever each session's view of
# the settings.  A cursor over nextflakes() keeps the IDs it reserved
# across a reload of flakeid.node_bits; a session whose layout settings
# changed refuses to generate, and so never makes an ID of another node or
# date; the generator adopts a reloaded node id for the whole server; and
# the lease worker, launched on demand, comes back after its fork failed.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('no_preload_settings', preload => 0, node_id => 9);
$node->start;
plan skip_all => 'generation without preloading needs PostgreSQL 17 or later'
  if $node->safe_psql('postgres', 'SHOW server_version_num') < 170000;
$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');

# Reload a setting and wait until new sessions see it.
sub reload_setting
{
	my ($name, $value) = @_;
	my $sql =
	  defined $value
	  ? "ALTER SYSTEM SET $name = $value"
	  : "ALTER SYSTEM RESET $name";
	$node->safe_psql('postgres', "$sql;\nSELECT pg_reload_conf();");
	my $want = $value // '10';
	# flakeid_node(0) is folded while planning: the library is loaded, and
	# the setting read, before current_setting() runs
	$node->poll_query_until('postgres',
		"SELECT flakeid_node(0) = 0 AND current_setting('$name') = '$want'")
	  or die "$name was not reloaded";
	return;
}

# What IDs are: node, whether made within the last minute, as text.
my $check = q{bool_and(flakeid_node(id) = 9)
	|| ' ' || bool_and(flakeid_timestamp(id) BETWEEN now() - interval '1 minute'
		AND clock_timestamp() + interval '10 s')};

# 1. A cursor over nextflakes() across a reload of flakeid.node_bits.
my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe('BEGIN; DECLARE c CURSOR FOR SELECT nextflakes(6) AS id');
my @first = split /\n/, $session->query_safe('FETCH 3 FROM c');
reload_setting('flakeid.node_bits', 12);
my @rest = split /\n/, $session->query_safe('FETCH 3 FROM c');
$session->query_safe('COMMIT');
my @all = (@first, @rest);
is(scalar @all, 6, 'the cursor returns the IDs it reserved');
my $values = join ',', map { "('$_'::flakeid)" } @all;
is( $node->safe_psql(
		'postgres',
		"SELECT $check FROM (VALUES $values) v(id)"),
	'true true',
	'every row, before and after the reload, is of node 9 and of now');
is( $node->safe_psql(
		'postgres',
		increasing_sql("SELECT row_number() OVER () AS n, id FROM (VALUES $values) v(id)", 'n')),
	't', 'and they are ascending');

# The session, and new ones, now see 12 node bits: they refuse to generate.
my $err;
$session->query('SELECT nextflake()');
$err = $session->{stderr};
like($err, qr/flakeid layout settings changed while the server was running/,
	'a session that read the new layout refuses to generate');
$session->quit;
$err = fails_with($node, 'SELECT nextflake()', '55000', 'a new session, new layout');
like($err, qr/HINT:  Restore the settings and reload, or restart the server/,
	'the hint says what to do');
is($node->safe_psql('postgres', 'SELECT node_bits FROM flakeid_status()'),
	'10', 'the generator keeps the layout it started with');
is($node->safe_psql('postgres', 'SELECT flakeid_node(((1::bigint << 22) | (9 << 12) | 1)::flakeid)'),
	'9', 'decoding keeps the layout of the generator too');

reload_setting('flakeid.node_bits', undef);
is($node->safe_psql('postgres', "SELECT $check FROM nextflakes(100) id"),
	'true true', 'with the setting restored, generation goes on');

# 2. A node id that fits only the layout a session once read.
$node->stop;
$node->adjust_conf('postgresql.conf', 'flakeid.node_id', 3000);
$node->append_conf('postgresql.conf', 'flakeid.node_bits = 12');
unlink $node->data_dir . '/flakeid.state';
$node->start;
$session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe('SELECT flakeid_node(0)');
$node->safe_psql('postgres',
	"ALTER SYSTEM SET flakeid.node_bits = 10;\nSELECT pg_reload_conf();");
# (new sessions warn that node id 3000 does not fit: poll on stdout alone)
wait_until(
	sub {
		my ($ret, $out) = $node->psql('postgres',
			"SELECT flakeid_node(0) = 0 AND current_setting('flakeid.node_bits') = '10'");
		return $out eq 't';
	},
	60) or die 'node_bits 10 was not reloaded';
$session->query('SELECT nextflake()');
$err = $session->{stderr};
like($err, qr/flakeid layout settings changed while the server was running/,
	'node id 3000 with 10 node bits: the session refuses instead of making a foreign node\'s ID');
$session->quit;
fails_with($node, 'SELECT nextflake()', '55000',
	'node id 3000 with 10 node bits: a new session refuses too');
is($node->safe_psql('postgres', 'SELECT node_id, node_bits FROM flakeid_status()'),
	'3000|12', 'the generator keeps node 3000 under 12 node bits');
$node->safe_psql('postgres', "ALTER SYSTEM RESET flakeid.node_bits;\nSELECT pg_reload_conf();");
$node->poll_query_until('postgres',
	"SELECT flakeid_node(0) = 0 AND current_setting('flakeid.node_bits') = '12'")
  or die 'node_bits 12 was not reloaded';
is( $node->safe_psql('postgres',
		'SELECT bool_and(flakeid_node(id) = 3000) FROM nextflakes(100) id'),
	't', 'with the settings restored, IDs are of node 3000');

# 3. A reloaded node id is adopted by the generator, for every session.
$node->safe_psql('postgres', "ALTER SYSTEM SET flakeid.node_id = 3001;\nSELECT pg_reload_conf();");
$node->poll_query_until('postgres', 'SELECT node_id = 3001 FROM flakeid_status()')
  or die 'node id 3001 was not adopted';
is( $node->safe_psql('postgres',
		'SELECT bool_and(flakeid_node(id) = 3001) FROM nextflakes(100) id'),
	't', 'after a reload, IDs are of the new node id');
$node->stop;

# 4. The lease worker cannot be forked; once it can, the next launch works.
# A call gives up on an absent worker after 10 s, however long
# flakeid.max_lease_wait lets it wait for a lease: with 60 s, a call
# that waited for the lease wait would meet its 40 s statement_timeout.
$node->append_conf('postgresql.conf', "flakeid.node_id = 9\nflakeid.max_lease_wait = 60s");
$node->adjust_conf('postgresql.conf', 'flakeid.node_bits', 10);
unlink $node->data_dir . '/flakeid.state';
unlink $node->data_dir . '/postgresql.auto.conf';
start_fork_switch($node);
# Sessions are forked too: connect the two that will call before the fork
# starts failing.
$session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe('SELECT flakeid_node(0)');
my $waiting = $node->background_psql('postgres', on_error_stop => 0);
my $switch = fork_failing($node);
my $offset = -s $node->logfile;

# The fork keeps failing for longer than a call waits for the worker.
PostgreSQL::Test::Utils::append_to_file($switch, '');
$session->query("SET statement_timeout = '40s'; SELECT nextflake()");
like($session->{stderr}, qr/timed out waiting for the flakeid lease worker/,
	'while the worker cannot be forked, a call fails after its 10 s wait for it, not after max_lease_wait');
ok($node->log_contains(qr/could not fork (?:background )?worker process/, $offset),
	'the log says the fork failed');
ok($node->log_contains(qr/the flakeid lease worker could not be started/, $offset),
	'the log says the lease worker could not be started');

# The fork works again while a call waits: the same call succeeds.
$waiting->query_until(qr/calling/, "\\echo calling\nSELECT 'got ' || nextflake();\n");
sleep 3;
unlink $switch;
ok( wait_until(
		sub {
			$waiting->{run}->pump_nb;
			return $waiting->{stdout} =~ /got \d+/;
		},
		20),
	'once the worker can be forked, a waiting call gets its ID');
$waiting->quit;
$session->quit;
is($node->safe_psql('postgres', "SELECT $check FROM nextflakes(100) id"), 'true true',
	'and later calls generate, without a restart');

$node->stop;
done_testing();
