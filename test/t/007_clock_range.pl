# A clock outside the 41-bit time range of the layout is an error, never a
# wrapped, truncated or negative ID: before flakeid.epoch, past its 2^41 ms
# for every flakeid.node_bits from 0 to 16, a reservation that would cross
# the end of the range, a new layout whose range the old IDs used up, a
# standby promoted so near the end that its floor lies past it, and one
# promoted before the epoch, whose floor is the epoch.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::Local qw(timegm);

plan skip_all => 'libfaketime is not installed' unless faketime_library();

# An epoch in the future puts the clock before it.
my $early = flake_node(
	'future_epoch',
	node_id => 1,
	conf    => q{flakeid.epoch = '2199-01-01 00:00:00+00'});
$early->start;
$early->safe_psql('postgres', 'CREATE EXTENSION flakeid');
my $err = fails_with($early, 'SELECT nextflake()', '22008',
	'the clock reads before the epoch');
like($err, qr/system clock is outside the range of flakeid timestamps/,
	'the message says the clock is out of range');
like($err, qr/before flakeid\.epoch/, 'the detail names the epoch');
is($early->safe_psql('postgres',
		"SELECT flakeid_timestamp(0) = '2199-01-01 00:00:00+00'"),
	't', 'decoding uses the configured epoch');
$early->stop;

# The clock in 2090, past 2020-01-01 + 2^41 ms (2089-09-06), with every
# number of node bits: the time field must never wrap.
my $late = flake_node('late_clock', node_id => 0, quiet => 1,
	conf => 'flakeid.node_bits = 10');
my $in_2090 = timegm(0, 0, 0, 1, 0, 2090);
foreach my $node_bits (0 .. 16)
{
	$late->adjust_conf('postgresql.conf', 'flakeid.node_bits', $node_bits);
	unlink $late->data_dir . '/flakeid.state';
	start_faked($late, offset_to($in_2090));
	$late->safe_psql('postgres',
		'CREATE EXTENSION IF NOT EXISTS flakeid; CREATE TABLE IF NOT EXISTS t (id flakeid DEFAULT nextflake())');
	foreach my $sql ('SELECT nextflake()', 'SELECT * FROM nextflakes(5)',
		'INSERT INTO t DEFAULT VALUES')
	{
		my $e = fails_with($late, $sql, '22008',
			"node_bits $node_bits, clock in 2090: $sql");
		like($e, qr/system clock is outside the range of flakeid timestamps/,
			"node_bits $node_bits, clock in 2090: $sql: says why")
		  if $sql eq 'SELECT nextflake()';
	}
	is($late->safe_psql('postgres', 'SELECT count(*) FROM t'), '0',
		"node_bits $node_bits: no row was inserted");
	$late->stop;
}

# Six seconds before the end of the range, with 16 node bits (64 IDs per
# ms): IDs are made up to the very last one of the range, and a
# reservation whose last millisecond would be the first one past the range
# fails instead of wrapping, as does every call after it.  The reservations
# are computed to end exactly at those ticks: the first one puts the IDs a
# second ahead of the clock, so that each next one starts where the one
# before ended.
my $end = timegm(0, 0, 0, 1, 0, 2020) + 2**41 / 1000;
my $max_ms = 2199023255551;    # 2^41 - 1: the last millisecond of the range
my $end_tick = $max_ms * 64 + 63;    # its last tick, with 6 sequence bits
$late->adjust_conf('postgresql.conf', 'flakeid.node_bits', 16);
unlink $late->data_dir . '/flakeid.state';
start_faked($late, offset_to($end - 6));
$late->safe_psql('postgres', q{
CREATE TABLE near_end (n serial, id flakeid NOT NULL);
INSERT INTO near_end (id) SELECT nextflakes(64000);
});
my $tick = tick_sql('max(id)', 16);
my $last_tick = $late->safe_psql('postgres', "SELECT $tick FROM near_end");
my $to_end = $end_tick - $last_tick;
ok($to_end > 0 && $to_end < 64 * 7000, "the IDs are $to_end ticks before the end of the range");
# One call may reserve at most flakeid.max_lead's worth (320000 ticks): when
# the clock started late in its second, most of the way goes first.
if ($to_end > 256000)
{
	$late->safe_psql('postgres',
		'INSERT INTO near_end (id) SELECT nextflakes(' . ($to_end - 256000) . ')');
	$last_tick = $late->safe_psql('postgres', "SELECT $tick FROM near_end");
	$to_end = $end_tick - $last_tick;
	is($to_end, 256000, 'the IDs are 256000 ticks before the end of the range');
}
my ($ret, $out, $e, $state) = psql_state($late,
	"INSERT INTO near_end (id) SELECT nextflakes($to_end)");
is($ret, 0, 'a reservation that ends at the last tick of the range succeeds') or diag($e);
is($late->safe_psql('postgres', 'SELECT max(id)::bigint FROM near_end'),
	($max_ms << 22) | 63, 'and its last ID is the largest of the range');
$e = fails_with($late, 'SELECT nextflakes(1)', '22008',
	'a reservation one tick past the range, in the next millisecond');
like($e, qr/flakeid values would pass the end of the layout's time range/,
	'the error says the range would be passed');
foreach my $sql ('SELECT nextflake()', 'SELECT nextflakes(64)', 'SELECT * FROM nextflakes(1000)')
{
	like((psql_state($late, $sql))[2],
		qr/flakeid values would pass the end of the layout's time range|system clock is outside the range/,
		"and so does every later call: $sql");
}
is( $late->safe_psql(
		'postgres', qq{
	SELECT count(*) FILTER (WHERE id::bigint < 0),
		bool_and(flakeid_timestamp(id) < to_timestamp($end)),
		bool_and(flakeid_node(id) = 0)
	FROM near_end}),
	'0|t|t',
	'every ID made is positive, before the end of the range, and of node 0');
