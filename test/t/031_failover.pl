# Failover: a promoted standby never issues an ID at or below one it
# replayed, even when the old primary's clock ran ahead of the standby's.
# The primary runs under libfaketime a few seconds in the future; the
# standbys run on the real clock.  One standby is restarted before it is
# promoted (its state file gives the floor back), the other is promoted
# as it runs (the floor replay raised in shared memory must hold).
use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'libfaketime is not installed' unless faketime_library();

my $primary = flake_node('primary', node_id => 9, streaming => 1);
start_faked($primary, '+4');
my $ahead = $primary->safe_psql('postgres',
	"SELECT extract(epoch FROM clock_timestamp())::float8 - " . time());
cmp_ok($ahead, '>', 3, 'the primary clock runs ahead of the real one');

$primary->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text);
});
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
my $running = PostgreSQL::Test::Cluster->new('standby_running');
$running->init_from_backup($primary, 'backup', has_streaming => 1);
$running->start;

# Rows made after the backup reach the standby only through WAL.
$primary->safe_psql('postgres',
	"INSERT INTO events (body) SELECT 'before ' || g FROM generate_series(1, 20000) g");
$primary->wait_for_catchup($_, 'replay', $primary->lsn('insert')) foreach ($standby, $running);

my $replayed_max = $standby->safe_psql('postgres', 'SELECT max(id) FROM events');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM events'), '20000', 'standby replayed the rows');
cmp_ok($standby->safe_psql('postgres',
		"SELECT flakeid_timestamp(max(id)) > clock_timestamp() + interval '2 s' FROM events"),
	'eq', 't', 'the replayed IDs are ahead of the standby clock');

my ($ret, $out, $err) = $standby->psql('postgres', 'SELECT nextflake()');
like($err, qr/cannot generate flakeid values during recovery/, 'the standby refuses to generate');

# A restart of the standby keeps what it learned from WAL.
$standby->restart;

$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'promotion did not finish';

$standby->safe_psql('postgres',
	"INSERT INTO events (body) SELECT 'after ' || g FROM generate_series(1, 20000) g");
my $check = $standby->safe_psql('postgres', qq{
SELECT count(*),
	count(*) FILTER (WHERE id <= '$replayed_max'),
	bool_and(flakeid_node(id) = 9)
FROM events WHERE body LIKE 'after %'});
is($check, '20000|0|t', 'every ID after promotion is above every replayed ID');
is($standby->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM events'),
	't', 'no duplicate across the failover');

$standby->stop;

# The standby promoted without a restart: only what replay set in shared
# memory holds its floor.
$running->promote;
$running->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'promotion did not finish';
$running->safe_psql('postgres',
	"INSERT INTO events (body) SELECT 'after ' || g FROM generate_series(1, 20000) g");
is( $running->safe_psql('postgres', qq{
SELECT count(*), count(*) FILTER (WHERE id <= '$replayed_max'), bool_and(flakeid_node(id) = 9)
FROM events WHERE body LIKE 'after %'}),
	'20000|0|t',
	'promoted without a restart: every ID is above every replayed ID');
$running->stop;
done_testing();
