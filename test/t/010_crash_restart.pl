# A crash (SIGKILL to the postmaster and all its children) in the middle of
# generation, then restarts with the clock set back: no ID issued after the
# crash is <= an ID issued before it.  With the clock an hour behind every
# call fails with the clock error; with the clock 2 s behind (within
# flakeid.max_lead) generation goes on above the old maximum without error.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'libfaketime is not installed' unless faketime_library();

my $node = flake_node('crash', quiet => 1, node_id => 7);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE ids (id flakeid NOT NULL, phase int NOT NULL);

-- n calls of nextflake() and of nextflakes(3), each in its own
-- subtransaction: how many calls returned IDs, how many of the IDs were
-- not above floor, how many calls failed with the clock error, how many
-- failed otherwise (and one such error).  IDs returned are kept in ids.
CREATE FUNCTION probe(n int, floor bigint, ph int,
	OUT ok_calls int, OUT not_above int, OUT clock_errors int,
	OUT other_errors int, OUT other_error text)
LANGUAGE plpgsql AS $$
DECLARE
	v flakeid;
	st text;
	msg text;
BEGIN
	ok_calls := 0; not_above := 0; clock_errors := 0; other_errors := 0;
	FOR i IN 1 .. n LOOP
		BEGIN
			IF i % 2 = 0 THEN
				v := nextflake();
				INSERT INTO ids VALUES (v, ph);
				IF v::bigint <= floor THEN not_above := not_above + 1; END IF;
			ELSE
				FOR v IN SELECT nextflakes(3) LOOP
					INSERT INTO ids VALUES (v, ph);
					IF v::bigint <= floor THEN not_above := not_above + 1; END IF;
				END LOOP;
			END IF;
			ok_calls := ok_calls + 1;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
			IF st = '58000' AND msg ~ '^system clock is [0-9]+ ms behind the last flakeid issued$' THEN
				clock_errors := clock_errors + 1;
			ELSE
				other_errors := other_errors + 1;
				other_error := st || ': ' || msg;
			END IF;
		END;
	END LOOP;
END $$;
});

# Phase 1: IDs from the real clock, some of them borrowed ahead of it.
$node->safe_psql('postgres',
	'INSERT INTO ids SELECT nextflake(), 1 FROM generate_series(1, 200000)');
# reserve about 1.5 s of sequence (4096 IDs per ms) without returning it
$node->safe_psql('postgres', "SELECT nextflakes(2000000) LIMIT 1;\n" x 3);
$node->safe_psql('postgres',
	'INSERT INTO ids SELECT nextflake(), 1 FROM generate_series(1, 1000)');

# A session keeps generating while the server dies.
my $busy = $node->background_psql('postgres', on_error_stop => 0);
$busy->query_until(qr/generating/, q{
\echo generating
SELECT count(*) FROM (SELECT nextflake() FROM generate_series(1, 200000000)) s;
});
my $before = status_of($node);
my $pre_max = $node->safe_psql('postgres',
	"SELECT greatest(max(id)::bigint, $before->{last_id}) FROM ids");
my $pre_count = $node->safe_psql('postgres', 'SELECT count(*) FROM ids');
note "before the crash: $before->{issued} IDs issued, lead $before->{lead_ms} ms";
ok($pre_max > 0, 'IDs were generated before the crash');

my $killed = crash_node($node);
ok($killed >= 2, "postmaster and $killed processes in all killed");
eval { $busy->{run}->kill_kill; };

# Phase 2: crash restart with the clock an hour behind.
start_faked($node, '-1h');
my $offset = server_clock_offset($node);
ok(abs($offset + 3600) < 60,
	'the restarted server reads a clock an hour behind')
  or diag("server clock offset: $offset s");
is($node->safe_psql('postgres', 'SELECT count(*) FROM ids'),
	$pre_count, 'the committed IDs survived the crash');

# a call that waited instead of failing would end with the timeout, 57014
my ($ret, $out, $err, $state) = psql_state($node,
	"SET statement_timeout = '30s';\nSELECT nextflake();");
is($state, '58000', 'nextflake() fails with SQLSTATE 58000');
like(
	$err,
	qr/system clock is (\d+) ms behind the last flakeid issued/,
	'the error says the clock is behind');
my ($behind) = $err =~ /system clock is (\d+) ms behind/;
ok(defined $behind && $behind > 3_500_000 && $behind < 3_700_000,
	'the error gives the size of the step, about an hour')
  or diag($err);
like($err, qr/HINT:  .*clock/, 'with a hint');

($ret, $out, $err, $state) =
  psql_state($node, 'INSERT INTO ids VALUES (nextflake(), 2)');
is($state, '58000', 'an INSERT with nextflake() fails the same way');

my ($ok_calls, $not_above, $clock_errors, $other_errors, $other_error) =
  split /\|/,
  $node->safe_psql('postgres', "SELECT * FROM probe(2000, $pre_max, 2)"), -1;
is($not_above, 0,
	'with the clock an hour behind no ID is <= the pre-crash maximum');
is($other_errors, 0, 'no call failed with another error')
  or diag($other_error);
is($ok_calls + $clock_errors, 2000,
	'each of 2000 calls failed with the clock error or returned IDs above it');
ok($clock_errors > 0, "calls failed with the clock error ($clock_errors)");
note "with the clock an hour behind: $ok_calls calls returned IDs, "
  . "$clock_errors failed with the clock error";

