# The server's wall clock steps back at runtime, by 300 ms and then by
# another 10 s, while two sessions insert rows with DEFAULT nextflake():
# no duplicate, each session's IDs strictly increasing in insert order, and
# for the 10 s step callers either waited for the clock or failed with the
# clock error.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

plan skip_all => 'libfaketime is not installed' unless faketime_library();

my $node = flake_node('steps', quiet => 1, node_id => 11);
start_faked($node, '+0');
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (
	ord bigserial,
	sess int NOT NULL,
	id flakeid NOT NULL DEFAULT nextflake());
});

my $mon = $node->background_psql('postgres');
my $offset = server_clock_offset($mon);
ok(abs($offset) < 0.1, 'the server starts with the real clock')
  or diag("offset $offset s");

# Two sessions insert one row per transaction for 20 s.
my ($bench, $out, $err) = start_pgbench($node, 'insert',
	'INSERT INTO t (sess) VALUES (:client_id);', 180,
	'-c', '2', '-j', '2', '-T', '20');

# Rows committed by each session since ord $from.
sub rows_since
{
	my ($from) = @_;
	return $mon->query_safe(
		"SELECT count(*) FILTER (WHERE sess = 0) || ' ' || count(*) FILTER (WHERE sess = 1) FROM t WHERE ord > $from"
	);
}

# Wait until both sessions have committed rows after ord $from.
sub both_insert_since
{
	my ($from, $timeout) = @_;
	return wait_until(
		sub {
			my ($rows0, $rows1) = split / /, rows_since($from);
			return $rows0 > 0 && $rows1 > 0;
		},
		$timeout);
}

sub max_ord
{
	return $mon->query_safe('SELECT coalesce(max(ord), 0) FROM t');
}

ok(both_insert_since(0, 30), 'both sessions are inserting');

# Step 1: 300 ms back, well within flakeid.max_lead.
my $st0 = status_of($mon);
my $ord0 = max_ord();
set_clock($node, '-0.3');
$offset = wait_clock_offset($mon, -0.3, 0.1, 10);
ok(abs($offset + 0.3) <= 0.1, 'the server clock stepped back by 300 ms')
  or diag("offset $offset s");
ok(both_insert_since($ord0, 30),
	'both sessions go on inserting after the 300 ms step');
ok( wait_until(
		sub {
			status_of($mon)->{clock_steps_back} > $st0->{clock_steps_back};
		},
		5),
	'the lease worker saw the clock step back by 300 ms');
sleep 1;
is(status_of($mon)->{clock_steps_back} - $st0->{clock_steps_back},
	1, 'the lease worker counted the 300 ms step once');

# Step 2: another 10 s back, beyond flakeid.max_lead (5 s).
my $st1 = status_of($mon);
my $ord1 = max_ord();
set_clock($node, '-10.3');
$offset = wait_clock_offset($mon, -10.3, 0.1, 10);
ok(abs($offset + 10.3) <= 0.1, 'the server clock stepped back by 10 more s')
  or diag("offset $offset s");
my $inserting = both_insert_since($ord1, 40);
my $bench_ok = $bench->finish;
my $st2 = status_of($mon);

is($st2->{clock_steps_back} - $st1->{clock_steps_back},
	1, 'the lease worker saw the clock step back by 10 s, once');
my @clock_errors =
  $$err =~ /system clock is \d+ ms behind the last flakeid issued/g;
my $waits = $st2->{waits} - $st1->{waits};
ok($waits > 0 || @clock_errors,
	'after the 10 s step callers waited or failed with the clock error');
note "after the 10 s step: $waits waits, " . scalar(@clock_errors) . " clock errors";
if (@clock_errors)
{
	# a failing client stops; the other errors must be the clock error
	my @errors = $$err =~ /ERROR:  (.*)/g;
	is(scalar(grep { !/system clock is \d+ ms behind/ } @errors),
		0, 'pgbench saw no error but the clock error')
	  or diag($$err);
}
else
{
	ok($inserting, 'both sessions go on inserting after the 10 s step');
	ok($bench_ok, 'pgbench ran without error') or diag($$err);
}

# Properties of every ID inserted.
my $rows = ids_unique($node, 'SELECT id FROM t', 'two sessions across both steps');
ok($rows > 1000, "the sessions inserted $rows rows");
ids_increasing($node, 'SELECT sess, ord, id FROM t', 'ord',
	"each session's IDs in insert order", partition => 'sess');
is( $node->safe_psql(
		'postgres', 'SELECT count(*) FROM t WHERE flakeid_node(id) <> 11'),
	0,
	'every ID carries node id 11');
note "IDs: $rows rows, $st2->{clock_steps_back} clock steps back seen";

$mon->quit;
$node->stop;
done_testing();
