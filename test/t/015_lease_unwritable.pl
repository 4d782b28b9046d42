# The time lease file becomes read-only while IDs are being generated:
# generation stops with a clear error once the last lease written to disk
# runs out, and never issues an ID at or past it; with the file writable
# again generation resumes; after restarts, clean or crash, and a restart
# with the file still read-only, no ID is ever <= one issued before.  A
# lease worker told to stop comes back.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

plan skip_all => 'file permissions do not bind the superuser root' if $> == 0;

my $node = flake_node('lease', quiet => 1, node_id => 15);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE ids (id flakeid NOT NULL, phase int NOT NULL);
});
my $state_file = $node->data_dir . '/flakeid.state';
my $low_bits = FLAKE_LOW_BITS;

# Insert 1000 IDs tagged with $phase; returns (ok, SQLSTATE, error text).
sub generate
{
	my ($phase) = @_;
	my ($ret, $out, $err, $state) = psql_state($node,
		"INSERT INTO ids SELECT nextflake(), $phase FROM generate_series(1, 1000)");
	return ($ret == 0, $state, $err);
}

# The lease end in use, in ms since the flakeid epoch.
sub lease_in_memory
{
	return $node->safe_psql('postgres',
		'SELECT (extract(epoch FROM lease_end - epoch) * 1000)::bigint FROM flakeid_status()'
	);
}

# Phase 1: generation with a writable file.
my ($ok) = generate(1);
ok($ok, 'IDs are generated');
my @copies = state_file_copies($node);
is(scalar(grep { $_->{valid} eq 't' } @copies), 2,
	'the lease file holds two valid copies');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM flakeid_state_file() f, flakeid_status() s
	WHERE f.valid AND f.node_bits = s.node_bits AND f.epoch = s.epoch}),
	2,
	'the lease file records the layout');
my $lease = lease_on_disk($node);
is($node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE (id::bigint >> $low_bits) >= $lease"),
	0, 'every ID issued is below the lease on disk');
ok(lease_in_memory() <= lease_on_disk($node),
	'the lease in use never reaches past the lease on disk');

# Phase 2: the file turns read-only while a session generates, committing
# every ID, until an error stops it (or 20 million IDs): every ID a call
# returned is kept, up to the last one before the error, so that an ID in
# the lease's last millisecond, or past it, would be seen.
$node->safe_psql(
	'postgres', q{
CREATE PROCEDURE generate_until_error(ph int, batches int)
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. batches * 1000 LOOP
		INSERT INTO ids VALUES (nextflake(), ph);
		COMMIT;
	END LOOP;
END $$;
});
my $session = $node->background_psql(
	'postgres',
	on_error_stop => 0,
	timeout       => 180);
$session->query_safe('\set VERBOSITY verbose');
# commits that wait for no disk: the calls come every few microseconds, so
# that the last milliseconds of the lease see some, on a loaded machine too
$session->query_safe('SET synchronous_commit = off');
$session->query_until(qr/generating/,
	"\\echo generating\nCALL generate_until_error(2, 20000);\n");
ok( wait_until(
		sub {
			$node->safe_psql('postgres',
				'SELECT count(*) FROM ids WHERE phase = 2') > 0;
		},
		30),
	'a session is generating');
chmod 0444, $state_file or die "chmod $state_file: $!";
$session->query('SELECT 1');
my $err = $session->{stderr};
my $state = sqlstate_of($err);
$session->quit;
my $batches = $node->safe_psql('postgres', 'SELECT count(*) / 1000 FROM ids WHERE phase = 2');
ok($batches < 20000, "generation stopped with an error (after $batches batches)");
is($state, '42501', 'with SQLSTATE 42501');
like(
	$err,
	qr/could not renew the flakeid time lease in file "flakeid\.state": Permission denied/,
	'the error names the file and the cause');
like($err, qr/HINT:  Make the file writable/, 'the hint says what to do');
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'lease failing', 'flakeid_status() reports the failing lease');