ids_increasing($late, 'SELECT n, id FROM near_end', 'n', 'the IDs near the end');
# the lease that covers the last tick ends right after the range, a lease
# the state file can hold: both copies valid, and after a restart every
# call still finds the range used up, not the file damaged
is($late->safe_psql('postgres',
		'SELECT string_agg(valid::text, \',\' ORDER BY "offset") FROM flakeid_state_file()'),
	'true,true', 'the lease at the end of the range: both copies of the state file valid');
$late->stop;
start_faked($late, offset_to($end - 3));
fails_with($late, 'SELECT nextflake()', '22008',
	'the range used up: after a restart too');
$late->stop;

# IDs made in November 2039 with the default epoch, then the epoch moved
# back to 1970, whose 41-bit range ended in September 2039: accepting it
# would have to continue past that end, and is refused.
my $moved = flake_node('epoch_moved', node_id => 2, quiet => 1);
my $nov_2039 = timegm(0, 0, 0, 1, 10, 2039);
start_faked($moved, offset_to($nov_2039));
$moved->safe_psql('postgres', 'CREATE EXTENSION flakeid; SELECT nextflake()');
$moved->stop;
$moved->append_conf('postgresql.conf', q{flakeid.epoch = '1970-01-01'});
start_faked($moved, offset_to($nov_2039));
$err = fails_with($moved, 'SELECT flakeid_accept_layout()', '22008',
	'accepting an epoch whose range the old IDs used up');
like($err, qr/cannot accept the new flakeid layout: its time range is used up/,
	'the error says the range is used up');
is($moved->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'layout changed', 'the layout stays unaccepted');
fails_with($moved, 'SELECT nextflake()', '55000',
	'and nothing is generated, negative or otherwise');
$moved->stop;

# A standby promoted near the end of the range, which never received the
# old primary's last leases: the floor above every ID the old primary can
# have returned (its clock plus flakeid.max_lead, a lease and
# flakeid.max_clock_skew) lies past the range, and the old primary did use
# the range to its last tick, so the promoted server returns no ID at all.
# The clock starts 50 s before the end, with flakeid.max_lead = 60s.
my $old = flake_node('end_primary', node_id => 4, quiet => 1, streaming => 1,
	conf => "flakeid.node_bits = 16\nflakeid.max_lead = 60s");
my $offset = offset_to($end - 50);
start_faked($old, $offset);
$old->safe_psql('postgres', 'CREATE EXTENSION flakeid; SELECT nextflakes(1000)');
$old->backup('end_backup');
my $new = PostgreSQL::Test::Cluster->new('end_standby');
$new->init_from_backup($old, 'end_backup', has_streaming => 1);
start_faked($new, $offset);
catch_up($old, $new);
$new->stop;
# a second of IDs ahead of the clock first, so that the next call starts
# right after them (as above); both calls in one statement, so that the
# second one comes well within that second
my $id_tick = tick_sql('id', 16);
is( $old->safe_psql(
		'postgres', qq{
	WITH first AS (SELECT max($id_tick) AS t FROM nextflakes(64000) id)
	SELECT max($id_tick) FROM first, LATERAL nextflakes(($end_tick - first.t)::int) id}),
	$end_tick,
	'with the standby stopped, the old primary returns IDs up to the last tick of the range');
$old->stop;
start_faked($new, $offset);
$new->promote;
$e = fails_with($new, 'SELECT nextflake()', '22008',
	'the standby promoted without those leases returns no ID');
like($e, qr/flakeid values would pass the end of the layout's time range/,
	'the error says the range would be passed, not that the clock is out of it')
  or diag('the clock is ' . ($new->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())') - $end) . ' s from the end');
# the floor is a lease the state file can hold: after a restart, the same
$new->stop;
start_faked($new, $offset);
fails_with($new, 'SELECT nextflake()', '22008', 'after a restart too');
$new->stop;

# A standby promoted while the clock reads before flakeid.epoch, with no
# lease recorded (the primary made none: no call could get an ID): its
# floor is the epoch itself, as the server log says, valid in both copies
# of the state file, and no ID comes until the clock reaches the epoch.
# (A call that waited for the floor may have the worker renew after it,
# so the file's lease is not always the floor's.)
my $before = flake_node('future_primary', node_id => 5, quiet => 1, streaming => 1,
	conf => qq{flakeid.epoch = '2199-01-01 00:00:00+00'\ntimezone = 'UTC'});
$before->start;
$before->safe_psql('postgres', 'CREATE EXTENSION flakeid');
$before->backup('future_backup');
my $promoted = PostgreSQL::Test::Cluster->new('future_standby');
$promoted->init_from_backup($before, 'future_backup', has_streaming => 1);
$before->stop;
$promoted->start;
$promoted->promote;
fails_with($promoted, 'SELECT nextflake()', '22008',
	'promoted before the epoch: the clock reads before it');
is( $promoted->safe_psql(
		'postgres', 'SELECT count(*), bool_and(valid) FROM flakeid_state_file()'),
	'2|t',
	'both copies of its state file are valid');
$promoted->stop;
like(slurp_file($promoted->logfile),
	qr/flakeid continues from 2199-01-01 00:00:00\+00 on timeline 2/,
	'its floor is the epoch');

done_testing();
