# flakeid.node_id: unset by default, and then nothing is generated; checked
# against flakeid.node_bits at startup (refuse to start) and on reload
# (keep the old value); adopted by the generator for the whole server on a
# valid reload; out of reach of sessions.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('node_id');

# No node id configured: the server starts, decodes, and refuses to generate.
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
is($node->safe_psql('postgres', 'SHOW flakeid.node_id'), '-1',
	'flakeid.node_id is -1, not set, by default');
foreach my $sql ('SELECT nextflake()', 'SELECT * FROM nextflakes(3)')
{
	my $err = fails_with($node, $sql, '55000', "no node id: $sql");
	like($err, qr/ERROR:  55000: flakeid\.node_id is not set/,
		"no node id: $sql: says so");
	like($err, qr/HINT:  Set flakeid\.node_id in postgresql\.conf/,
		"no node id: $sql: the hint says what to do");
}
is($node->safe_psql('postgres',
		'SELECT state, node_id IS NULL FROM flakeid_status()'),
	'node id not set|t', 'flakeid_status() says the node id is not set');
is($node->safe_psql('postgres', 'SELECT flakeid_node(((1::bigint << 22) | (5 << 12))::flakeid)'),
	'5', 'decoding works without a node id');

# Setting it on reload is enough: the generator adopts it.
$node->safe_psql('postgres',
	"ALTER SYSTEM SET flakeid.node_id = 77;\nSELECT pg_reload_conf();");
$node->poll_query_until('postgres', 'SELECT node_id = 77 FROM flakeid_status()')
  or die 'node id 77 was not adopted';
# Adopting it asks for no lease: once the lease worker sleeps again, with
# no ID asked for, it has written none (the state file is still missing).
$node->poll_query_until('postgres',
	q{SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE backend_type = 'flakeid lease worker'})
  or die 'the lease worker did not go back to sleep';
is($node->safe_psql('postgres', 'SELECT count(*) FROM flakeid_state_file()'),
	'0', 'adopting the first node id on an idle server writes no lease');
is($node->safe_psql('postgres',
		'SELECT bool_and(flakeid_node(id) = 77) FROM nextflakes(1000) id'),
	't', 'after a reload that sets it, IDs decode to the node id');
ok($node->log_contains(qr/flakeid node id set to 77/),
	'the log says the node id was set');
ok(!$node->log_contains(qr/changed from -1/), 'and not that it changed from -1');

# Removing the setting unsets it again, and generation stops.
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET flakeid.node_id;\nSELECT pg_reload_conf();");
$node->poll_query_until('postgres', 'SELECT node_id IS NULL FROM flakeid_status()')
  or die 'node id was not unset';
fails_with($node, 'SELECT nextflake()', '55000',
	'after a reload that removes it');
ok($node->wait_for_log(qr/flakeid\.node_id is no longer set; IDs will not be generated/),
	'the log says the node id is no longer set');
$node->stop;

# 1024 does not fit in the default 10 node bits
$node->append_conf('postgresql.conf', 'flakeid.node_id = 1024');
my $start_offset = -s $node->logfile;
start_fails($node, 'node id 1024 with 10 node bits',
	qr/invalid value for parameter "flakeid\.node_id"/,
	qr/between 0 and 1023/);

# The words a refused node id gets in the log from $offset on: the
# distinct messages, details and hints, without their level and with the
# value as N.
sub refusal_words
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my %words;
	while ($log =~ /(?:ERROR|LOG|FATAL|WARNING|DETAIL|HINT):  ((?:invalid value for parameter "flakeid\.node_id"|With flakeid\.node_bits|Choose a node id)[^\n]*)/g)
	{
		(my $line = $1) =~ s/"flakeid\.node_id": \d+$/"flakeid.node_id": N/;
		$words{$line} = 1;
	}
	return join "\n", sort keys %words;
}
my $at_start = refusal_words($start_offset);

# values that are not node ids at all are no better
foreach my $value ('65536', '-2', q{'seven'})
{
	$node->adjust_conf('postgresql.conf', 'flakeid.node_id', $value);
	start_fails($node, "node id $value",
		qr/(?:invalid value for|outside the valid range for) parameter "flakeid\.node_id"/);
}