# The lease on disk cannot change any more: nothing was issued at or past
# it, not even while calls keep coming as the clock passes it.  The
# session's IDs ran into the end of that lease (within its last 50 ms, far
# past the half of it at which a renewal is due), so the check below is
# one that a lease ignored would fail; 50 ms leave room for a loaded
# machine that does not run the session in every millisecond.
my $durable = lease_on_disk($node);
ok( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE phase = 2 AND (id::bigint >> $low_bits) >= $durable - 50") > 0,
	'the session generated up to the last milliseconds of the durable lease')
  or diag('durable ' . $durable . ', the last ID\'s ms '
	  . $node->safe_psql('postgres', "SELECT max(id::bigint >> $low_bits) FROM ids WHERE phase = 2")
	  . ', the error: ' . $err);
my $refused = 0;
foreach my $i (1 .. 20)
{
	($ok, $state) = generate(2);
	$refused++ if !$ok && $state eq '42501';
	usleep(100_000);
}
is($refused, 20, 'every call in the next 2 s fails the same way');
is(lease_on_disk($node), $durable, 'the lease on disk did not move');
is(lease_in_memory(), $durable, 'the lease in use is the last one written');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE (id::bigint >> $low_bits) >= $durable"),
	0,
	'no ID was stored at or past the last durable lease');
my $max_before = $node->safe_psql('postgres', 'SELECT max(id)::bigint FROM ids');
ok($node->log_contains(qr/could not write flakeid state file "flakeid\.state": Permission denied/),
	'the server log tells');

# Phase 3: the file is writable again.
chmod 0600, $state_file or die "chmod $state_file: $!";
ok(wait_until(sub { (generate(3))[0] }, 20, 0.1), 'generation resumes');
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'ready', 'flakeid_status() reports ready');
ok(lease_on_disk($node) > $durable, 'the lease on disk moved on');
generate(3) foreach 1 .. 5;
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE phase = 3 AND id <= $max_before"),
	0,
	'the IDs after the outage are above those before');
ok(wait_until(sub { $node->log_contains(qr/flakeid state file "flakeid\.state" written again/) }, 5),
	'the server log tells of the recovery');

# Phase 4: a clean restart, then a crash restart.
$max_before = $node->safe_psql('postgres', 'SELECT max(id)::bigint FROM ids');
$node->restart;
($ok, $state, $err) = generate(4);
ok($ok, 'generation works after a clean restart') or diag($err);
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE phase = 4 AND id <= $max_before"),
	0,
	'after a clean restart every ID is above everything before');

generate(4);
$max_before = $node->safe_psql('postgres',
	'SELECT greatest(max(id)::bigint, (SELECT last_id::bigint FROM flakeid_status())) FROM ids');
crash_node($node);
$node->start;
($ok, $state, $err) = generate(5);
ok($ok, 'generation works after a crash restart') or diag($err);
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE phase = 5 AND id <= $max_before"),
	0,
	'after a crash restart every ID is above everything before');

# Phase 5: a restart with the file read-only issues nothing, until it is
# writable again.
$max_before = $node->safe_psql('postgres',
	'SELECT greatest(max(id)::bigint, (SELECT last_id::bigint FROM flakeid_status())) FROM ids');
$node->stop;
chmod 0444, $state_file or die "chmod $state_file: $!";
$node->start;
$refused = 0;
foreach my $i (1 .. 10)
{
	($ok, $state) = generate(6);
	$refused++ if !$ok && $state eq '42501';
	usleep(100_000);
}
is($refused, 10, 'after a restart with a read-only file every call fails');
chmod 0600, $state_file or die "chmod $state_file: $!";
ok(wait_until(sub { (generate(6))[0] }, 20, 0.1), 'and generation resumes once it is writable');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE phase = 6 AND id <= $max_before"),
	0,
	'above everything before');

# Phase 5b: the file turns read-only, the lease worker logs renewals to
# WAL that it cannot write to the file, and the server crashes: crash
# recovery replays leases newer than the file.  The server starts all the
# same; generation is refused with the file's error until the file is
# writable, and then continues above everything before.
$max_before = $node->safe_psql('postgres',
	'SELECT greatest(max(id)::bigint, (SELECT last_id::bigint FROM flakeid_status())) FROM ids');
chmod 0444, $state_file or die "chmod $state_file: $!";
ok( wait_until(
		sub { my ($gen_ok, $gen_state) = generate(8); !$gen_ok && $gen_state eq '42501' },
		20, 0.1),
	'with the file read-only, the lease runs out');
crash_node($node);
ok($node->start(fail_ok => 1), 'after a crash with the file read-only the server starts');
ok($node->log_contains(qr/could not write flakeid state file "flakeid\.state": Permission denied/),
	'the log says that the replayed lease could not be written');
