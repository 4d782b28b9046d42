# Many writers, one reader: three producers (flakeid node ids 1, 2 and 3)
# insert concurrently with DEFAULT nextflake(), and one aggregator merges
# their rows through PostgreSQL's built-in logical replication, one
# subscription per producer, in binary and in text mode.
#
# The aggregator does not preload flakeid.  It only receives and reads
# rows: the apply workers hand it IDs that were made elsewhere, and the type's
# input/receive functions and the decode functions need no shared memory.  So
# this is the smallest configuration a pure reader needs, and it also
# proves that the library loads on demand in the apply workers.  (A reader
# that also writes rows of its own must preload flakeid with a node id of its
# own, such as 4; the end of this test shows that nextflake() refuses there.)
#
# Generated IDs are checked by their properties and never printed.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

# The workload: per producer, $clients pgbench sessions run $txns
# transactions each, and every transaction inserts $batch rows and then
# pauses $pause_ms, so that each load lasts long enough (over a second) to
# overlap the others whatever the start-up skew of the three pgbench runs.
my $clients  = 2;
my $txns     = 60;
my $batch    = 250;
my $pause_ms = 20;
my $preload_rows = 300;    # inserted before the subscriptions exist
my $load_rows    = $clients * $txns * $batch;
my $per_producer = $preload_rows + $load_rows;

# How long the aggregator may take to catch up, in seconds.
my $catchup_bound = 120;

my $schema = q{
	CREATE EXTENSION flakeid;
	CREATE TABLE events (
		id flakeid PRIMARY KEY DEFAULT nextflake(),
		origin text,
		n int,
		body text);
};

# A digest of a set of rows, with their decoded parts, in ID order; the same
# text on two servers means the same rows, and that both servers decode them
# alike.
sub digest_sql
{
	my ($where) = @_;
	return qq{
	SELECT count(*) || ' ' || coalesce(md5(string_agg(
			format('%s|%s|%s|%s|%s|%s|%s', id, origin, n, body,
				flakeid_node(id), flakeid_sequence(id),
				extract(epoch FROM flakeid_timestamp(id))),
			',' ORDER BY id)), '-')
	FROM events $where};
}

#
# Three producers.
#
my @producers;
for my $node_id (1 .. 3)
{
	my $p = PostgreSQL::Test::Cluster->new("producer$node_id");
	$p->init(allows_streaming => 'logical');
	$p->append_conf(
		'postgresql.conf', qq{
shared_preload_libraries = 'flakeid'
flakeid.node_id = $node_id
shared_buffers = 16MB
max_connections = 20
});
	$p->start;
	$p->safe_psql('postgres', $schema);
	push @producers, { node => $p, id => $node_id, origin => "p$node_id" };
}

foreach my $pr (@producers)
{
	my $p = $pr->{node};
	is( $p->safe_psql(
			'postgres',
			q{SELECT current_setting('wal_level') || ' '
			  || current_setting('flakeid.node_id') || ' '
			  || (SELECT state FROM flakeid_status())}),
		"logical $pr->{id} ready",
		"$pr->{origin}: wal_level logical, node id $pr->{id}, generator ready");
	$p->safe_psql('postgres',
		"CREATE PUBLICATION pub_$pr->{origin} FOR TABLE events");
}

#
# Before any subscription exists, what pgoutput sends for a flakeid column:
# on producer 1, a probe slot decodes the first rows as a binary-mode and as
# a text-mode subscriber would receive them.
#
my $p1 = $producers[0]{node};
$p1->safe_psql('postgres',
	"SELECT pg_create_logical_replication_slot('probe', 'pgoutput')");

# The rows that exist before the subscriptions are created; they reach the
# aggregator through the initial table synchronisation.  They are made one
# producer after the other, so they have n < 0 to tell them from the rows of
# the concurrent load (n > 0).
foreach my $pr (@producers)
{
	$pr->{node}->safe_psql(
		'postgres', qq{
		INSERT INTO events (origin, n, body)
		SELECT '$pr->{origin}', -g, md5(g::text || random()::text)
		FROM generate_series(1, $preload_rows) g});
}