# the largest node id that fits
$node->adjust_conf('postgresql.conf', 'flakeid.node_id', '1023');
$node->start;
is($node->safe_psql('postgres', 'SHOW flakeid.node_id'),
	'1023', 'node id 1023 starts');
$node->safe_psql(
	'postgres', q{
	CREATE TABLE ids (n serial PRIMARY KEY, id flakeid NOT NULL DEFAULT nextflake());
	CREATE ROLE alice LOGIN;
	GRANT ALL ON ids, ids_n_seq TO alice;
	INSERT INTO ids SELECT FROM generate_series(1, 1000)});
is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE flakeid_node(id) = 1023'),
	'1000', 'IDs decode to node 1023');

# a reload with a value that does not fit keeps the old node id
my $offset = -s $node->logfile;
$node->adjust_conf('postgresql.conf', 'flakeid.node_id', '5000');
$node->reload;
$node->wait_for_log(qr/invalid value for parameter "flakeid\.node_id": "?5000/,
	$offset);
ok( $node->log_contains(qr/between 0 and 1023/, $offset),
	'the log says why 5000 was refused');
is(refusal_words($offset), $at_start,
	'a node id is refused in the same words at startup and on reload');
is($node->safe_psql('postgres', 'SHOW flakeid.node_id'),
	'1023', 'an invalid reload keeps node id 1023');
$node->safe_psql('postgres', 'INSERT INTO ids SELECT FROM generate_series(1, 100)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE flakeid_node(id) = 1023'),
	'1100', 'IDs made after the invalid reload still decode to node 1023');

# a valid reload is adopted by the generator, for every session
$node->adjust_conf('postgresql.conf', 'flakeid.node_id', '7');
$node->reload;
$node->poll_query_until('postgres', q{SELECT node_id = 7 FROM flakeid_status()})
  or die 'node id 7 was not adopted';
ok($node->log_contains(qr/flakeid node id changed from 1023 to 7/),
	'the log tells of the new node id');
$node->safe_psql('postgres', 'INSERT INTO ids SELECT FROM generate_series(1, 1000)');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FILTER (WHERE flakeid_node(id) = 1023) || ' '
		|| count(*) FILTER (WHERE flakeid_node(id) = 7)
	FROM ids}),
	'1100 1000',
	'IDs made after a valid reload decode to node 7');
ids_increasing($node, 'SELECT n, id FROM ids', 'n',
	'IDs across the node id change');
is( $node->safe_psql(
		'postgres', q{
	SELECT min(id::bigint) FILTER (WHERE flakeid_node(id) = 7)
		> max(id::bigint) FILTER (WHERE flakeid_node(id) = 1023)
	FROM ids}),
	't',
	'every node 7 ID is above every node 1023 ID as an integer');

# ALTER SYSTEM validates against the node bits and leaves no trace
fails_with($node, 'ALTER SYSTEM SET flakeid.node_id = 4096',
	'22023', 'ALTER SYSTEM SET flakeid.node_id = 4096');
fails_with($node, 'ALTER SYSTEM SET flakeid.node_id = 1024',
	'22023', 'ALTER SYSTEM SET flakeid.node_id = 1024');
unlike(slurp_file($node->data_dir . '/postgresql.auto.conf'),
	qr/flakeid/, 'postgresql.auto.conf is untouched');

# no session, superuser or not, sets its own node id
fails_with($node, 'SET flakeid.node_id = 3', '55P02',
	'superuser SET flakeid.node_id');
settings_locked($node, 'alice', 'postgres', 'flakeid.node_id', '3');
$node->safe_psql('postgres', 'INSERT INTO ids SELECT FROM generate_series(1, 100)');
my ($ret, $out) = psql_as($node,
	'INSERT INTO ids SELECT FROM generate_series(1, 100); SELECT flakeid_node(nextflake())',
	user => 'alice');
is($out, '7', "alice's IDs are still node 7");
is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE flakeid_node(id) = 7'),
	'1200', 'every later ID is node 7');

$node->stop;
done_testing();
