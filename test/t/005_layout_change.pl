# A server restarted with another layout (flakeid.node_bits or flakeid.epoch)
# refuses to generate, saying what changed, until a superuser accepts the
# new layout; IDs then continue above every earlier one, also after later
# restarts.  Two sessions that accept at once: one accepts, the other is
# refused while the first writes.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = flake_node('layout', node_id => 5);
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE TABLE ids (n serial PRIMARY KEY, phase text NOT NULL, id flakeid NOT NULL);
	CREATE ROLE bob LOGIN;
	CREATE ROLE carol LOGIN;
	GRANT EXECUTE ON FUNCTION flakeid_accept_layout() TO carol;
	GRANT ALL ON ids, ids_n_seq TO bob, carol});

# Make IDs in a phase; true when they are unique, increasing and above
# every ID of the earlier phases, compared as integers.
sub generate_above_all
{
	my ($phase) = @_;
	my ($ret, $out, $err) = psql_as(
		$node, qq{
		INSERT INTO ids (phase, id)
			SELECT '$phase', nextflake() FROM generate_series(1, 500);
		INSERT INTO ids (phase, id) SELECT '$phase', x FROM nextflakes(500) x});
	if ($ret != 0)
	{
		diag("generating IDs failed: $err");
		return 'error';
	}
	return $node->safe_psql(
		'postgres', qq{
		SELECT count(*) = 1000
			AND min(id::bigint) > (SELECT coalesce(max(id::bigint), -1)
								   FROM ids WHERE phase <> '$phase')
			AND bool_and(prev IS NULL OR id::bigint > prev::bigint)
		FROM (SELECT phase, id, lag(id) OVER (ORDER BY n) AS prev FROM ids) s
		WHERE phase = '$phase'});
}

# Assert that generation is refused with the given DETAIL.
sub refuses
{
	my ($detail, $test_name) = @_;
	foreach my $sql ('SELECT nextflake()', 'SELECT * FROM nextflakes(3)',
		q{INSERT INTO ids (phase, id) VALUES ('never', nextflake())})
	{
		my $err = fails_with($node, $sql, '55000', "$test_name: $sql");
		like($err, qr/ERROR:  55000: flakeid layout has changed/,
			"$test_name: $sql: says the layout changed");
		like($err, $detail, "$test_name: $sql: says what changed");
	}
	is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
		'layout changed', "$test_name: flakeid_status() says layout changed");
	return;
}

is(generate_above_all('first'), 't', 'IDs under the first layout');
my ($ret, $out, $err) = psql_as($node, 'SELECT flakeid_accept_layout()');
is($out, 'f', 'accepting an unchanged layout does nothing');

# a restart with the layout unchanged says nothing of a change
$node->stop;
my $offset = -s $node->logfile;
$node->start;
ok(!$node->log_contains(qr/flakeid layout differs/, $offset),
	'a restart with the layout unchanged logs no layout change');

# node_bits 10 -> 12, then back: the old setting works without accepting
$node->stop;
$node->append_conf('postgresql.conf', 'flakeid.node_bits = 12');
$offset = -s $node->logfile;
$node->start;
ok($node->log_contains(qr/flakeid layout differs/, $offset),
	'the server log reports the layout change');
refuses(qr/DETAIL:  flakeid\.node_bits was 10 and is now 12\.\n/,
	'node_bits 10 -> 12');

$node->stop;
$node->adjust_conf('postgresql.conf', 'flakeid.node_bits', '10');
$node->start;
is(generate_above_all('restored'), 't',
	'restoring node_bits 10 generates again without accepting');

# node_bits 10 -> 12 again, and accept it
$node->stop;
$node->adjust_conf('postgresql.conf', 'flakeid.node_bits', '12');
$node->start;
refuses(qr/DETAIL:  flakeid\.node_bits was 10 and is now 12\.\n/,
	'node_bits 10 -> 12 again');

fails_with($node, 'SELECT flakeid_accept_layout()', '42501',
	'a non-superuser without EXECUTE accepting the layout', user => 'bob');
fails_with($node, 'SELECT flakeid_accept_layout()', '42501',
	'a non-superuser with EXECUTE accepting the layout', user => 'carol');
fails_with($node, 'SELECT nextflake()', '55000',
	'still refusing after the attempts of non-superusers');