# Decode the probe slot's pgoutput messages (protocol version 1): the
# insert messages' first column (id), as (kind, value), and the names of the
# types announced in type messages.
sub probe_changes
{
	my ($binary) = @_;
	my $hex = $p1->safe_psql(
		'postgres', qq{
		SELECT encode(data, 'hex')
		FROM pg_logical_slot_peek_binary_changes('probe', NULL, NULL,
			'proto_version', '1', 'publication_names', 'pub_p1',
			'binary', '$binary')});
	my (@ids, @types, $bad);
	foreach my $msg (split /\n/, $hex)
	{
		my $data = pack('H*', $msg);
		my $kind = substr($data, 0, 1);
		if ($kind eq 'Y')
		{
			# Type: oid, namespace\0, name\0
			my ($oid, $nsp, $name) = unpack('N Z* Z*', substr($data, 1));
			push @types, $name;
		}
		elsif ($kind eq 'I')
		{
			# Insert: relid, 'N', natts, then per column kind [len data]
			my ($relid, $new, $natts, $colkind, $len) =
			  unpack('N a n a N', substr($data, 1));
			my $value = substr($data, 1 + 4 + 1 + 2 + 1 + 4, $len);
			$bad++ unless $new eq 'N' && $natts == 4;
			push @ids, [ $colkind, $len, $value ];
		}
	}
	return (\@ids, \@types, $bad // 0);
}

my ($bin_ids, $bin_types, $bin_bad) = probe_changes('true');
my ($txt_ids, $txt_types, $txt_bad) = probe_changes('false');
my @p1_ids = split /\n/,
  $p1->safe_psql('postgres', 'SELECT id FROM events ORDER BY id');

is(scalar(@$bin_ids), $preload_rows,
	'binary probe: one insert message per row');
is($bin_bad, 0, 'binary probe: insert messages carry a new tuple of 4 columns');
is( scalar(grep { $_->[0] eq 'b' && $_->[1] == 8 } @$bin_ids),
	$preload_rows,
	'binary probe: the flakeid column is sent in binary, 8 bytes');
# the 8 bytes are the ID in network byte order (int8send)
my @bin_values = map { unpack('q>', $_->[2]) } @$bin_ids;
ok(join(',', sort { $a <=> $b } @bin_values) eq join(',', @p1_ids),
	'binary probe: the binary values are exactly the IDs of the rows');
ok( (grep { (($_ >> 12) & 1023) != 1 } @bin_values) == 0,
	'binary probe: every binary value carries node id 1');
ok((grep { $_ eq 'flakeid' } @$bin_types),
	'binary probe: pgoutput announces the flakeid type by name');

is(scalar(@$txt_ids), $preload_rows, 'text probe: one insert message per row');
is($txt_bad, 0, 'text probe: insert messages carry a new tuple of 4 columns');
is( scalar(grep { $_->[0] eq 't' } @$txt_ids),
	$preload_rows, 'text probe: the flakeid column is sent as text');
ok( join(',', sort { $a <=> $b } map { $_->[2] } @$txt_ids) eq
	  join(',', @p1_ids),
	'text probe: the text values are exactly the IDs of the rows');

$p1->safe_psql('postgres', "SELECT pg_drop_replication_slot('probe')");

#
# The aggregator: the extension first, then the table, then the
# subscriptions.  Producers 1 and 3 in binary mode, producer 2 in text.
#
my $agg = PostgreSQL::Test::Cluster->new('aggregator');
$agg->init;
$agg->append_conf(
	'postgresql.conf', q{
max_logical_replication_workers = 8
max_worker_processes = 16
max_connections = 20
});
$agg->start;
is($agg->safe_psql('postgres', 'SHOW shared_preload_libraries'),
	'', 'aggregator: flakeid is not preloaded');
$agg->safe_psql('postgres', $schema);

my %binary = (p1 => 'true', p2 => 'false', p3 => 'true');
foreach my $pr (@producers)
{
	my $o       = $pr->{origin};
	my $connstr = sprintf('host=%s port=%d dbname=postgres',
		$pr->{node}->host, $pr->{node}->port);
	$agg->safe_psql('postgres',
		    "CREATE SUBSCRIPTION sub_$o CONNECTION '$connstr' "
		  . "PUBLICATION pub_$o WITH (binary = $binary{$o})");
}
foreach my $pr (@producers)
{
	$agg->wait_for_subscription_sync($pr->{node}, "sub_$pr->{origin}");
}
is( $agg->safe_psql(
		'postgres',
		q{SELECT string_agg(subname || '=' || subbinary, ' ' ORDER BY subname)
		  FROM pg_subscription}),
	'sub_p1=true sub_p2=false sub_p3=true',
	'aggregator: two binary subscriptions and one text subscription');
is( $agg->safe_psql(
		'postgres', q{SELECT string_agg(origin || '=' || c, ' ' ORDER BY origin)
		  FROM (SELECT origin, count(*) AS c FROM events GROUP BY origin) s}),
	"p1=$preload_rows p2=$preload_rows p3=$preload_rows",
	'aggregator: the initial synchronisation copied the existing rows');

#
# The concurrent load: the three pgbench runs are started together, and
# each runs $clients sessions of $txns transactions.
#
my $tmp = PostgreSQL::Test::Utils::tempdir;
my @runs;
foreach my $pr (@producers)
{
	my $p      = $pr->{node};
	my $script = "$tmp/insert_$pr->{origin}.sql";
	open my $fh, '>', $script or die "could not write $script: $!";
	print $fh "INSERT INTO events (origin, n, body) "
	  . "SELECT '$pr->{origin}', g, md5(g::text || random()::text) "
	  . "FROM generate_series(1, $batch) g;\n"
	  . "\\sleep $pause_ms ms\n";
	close $fh;
	$pr->{script} = $script;
}
my $load_start = time;
foreach my $pr (@producers)
{
	my $p = $pr->{node};
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			$p->installed_command('pgbench'), '-n',
			'-f', $pr->{script},
			'-c', $clients,
			'-j', $clients,
			'-t', $txns,
			'-h', $p->host,
			'-p', $p->port,
			'postgres'
		],
		'>', \$out, '2>', \$err, run_timeout(600));
	push @runs, [ $pr, $h, \$out, \$err ];
}
foreach my $run (@runs)
{
	my ($pr, $h, $out, $err) = @$run;
	my $ok = $h->finish;
	ok($ok, "$pr->{origin}: pgbench load finished")
	  or diag("pgbench stdout:\n$$out\nstderr:\n$$err");
	my ($failed) = $$out =~ /number of failed transactions: (\d+)/;
	ok(!$failed, "$pr->{origin}: no failed transactions");
}
my $load_secs = time - $load_start;