# The clock error leaves the state usable: the status still answers.
my $status = status_of($node);
is($status->{state}, 'ready', 'flakeid_status() reports ready');

# Phase 3: a clean restart with the clock 2 s behind, within max_lead.
$node->stop;
start_faked($node, '-2');
$offset = server_clock_offset($node);
ok(abs($offset + 2) < 0.5, 'the server reads a clock 2 s behind')
  or diag("server clock offset: $offset s");

($ok_calls, $not_above, $clock_errors, $other_errors, $other_error) =
  split /\|/,
  $node->safe_psql('postgres', "SELECT * FROM probe(2000, $pre_max, 3)"), -1;
is($not_above, 0,
	'with the clock 2 s behind no ID is <= the pre-crash maximum');
is($clock_errors + $other_errors, 0, 'and no call failed')
  or diag($other_error // '');
is($ok_calls, 2000, 'every call returned IDs');

($ret, $out, $err) = $node->psql('postgres',
	'INSERT INTO ids SELECT nextflake(), 3 FROM generate_series(1, 100000)');
is($ret, 0, 'a bulk INSERT works with the clock 2 s behind') or diag($err);
is( $node->safe_psql(
		'postgres', "SELECT count(*) FROM ids WHERE phase > 1 AND id <= $pre_max"),
	0,
	'no ID after the crash is <= the pre-crash maximum');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE flakeid_node(id) <> 7'),
	0, 'every ID carries node id 7');

# Phase 4: a backend killed while generating; the postmaster reinitialises
# shared memory and generation resumes from the lease on disk.
$node->safe_psql('postgres',
	"ALTER SYSTEM SET restart_after_crash = on;\nSELECT pg_reload_conf();");
$busy = $node->background_psql('postgres', on_error_stop => 0);
$busy->query_until(qr/generating/, q{
\echo generating
SELECT count(*) FROM (SELECT nextflake() FROM generate_series(1, 200000000)) s;
});
my $victim;
ok( wait_until(
		sub {
			$victim = $node->safe_psql('postgres',
				"SELECT pid FROM pg_stat_activity WHERE query LIKE '%200000000%' "
				  . "AND state = 'active' AND pid <> pg_backend_pid()");
			return $victim =~ /^\d+$/;
		},
		30),
	'a backend is generating');
$before = status_of($node);
$pre_max = $node->safe_psql('postgres',
	"SELECT greatest(max(id)::bigint, $before->{last_id}) FROM ids");
kill 'KILL', $victim;
eval { $busy->{run}->kill_kill; };
ok( wait_until(
		sub {
			$node->log_contains(
				qr/all server processes terminated; reinitializing/);
		},
		60),
	'the postmaster reinitialises after the backend crash');
ok( wait_until(
		sub {
			my ($r, $o) = $node->psql('postgres',
				'SELECT started FROM flakeid_status()');
			return $r == 0 && $o ne '' && $o ne $before->{started};
		},
		60),
	'the server is back with new shared memory');
($ok_calls, $not_above, $clock_errors, $other_errors, $other_error) =
  split /\|/,
  $node->safe_psql('postgres', "SELECT * FROM probe(1000, $pre_max, 4)"), -1;
is($not_above, 0, 'after the backend crash no ID is <= the maximum before it');
is($ok_calls, 1000, 'and every call returned IDs') or diag($other_error // '');

# Phase 5: the state file falls behind the WAL (read-only while the lease
# worker logs renewals), the server crashes and restarts with the clock
# an hour behind.  Once the file is writable the lease worker writes a
# floor above the replayed lease, on the same timeline: no promotion, so
# a call that would wait for the clock fails with the clock error, not
# the promotion floor's.
my $state_file = $node->data_dir . '/flakeid.state';
$node->safe_psql('postgres',
	'INSERT INTO ids SELECT nextflake(), 5 FROM generate_series(1, 1000)');
chmod 0444, $state_file or die "chmod $state_file: $!";
ok( wait_until(
		sub { (psql_state($node, 'SELECT nextflake()'))[3] eq '42501' }, 20,
		0.1),
	'with the state file read-only, the lease runs out');
$before = status_of($node);
$pre_max = $node->safe_psql('postgres',
	"SELECT greatest(max(id)::bigint, $before->{last_id}) FROM ids");
crash_node($node);
start_faked($node, '-1h');
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'state file behind', 'after the crash the state file is behind the WAL');
chmod 0600, $state_file or die "chmod $state_file: $!";
ok( wait_until(
		sub {
			$node->safe_psql('postgres', 'SELECT state FROM flakeid_status()') eq
			  'ready';
		},
		20),
	'once the file is writable, the lease worker writes the floor');
($ret, $out, $err, $state) = psql_state($node,
	"SET statement_timeout = '30s';\nSELECT nextflake();");
is($state, '58000',
	'after a floor on the same timeline, the clock set back fails with 58000');
like($err, qr/system clock is \d+ ms behind the last flakeid issued/,
	'the error says the clock is behind, not that a promotion floor is ahead');
($ok_calls, $not_above, $clock_errors, $other_errors, $other_error) =
  split /\|/,
  $node->safe_psql('postgres', "SELECT * FROM probe(200, $pre_max, 5)"), -1;
is($not_above, 0, 'no ID after the floor is <= the maximum before the crash');
is($other_errors, 0, 'and no call failed with another error')
  or diag($other_error);

ids_unique($node, 'SELECT id FROM ids', 'all phases');

$node->stop;
done_testing();