# A node id that fits the new 12 node bits but not the 10 still in use is
# refused when a reload sets it: node id 5 stays until the layout is
# accepted.
{
	my $log_at = -s $node->logfile;
	$node->append_conf('postgresql.conf', 'flakeid.node_id = 2000');
	$node->reload;
	my $refused = qr/LOG:  flakeid\.node_id 2000 does not fit the layout in use; node id 5 stays\n.*?DETAIL:  The generator uses flakeid\.node_bits = 10, so node ids run from 0 to 1023\./s;
	my $node_id = sub { $node->safe_psql('postgres', 'SELECT node_id FROM flakeid_status()') };
	# the refusal is logged, or the node id changes
	wait_until(sub { slurp_file($node->logfile, $log_at) =~ $refused || $node_id->() ne '5' }, 60);
	like(slurp_file($node->logfile, $log_at), $refused,
		'a reload to a node id that fits only the layout not yet accepted is refused, and says why');
	is($node_id->(), '5', 'the node id in use stays 5');
	$node->adjust_conf('postgresql.conf', 'flakeid.node_id', '5');
	$node->reload;
}

# A session that decodes before the accept and goes on after it, as a
# pooled connection does: it decodes with the recorded layout (10 node
# bits) before, and with the accepted one (12) after.  The ID has node 5
# and sequence 1 under 10 node bits, node 20 and sequence 1 under 12.
my $pooled = $node->background_psql('postgres');
my $probe = q{SELECT flakeid_node(x), flakeid_sequence(x), (flakeid_decode(x)).node
FROM (SELECT ((5::bigint << 12) | 1)::flakeid AS x) s};
is($pooled->query_safe($probe), '5|1|5',
	'a session decodes with the recorded layout before the accept');

($ret, $out, $err) = psql_as($node, 'SELECT flakeid_accept_layout()');
is($out, 't', 'a superuser accepts the new layout');
is($pooled->query_safe($probe), '20|1|20',
	'the same session decodes with the accepted layout after it');
$pooled->quit;
is(generate_above_all('node_bits 12'), 't',
	'IDs after accepting node_bits 12 are above every earlier ID');
is( $node->safe_psql(
		'postgres', q{
	SELECT bool_and(flakeid_node(id) = 5 AND flakeid_sequence(id) BETWEEN 0 AND 1023
		AND flakeid_timestamp(id) <= clock_timestamp() + current_setting('flakeid.max_lead')::interval)
	FROM ids WHERE phase = 'node_bits 12'}),
	't',
	'they decode to node 5 with 10 sequence bits, within the lead bound');
is( $node->safe_psql('postgres', 'SELECT state, node_bits FROM flakeid_status()'),
	'ready|12', 'flakeid_status() is ready with 12 node bits');
($ret, $out, $err) = psql_as($node, 'SELECT flakeid_accept_layout()');
is($out, 'f', 'accepting again does nothing');

$node->restart;
is(generate_above_all('node_bits 12, restarted'), 't',
	'after a restart with the accepted layout IDs continue above all');

# the epoch moves back a year, right after a burst put the IDs 3.5 s ahead
# of the clock (at 1024 a millisecond under these node bits): the layout
# can be accepted while the old IDs are no more than flakeid.max_lead ahead
my $ahead = $node->safe_psql('postgres',
	'SELECT flakeid_timestamp(max(x)) FROM nextflakes(3600000) x');
$node->stop;
$node->append_conf('postgresql.conf', q{flakeid.epoch = '2019-01-01 00:00:00+00'});
$node->start;
refuses(
	qr/DETAIL:  flakeid\.epoch was 2020-01-01 00:00:00\S* and is now 2019-01-01 00:00:00\S*\.\n/,
	'epoch 2020 -> 2019');
fails_with($node, 'SELECT flakeid_accept_layout()', '42501',
	'a non-superuser accepting the epoch', user => 'carol');
# (until the clock is close enough to the old IDs: at most a few seconds)
for (my $try = 0; $try < 50; $try++)
{
	($ret, $out, $err) = psql_as($node, 'SELECT flakeid_accept_layout()');
	last unless $err =~ /cannot accept the new flakeid layout yet/;
	usleep(100_000);
}
is($out, 't', 'a superuser accepts the new epoch') or diag($err);
is( $node->safe_psql('postgres',
		"SELECT flakeid_timestamp(nextflake()) > '$ahead'::timestamptz"),
	't',
	'the first ID under the earlier epoch is later in time than every ID of the old one'
);
is(generate_above_all('epoch 2019'), 't',
	'IDs after accepting the epoch are above every earlier ID');
is( $node->safe_psql(
		'postgres', q{
	SELECT bool_and(flakeid_timestamp(id) BETWEEN now() - interval '1 hour'
		AND clock_timestamp() + current_setting('flakeid.max_lead')::interval)
	FROM ids WHERE phase = 'epoch 2019'}),
	't',
	'and their timestamps, counted from the new epoch, are the present');

$node->restart;
is(generate_above_all('epoch 2019, restarted'), 't',
	'after a restart with the accepted epoch IDs continue above all');