foreach my $pr (@producers)
{
	is( $pr->{node}->safe_psql(
			'postgres',
			qq{SELECT count(*) || ' ' || count(DISTINCT id) || ' '
			  || count(*) FILTER (WHERE flakeid_node(id) <> $pr->{id})
			  FROM events}),
		"$per_producer $per_producer 0",
		"$pr->{origin}: $per_producer distinct rows, all of node $pr->{id}");
}

#
# Catch up, with a bound.
#
my $catchup_start = time;
{
	local $PostgreSQL::Test::Utils::timeout_default = $catchup_bound;
	ok( $agg->poll_query_until(
			'postgres',
			"SELECT count(*) = 3 * $per_producer FROM events"),
		'aggregator caught up with every row');
	$_->{node}->wait_for_catchup("sub_$_->{origin}") foreach @producers;
}
my $catchup_secs = time - $catchup_start;

#
# What the aggregator holds.
#
is( $agg->safe_psql(
		'postgres', q{SELECT count(*) || ' ' || count(DISTINCT id) FROM events}),
	(3 * $per_producer) . ' ' . (3 * $per_producer),
	'aggregator: exactly the sum of the rows, no duplicate IDs');

is( $agg->safe_psql(
		'postgres', q{
		SELECT count(*) FROM events
		WHERE origin IS DISTINCT FROM 'p' || flakeid_node(id)}),
	'0',
	'aggregator: every row decodes to the node of the producer it came from');

foreach my $pr (@producers)
{
	my $o = $pr->{origin};
	my $on_producer = $pr->{node}->safe_psql('postgres', digest_sql(''));
	my $on_agg =
	  $agg->safe_psql('postgres', digest_sql("WHERE origin = '$o'"));
	is($on_agg, $on_producer,
		"aggregator: the rows of $o are identical to the producer's, "
		  . ($binary{$o} eq 'true' ? 'binary' : 'text') . ' subscription');
}

