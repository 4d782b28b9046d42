# A hot standby shares its primary's node id, so it must not generate: it
# refuses with SQLSTATE 25006, while decoding replicated IDs works there.
# Once promoted, it continues above every ID of its old primary.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# flakeid.max_lead is raised for the failover below; it is a setting of
# both servers, the standby taking it from the backup.
my $primary = flake_node(
	'primary',
	node_id   => 5,
	streaming => 1,
	conf      => "flakeid.max_lead = '10min'");
$primary->start;
$primary->safe_psql(
	'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE TABLE events (n serial PRIMARY KEY, id flakeid UNIQUE NOT NULL DEFAULT nextflake());
	INSERT INTO events SELECT FROM generate_series(1, 500)});

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# rows made after the backup arrive by streaming
$primary->safe_psql('postgres', 'INSERT INTO events SELECT FROM generate_series(1, 500)');
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	't', 'the standby is in recovery');
is($standby->safe_psql('postgres', 'SHOW flakeid.node_id'),
	'5', 'the standby has the primary\'s node id');

foreach my $sql ('SELECT nextflake()', 'SELECT * FROM nextflakes(3)')
{
	my $err = fails_with($standby, $sql, '25006', "on the standby, $sql");
	like($err, qr/ERROR:  25006: cannot generate flakeid values during recovery/,
		"$sql: the message says why");
	like($err, qr/HINT:  .*primary/, "$sql: the hint points to the primary");
}
my $accept_err = fails_with($standby, 'SELECT flakeid_accept_layout()', '25006',
	'flakeid_accept_layout() on the standby');
like($accept_err, qr/cannot accept a flakeid layout during recovery/,
	'flakeid_accept_layout() on the standby: says why');
like($accept_err, qr/HINT:  Run flakeid_accept_layout\(\) on the primary/,
	'flakeid_accept_layout() on the standby: the hint points to the primary');

is( $standby->safe_psql(
		'postgres', q{
	SELECT count(*), count(*) FILTER (WHERE flakeid_node(id) = 5),
		count(*) FILTER (WHERE (flakeid_decode(id)).node = 5
			AND flakeid_sequence(id) BETWEEN 0 AND 4095
			AND flakeid_timestamp(id) BETWEEN now() - interval '10 minutes' AND now()
			AND flakeid_from_timestamp(flakeid_timestamp(id)) <= id)
	FROM events}),
	'1000|1000|1000',
	'decode functions work on replicated rows on the standby');
ids_increasing($standby, 'SELECT n, id FROM events', 'n',
	'replicated IDs, in insertion order');
is( $standby->safe_psql(
		'postgres', q{
	SET enable_seqscan = off;
	SELECT count(*) FROM events WHERE id >= flakeid_from_timestamp(now() - interval '10 minutes')}),
	'1000',
	'range scans with flakeid_from_timestamp() work on the standby');

is( $standby->safe_psql('postgres',
		'SELECT state, node_id, node_bits FROM flakeid_status()'),
	'recovery|5|10', 'flakeid_status() reports state recovery on the standby');
is( $primary->safe_psql('postgres', 'SELECT state, node_id FROM flakeid_status()'),
	'ready|5', 'and ready on the primary');

# the failed attempts on the standby did not disturb the primary
$primary->safe_psql('postgres', 'INSERT INTO events SELECT FROM generate_series(1, 10)');
ids_increasing($primary, 'SELECT n, id FROM events', 'n',
	'the primary, after the failed attempts on the standby');

# Failover.  The primary runs two minutes ahead of the clock (one call
# reserves that many IDs; in the select list, the set-returning function
# yields only the one row LIMIT asks for), and the rows with its last IDs
# reach the standby.  Once promoted, the standby has the same node id: its
# IDs must stay above every ID the old primary issued, or the two servers'
# IDs could collide.
$primary->safe_psql(
	'postgres', q{
	SELECT nextflakes(4096 * 120000) LIMIT 1;
	INSERT INTO events SELECT FROM generate_series(1, 10)});
is( $primary->safe_psql('postgres',
		'SELECT max(flakeid_timestamp(id)) > clock_timestamp() + interval \'1 minute\' FROM events'),
	't', 'the primary has issued IDs a minute and more ahead of the clock');
$primary->wait_for_catchup($standby);
$primary->stop;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
$standby->safe_psql('postgres', 'INSERT INTO events SELECT FROM generate_series(1, 10)');
ids_increasing($standby, 'SELECT n, id FROM events', 'n',
	'after promotion, new IDs above every ID of the old primary');
is($standby->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'ready', 'flakeid_status() reports ready after promotion');

$standby->stop;
done_testing();