# The epoch moves forward four years: no ID near the clock is above the
# earlier ones any more.  Accepting must not leave a server that agreed to
# the layout but cannot generate: it refuses to accept, says how far ahead
# the first ID would read and what to do, and generation stays refused.
$node->stop;
$node->adjust_conf('postgresql.conf', 'flakeid.epoch', q{'2023-01-01 00:00:00+00'});
$node->start;
refuses(
	qr/DETAIL:  flakeid\.epoch was 2019-01-01 00:00:00\S* and is now 2023-01-01 00:00:00\S*\.\n/,
	'epoch 2019 -> 2023');
($ret, $out, $err) = psql_as($node, 'SELECT flakeid_accept_layout()');
like($err,
	qr/ERROR:  55000: cannot accept the new flakeid layout yet\n.*?DETAIL:  To stay above every ID issued under the old layout, the first ID under the new one would have to read \S+ \S+, (\d+) ms ahead of the clock\.\n.*?HINT:  Keep the old flakeid\.epoch, or run flakeid_accept_layout\(\) again once the clock has reached that time\./s,
	'accepting a later epoch is refused: the IDs would read too far ahead');
my ($years_ahead) = $err =~ /read \S+ \S+, (\d+) ms ahead/;
cmp_ok(($years_ahead // 0) / (365.25 * 86400000), '>', 3.9,
	'the refusal says the first ID would read four years ahead');
fails_with($node, 'SELECT nextflake()', '55000', 'and generation stays refused');

# node_bits 12 -> 11 (the epoch back at 2019), accepted by two sessions at
# once: each fsync and fdatasync takes 4 s (fsync = on), so that the
# second comes while the first waits for the WAL to hold the new layout's
# lease, after it let go of the shared state's lock and before it writes
# the state file.  Exactly one accepts; the other is refused with 55006
# and accepts nothing.
$node->stop;
$node->adjust_conf('postgresql.conf', 'flakeid.epoch', q{'2019-01-01 00:00:00+00'});
$node->adjust_conf('postgresql.conf', 'flakeid.node_bits', '11');
$node->append_conf('postgresql.conf', 'fsync = on');
start_slow_state_file($node, 4000, slow_sync => 1);
refuses(qr/DETAIL:  flakeid\.node_bits was 12 and is now 11\.\n/, 'node_bits 12 -> 11');
# Each restart above continued from the lease before it, so after several
# in quick succession the recorded lease may lie more than
# flakeid.max_lead ahead of the clock, which accepting refuses (55000):
# wait until it lies a second within.
ok( wait_until(
		sub {
			$node->safe_psql('postgres',
				q{SELECT max(lease_end) < clock_timestamp() + current_setting('flakeid.max_lead')::interval - interval '1 s'
				  FROM flakeid_state_file() WHERE valid}) eq 't';
		},
		30),
	'two sessions accept at once: the recorded lease within flakeid.max_lead of the clock first');
my $accept_log = -s $node->logfile;
my $slow = slow_state_file($node);
open my $slow_fh, '>', $slow or die "could not create $slow: $!";
close $slow_fh;
my ($first_out, $first_err) = ('', '');
my $first = IPC::Run::start(
	[ 'psql', '-X', '-A', '-t', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'),
		'-c', 'SELECT flakeid_accept_layout()' ],
	'>', \$first_out, '2>', \$first_err, IPC::Run::timeout(120));
ok( wait_until(
		sub {
			$node->safe_psql('postgres',
				q{SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT flakeid_accept_layout()' AND state = 'active'})
			  eq '1';
		},
		30),
	'two sessions accept at once: the first is under way');
my ($second_ret, $second_out, $second_err, $second_state) =
  psql_state($node, 'SELECT flakeid_accept_layout()');
unlink $slow or die "could not remove $slow: $!";
$first->finish;
my $first_state = sqlstate_of($first_err);
my @accepted = grep { $_ eq 't' } ($first_out =~ s/\s+$//r, $second_out);
my @refused = grep { defined $_ && $_ eq '55006' } ($first_state, $second_state);
is(scalar(@accepted) . '|' . scalar(@refused), '1|1',
	'two sessions accept at once: one accepts, the other is refused with 55006')
  or diag("first: $first_out $first_err\nsecond: $second_out $second_err");
like($first_err . $second_err, qr/another session is accepting the flakeid layout/,
	'two sessions accept at once: the refusal says why');
my @accepts = slurp_file($node->logfile, $accept_log) =~ /flakeid accepted a new layout/g;
is(scalar(@accepts), 1, 'two sessions accept at once: one accept is made and logged');
like(slurp_file($node->logfile, $accept_log),
	qr/LOG:  flakeid accepted a new layout: node_bits 11, epoch 2019-01-01 00:00:00\+00\n/,
	'the log names the accepted layout');
is(generate_above_all('node_bits 11'), 't',
	'two sessions accept at once: IDs after it are above every earlier ID');

$node->stop;
done_testing();