$refused = 0;
foreach my $i (1 .. 10)
{
	($ok, $state, $err) = generate(8);
	$refused++ if !$ok && $state eq '42501';
	usleep(100_000);
}
is($refused, 10, 'after that crash every call fails with the file\'s error');
like($err, qr/could not write flakeid state file "flakeid\.state": Permission denied/,
	'the error names the file and the cause');
is( $node->safe_psql('postgres',
		'CREATE TABLE after_crash AS SELECT g FROM generate_series(1, 10) g;
		 SELECT count(*) FROM after_crash'),
	'10', 'the rest of the server works: it writes and reads tables');
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'state file behind', 'flakeid_status() says the file is behind');
chmod 0600, $state_file or die "chmod $state_file: $!";
# the lease worker writes the lease it kept as soon as it can, before
# any call asks
ok( wait_until(
		sub { $node->safe_psql('postgres', 'SELECT state FROM flakeid_status()') eq 'ready' }, 20),
	'once the file is writable, the lease worker writes the kept lease');
ok(wait_until(sub { (generate(9))[0] }, 20, 0.1), 'generation resumes once the file is writable');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM ids WHERE phase = 9 AND id <= $max_before"),
	0,
	'above everything before the crash');

# Phase 5c: a renewal ahead of need fails (the file read-only, a call
# within the lease's last half asked for it), and then no call comes:
# none waits for a lease past the one in use.  Once the file is writable
# the lease worker writes it again on its own, so that the first call
# after the outage does not fail with the error of a file that is fixed.
# One session calls, a few ms apart, until the state says the lease is
# failing, long before the lease in use runs out (it starts with more
# than 700 ms left; the failing renewal comes with 500 ms left).
my $caller = $node->background_psql('postgres', on_error_stop => 0, timeout => 60);
ok( wait_until(
		sub {
			(generate(10))[0]
			  && $caller->query(
				q{SELECT lease_end - clock_timestamp() > interval '700 ms' FROM flakeid_status()}) eq 't';
		},
		20, 0.01),
	'a fresh lease before the file turns read-only again');
chmod 0444, $state_file or die "chmod $state_file: $!";
my ($calls, $calls_failed) = (0, 0);
ok( wait_until(
		sub {
			return 1
			  if $caller->query(q{SELECT state FROM flakeid_status()}) eq 'lease failing';
			my $out = $caller->query('SELECT nextflake() IS NOT NULL');
			$calls++;
			$calls_failed++ if $caller->{stderr} ne '' || $out ne 't';
			return $calls_failed > 0;
		},
		30, 0.005),
	'a renewal ahead of need fails while the file is read-only');
$caller->quit;
is($calls_failed, 0, "every call ($calls) got an ID within the lease in use");
# a renewal asked for by the last calls fails too before the file is fixed
usleep(300_000);
chmod 0600, $state_file or die "chmod $state_file: $!";
ok( wait_until(
		sub { $node->safe_psql('postgres', 'SELECT state FROM flakeid_status()') eq 'ready' }, 20),
	'once the file is writable, the lease worker writes it again without a call');
my ($first_ok, undef, $first_err) = generate(11);
ok($first_ok, 'and the first call after the outage gets IDs') or diag($first_err);

# Phase 6: the lease worker is told to stop (SIGTERM, as by an operator's
# kill).  It must come back, as it does after a crash, and generation go on.
my ($worker) = server_processes($node, qr/flakeid lease worker/);
ok($worker, 'the lease worker runs');
kill 'TERM', $worker;
my $back = wait_until(
	sub {
		my @now = server_processes($node, qr/flakeid lease worker/);
		return @now && $now[0] != $worker;
	},
	10);
ok($back, 'after SIGTERM a new lease worker starts');
if ($back)
{
	my @gen = generate(7);
	ok($gen[0], 'and generation goes on') or diag($gen[2]);
}

my $total = ids_unique($node, 'SELECT id FROM ids', 'the whole test');
ok($total >= 10000, "$total IDs inserted");

# A clean stop ends the lease worker quietly: no FATAL line for it.
my $before_stop = -s $node->logfile;
$node->stop;
ok(!$node->log_contains(qr/FATAL:.*flakeid lease worker/, $before_stop),
	'a clean stop logs no FATAL line for the lease worker');
done_testing();