# ID order against time and origin.  The switches and the overlap are
# counted on the rows of the concurrent load; the timestamps and sequences on
# every row.
my ($switches, $ts_back, $seq_back, $overlap) = split /\|/,
  $agg->safe_psql(
	'postgres', q{
	WITH o AS (
		SELECT origin, flakeid_timestamp(id) AS ts,
			lag(flakeid_timestamp(id)) OVER w AS prev_ts,
			lag(flakeid_node(id)) OVER w AS prev_node,
			lag(flakeid_sequence(id)) OVER w AS prev_seq,
			flakeid_node(id) AS node, flakeid_sequence(id) AS seq
		FROM events WINDOW w AS (ORDER BY id))
	SELECT (SELECT count(*) FROM (
			SELECT origin <> lag(origin) OVER (ORDER BY id) AS switch
			FROM events WHERE n > 0) l WHERE switch),
		count(*) FILTER (WHERE ts < prev_ts),
		count(*) FILTER (WHERE ts = prev_ts AND node = prev_node
			AND seq <= prev_seq),
		(SELECT max(lo) < min(hi) FROM (
			SELECT min(id) AS lo, max(id) AS hi FROM events
			WHERE n > 0 GROUP BY origin) r)
	FROM o});
cmp_ok($switches, '>', 10,
	'aggregator: in ID order the origins switch many times');
is($ts_back, '0',
	'aggregator: flakeid_timestamp(id) never decreases in ID order');
is($seq_back, '0',
	'aggregator: within a millisecond and node, the sequence increases');
is($overlap, 't',
	'aggregator: the ID ranges of the three producers overlap');

#
# No apply error, no conflict.
#
is( $agg->safe_psql(
		'postgres', q{
		SELECT count(*) FROM pg_catalog.pg_views
		WHERE schemaname = 'pg_catalog'
		  AND viewname = 'pg_stat_subscription_stats'}),
	'1',
	'aggregator: pg_stat_subscription_stats exists');
is( $agg->safe_psql(
		'postgres', q{
		SELECT count(DISTINCT subid) || ' ' || sum(n::bigint)
		FROM pg_stat_subscription_stats s, jsonb_each_text(to_jsonb(s)) e(k, n)
		WHERE k LIKE '%error_count'}),
	'3 0',
	'aggregator: no apply or sync error in any subscription');
is( $agg->safe_psql(
		'postgres', q{
		SELECT count(*) FROM pg_stat_subscription
		WHERE relid IS NULL AND pid IS NOT NULL}),
	'3',
	'aggregator: the three apply workers are running');

my $agg_log = slurp_file($agg->logfile);
my @bad_lines = grep { /duplicate key|conflict|ERROR:|FATAL:/i }
  split /\n/, $agg_log;
is(scalar(@bad_lines), 0,
	'aggregator log: no duplicate key, conflict, ERROR or FATAL line')
  or diag(join("\n", @bad_lines[ 0 .. ($#bad_lines < 9 ? $#bad_lines : 9) ]));

foreach my $pr (@producers)
{
	my @lines = grep { /ERROR:|FATAL:|PANIC:/ }
	  split /\n/, slurp_file($pr->{node}->logfile);
	is(scalar(@lines), 0, "$pr->{origin} log: no ERROR or FATAL line")
	  or diag(join("\n", @lines[ 0 .. ($#lines < 9 ? $#lines : 9) ]));
}

# The aggregator does not generate: without preloading, nextflake() refuses
# with a hint instead of making IDs of a default node.  (From PostgreSQL 17
# on, generation works without preloading, through the DSM registry.)
SKIP:
{
	skip 'PostgreSQL 17 and later generate without preloading', 1
	  if $agg->safe_psql('postgres', 'SHOW server_version_num') >= 170000;
	my ($ret, $out, $err) = $agg->psql('postgres',
		"INSERT INTO events (origin, n, body) VALUES ('agg', 0, 'local')");
	ok( $ret != 0
		  && $err =~ /must be loaded via "shared_preload_libraries"/
		  && $err =~ /HINT:/,
		'aggregator: a local insert with DEFAULT nextflake() refuses with a hint');
}

note(sprintf('rows per producer: %d (%d copied by the initial sync, '
	  . '%d streamed in %d transactions)',
	$per_producer, $preload_rows, $load_rows, $clients * $txns));
note(sprintf('load took %.1f s; the aggregator caught up %.1f s after it',
	$load_secs, $catchup_secs));
note("origin switches in ID order: $switches");

$agg->stop;
$_->{node}->stop foreach @producers;

done_testing();
