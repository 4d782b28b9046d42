# Citus: flakeid on a real sharded cluster.  A coordinator and two workers
# (flakeid node ids 1, 2 and 3) with their metadata synced, so that every
# node runs distributed statements, on Citus built from a source tarball
# (test/perl/FlakeCitus.pm; test/run passes the tarball on).
#
# What the README's Citus section says, each shown here:
#   - a routed INSERT (single-row, multi-row, prepared) and COPY evaluate
#     nextflake() on the node that runs the statement, coordinator or
#     worker, into a table distributed by its flakeid key and into one
#     distributed by a tenant column;
#   - an INSERT ... SELECT with nextflake() is never pushed down: it is
#     repartitioned (or, with repartitioning off, collected on the node that
#     runs it), and the IDs come from the nodes that hold the source shards;
#   - a reference table holds the same IDs on every node;
#   - a shard moved by logical replication while the three nodes insert
#     keeps every row and ID;
#   - a range of IDs goes to every shard, and ORDER BY id LIMIT n merges
#     the shards into the global order;
#   - a node that does not preload flakeid refuses every statement that
#     would evaluate nextflake() there, with flakeid's error;
#   - what Citus refuses: distributing by an expression or a generated
#     column, a new default on the distribution column once distributed, a
#     flakeid key co-located with a bigint key, a primary key without the
#     distribution column; and that a bigint key with DEFAULT nextflake()
#     co-locates with bigint tables.
#
# Generated IDs are checked by their properties and never printed.

use strict;
use warnings;

use FlakeCitus;
use FlakeTest;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my ($tarball, $missing) = citus_tarball();
plan skip_all => $missing unless defined $tarball;

my $install_start = time;
citus_install();
note(sprintf('Citus installed in %.0f s from %s', time - $install_start,
	$tarball));

my @names = qw(coordinator worker1 worker2);
my $cluster_start = time;
my @nodes = citus_cluster(\@names);
my ($coord, $w1, $w2) = @nodes;

# The flakeid node id of each server, by its name and by its port.
my %id_of = map { $names[$_] => $_ + 1 } 0 .. $#names;
my %id_at = map { $nodes[$_]->port => $_ + 1 } 0 .. $#nodes;

sub q_coord { return $coord->safe_psql('postgres', $_[0]) }

my $version = q_coord(
	q{SELECT extversion FROM pg_extension WHERE extname = 'citus'});
note(sprintf('Citus %s on PostgreSQL %s: cluster up in %.1f s',
	$version, $coord->pg_version, time - $cluster_start));

is( q_coord(
		q{SELECT string_agg(nodeport || ':' || (hasmetadata AND metadatasynced),
			' ' ORDER BY nodeport) FROM pg_dist_node WHERE isactive}),
	join(' ', map { $_->port . ':true' } sort { $a->port <=> $b->port } @nodes),
	'three nodes, metadata synced to each');
foreach my $node (@nodes)
{
	is( $node->safe_psql(
			'postgres',
			q{SELECT current_setting('flakeid.node_id') || ' '
			  || (SELECT state FROM flakeid_status())
			  || (SELECT count(*) FROM pg_extension WHERE extname = 'flakeid')}),
		"$id_of{$node->name} ready1",
		$node->name . ": flakeid created by Citus, node id $id_of{$node->name}");
}

#
# The tables: one distributed by its flakeid key, one by a tenant column
# with a flakeid in its key.  origin is the node id of the server that the
# client sent the statement to; kind says what statement it was.  The
# extension and the defaults come before create_distributed_table().
#
q_coord(
	q{
CREATE TABLE events (
	id flakeid PRIMARY KEY DEFAULT nextflake(),
	origin int NOT NULL,
	kind text NOT NULL,
	at timestamptz NOT NULL DEFAULT clock_timestamp());
SELECT create_distributed_table('events', 'id');
CREATE TABLE tenant_events (
	tenant int NOT NULL,
	id flakeid NOT NULL DEFAULT nextflake(),
	origin int NOT NULL,
	kind text NOT NULL,
	PRIMARY KEY (tenant, id));
SELECT create_distributed_table('tenant_events', 'tenant');
});

#
# Inserts from the three servers at once: on each, pgbench runs single-row
# and multi-row INSERTs into both tables, once as simple queries and once
# as prepared statements, while psql COPYs rows into both.
#
my $clients = 2;
my $txns    = 40;
my $multi   = 4;     # rows of a multi-row INSERT
my $copies  = 4;     # COPY statements per table and server
my $copy_rows = 250;

sub insert_script
{
	my ($kind) = @_;
	my $rows = sub {
		my ($tenant) = @_;
		return join(', ',
			map { '(' . ($tenant ? ":tenant + $_, " : '') . ":origin, '$kind-multi')" }
			  0 .. $multi - 1);
	};
	return join("\n",
		'\set tenant random(1, 1000)',
		"INSERT INTO events (origin, kind) VALUES (:origin, '$kind');",
		'INSERT INTO events (origin, kind) VALUES ' . $rows->(0) . ';',
		"INSERT INTO tenant_events (tenant, origin, kind) VALUES (:tenant, :origin, '$kind');",
		'INSERT INTO tenant_events (tenant, origin, kind) VALUES ' . $rows->(1) . ';');
}

# psql in the background on a script, which it reads from a file (COPY's
# data included), so that it runs at once.
sub start_psql
{
	my ($node, $name, $script) = @_;
	my $file = $node->basedir . "/$name.sql";
	my ($out, $err) = ('', '');
	append_to_file($file, $script);
	my $h = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-h', $node->host,
			'-p', $node->port, '-f', $file, 'postgres'
		],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout(300));
	return ($h, \$out, \$err);
}

sub copy_script
{
	my ($origin) = @_;
	my $script = '';
	foreach my $i (1 .. $copies)
	{
		$script .= "COPY events (origin, kind) FROM STDIN;\n"
		  . ("$origin\tcopy\n" x $copy_rows) . "\\.\n";
		$script .= "COPY tenant_events (tenant, origin, kind) FROM STDIN;\n"
		  . join('', map { "$_\t$origin\tcopy\n" } 1 .. $copy_rows) . "\\.\n";
	}
	return $script;
}

my @loads;
my $load_start = time;
foreach my $node (@nodes)
{
	my $origin = $id_of{$node->name};
	foreach my $mode (qw(simple prepared))
	{
		my ($h, $out, $err) = start_pgbench($node, "insert_$mode",
			insert_script($mode), 300, '-M', $mode, '-c', $clients,
			'-j', $clients, '-t', $txns, '-D', "origin=$origin");
		push @loads, [ $node->name . " pgbench $mode", $h, $out, $err, 1 ];
	}
	my ($h, $out, $err) = start_psql($node, 'copy', copy_script($origin));
	push @loads, [ $node->name . ' COPY', $h, $out, $err, 0 ];
}
foreach my $load (@loads)
{
	my ($what, $h, $out, $err, $is_pgbench) = @$load;
	ok($h->finish, "$what: finished") or diag("stdout:\n$$out\nstderr:\n$$err");
	next unless $is_pgbench;
	like($$out,
		qr/number of transactions actually processed: (\d+)\/\1\b/,
		"$what: every transaction ran");
}
my $load_secs = time - $load_start;

# The rows each server should hold, by kind, in both tables.
my $per_kind = $clients * $txns;
my %expected = (
	simple           => $per_kind,
	'simple-multi'   => $per_kind * $multi,
	prepared         => $per_kind,
	'prepared-multi' => $per_kind * $multi,
	copy             => $copies * $copy_rows);
my $per_server = 0;
$per_server += $_ foreach values %expected;
my $expected_kinds = join(' ',
	map { my $o = $_; map { "$o:$_=$expected{$_}" } sort keys %expected }
	  1 .. 3);

foreach my $table (qw(events tenant_events))
{
	is( q_coord(
			qq{SELECT string_agg(origin || ':' || kind || '=' || n, ' '
				ORDER BY origin, kind)
			   FROM (SELECT origin, kind, count(*) AS n FROM $table
					 GROUP BY origin, kind) s}),
		$expected_kinds,
		"$table: every row of every statement, from each server");
	ids_unique($coord, "SELECT id FROM $table", $table);
	is( q_coord(
			"SELECT count(*) FROM $table WHERE flakeid_node(id) <> origin"),
		'0',
		"$table: every ID decodes to the server that ran its statement");
	is( q_coord(
			"SELECT max(lo) < min(hi) FROM (SELECT min(id) AS lo, max(id) AS hi "
			  . "FROM $table GROUP BY origin) r"),
		't',
		"$table: the servers' ID ranges overlap, as they inserted at once");
}
ids_unique($coord,
	'SELECT id FROM events UNION ALL SELECT id FROM tenant_events',
	'both tables together');
note(sprintf(
		'concurrent inserts: %d rows per table in %.1f s, %d from each server '
		  . '(per kind: %s)',
		3 * $per_server, $load_secs, $per_server,
		join(', ', map { "$_ $expected{$_}" } sort keys %expected)));

#
# INSERT ... SELECT: never pushed down with nextflake() in it.  The IDs come
# from the nodes that hold the source's shards, whichever node runs the
# statement, with repartitioning on or off.
#
q_coord(
	q{
CREATE TABLE source2 (k int, v int);
SELECT create_distributed_table('source2', 'k', colocate_with => 'tenant_events');
INSERT INTO source2 SELECT g, g FROM generate_series(1, 400) g;
CREATE TABLE source1 (k int, v int);
SELECT create_distributed_table('source1', 'k', shard_count => 1, colocate_with => 'none');
INSERT INTO source1 SELECT g, g FROM generate_series(1, 400) g;
SELECT citus_set_node_property('127.0.0.1', } . $coord->port . q{, 'shouldhaveshards', true);
CREATE TABLE source3 (k int, v int);
SELECT create_distributed_table('source3', 'k', shard_count => 6, colocate_with => 'none');
SELECT citus_set_node_property('127.0.0.1', } . $coord->port . q{, 'shouldhaveshards', false);
INSERT INTO source3 SELECT g, g FROM generate_series(1, 400) g;
});

# The node ids of the servers that hold a table's shards, as a sorted list.
sub shard_holders
{
	my ($table) = @_;
	my @ports = split /\n/,
	  q_coord(
		"SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = '$table'::regclass");
	return join(',', sort map { $id_at{$_} } @ports);
}

like(
	q_coord(
		'EXPLAIN (COSTS OFF) INSERT INTO events (origin, kind) '
		  . 'SELECT 0, v::text FROM source2'),
	qr/INSERT\/SELECT method: repartition/,
	'INSERT ... SELECT with nextflake() is repartitioned');

# Each case: the target, the source, the node that runs it, repartitioning
# on or off, and how Citus says it runs it: repartitioned, or the SELECT's
# rows collected on the node that runs it (a source of one shard, or
# repartitioning off).
my %method = (
	repartition => qr/performing repartitioned INSERT \.\.\. SELECT/,
	collect     => qr/Collecting INSERT \.\.\. SELECT results on coordinator/);
# source1's one shard lies on one worker; the other runs its case.
my $not_source1 = shard_holders('source1') eq $id_of{worker1} ? $w2 : $w1;
my @cases = (
	[ 'events',        'source2', $coord,        'on',  'repartition' ],
	[ 'tenant_events', 'source2', $w1,           'on',  'repartition' ],
	[ 'events',        'source1', $not_source1,  'on',  'collect' ],
	[ 'events',        'source3', $w1,           'on',  'repartition' ],
	[ 'events',        'source2', $w2,           'off', 'collect' ],
	[ 'events',        'source3', $coord,        'off', 'collect' ]);
my $case = 0;
my %insert_select;
foreach my $c (@cases)
{
	my ($target, $source, $via, $repartition, $how) = @$c;
	$case++;
	my $kind   = "insert-select-$case";
	my $cols   = $target eq 'events' ? 'origin, kind' : 'tenant, origin, kind';
	my $values = $target eq 'events' ? "0, '$kind'" : "k, 0, '$kind'";
	my ($ret, $out, $err) = psql_as($via,
		"SET citus.enable_repartitioned_insert_select = $repartition;\n"
		  . "SET client_min_messages = debug1;\n"
		  . "INSERT INTO $target ($cols) SELECT $values FROM $source");
	my $what = sprintf('INSERT ... SELECT from %s into %s on %s, repartitioning %s',
		$source, $target, $via->name, $repartition);
	is($ret, 0, "$what: runs") or diag($err);
	like($err,
		qr/volatile functions are not allowed in distributed INSERT \.\.\. SELECT queries/,
		"$what: not pushed down, as Citus says");
	like($err, $method{$how}, "$what: $how");
	my $holders = shard_holders($source);
	my ($n, $distinct, $from) = split /\|/,
	  q_coord(
		qq{SELECT count(*), count(DISTINCT id),
			string_agg(DISTINCT flakeid_node(id)::text, ',' ORDER BY flakeid_node(id)::text)
		   FROM $target WHERE kind = '$kind'});
	is("$n $distinct", '400 400', "$what: every row, no duplicate ID");
	is($from, $holders,
		"$what: IDs from exactly the source's shard holders ($holders)");
	$insert_select{"$source via " . $via->name . " ($repartition)"} = $from;
}
ids_unique($coord, 'SELECT id FROM events', 'events after INSERT ... SELECT');
note('INSERT ... SELECT, node ids of the IDs: '
	  . join('; ', map { "$_: $insert_select{$_}" } sort keys %insert_select));

#
# A reference table: each node's copy holds the same IDs, made by the node
# that ran the INSERT.
#
q_coord(
	q{
CREATE TABLE tags (
	id flakeid PRIMARY KEY DEFAULT nextflake(),
	origin int NOT NULL,
	name text);
SELECT create_reference_table('tags');
});
foreach my $node (@nodes)
{
	my $origin = $id_of{ $node->name };
	$node->safe_psql('postgres',
		"INSERT INTO tags (origin, name) SELECT $origin, 'tag' || g FROM generate_series(1, 20) g;"
		  . "INSERT INTO tags (origin, name) VALUES ($origin, 'one')");
}
my $tags_shard = q_coord(
	q{SELECT shard_name FROM citus_shards WHERE table_name = 'tags'::regclass LIMIT 1});
my @copies = map {
	$_->safe_psql('postgres',
		qq{SELECT count(*) || ' ' || count(DISTINCT id) || ' '
			|| count(*) FILTER (WHERE flakeid_node(id) <> origin) || ' '
			|| md5(string_agg(id || '|' || origin || '|' || name, ',' ORDER BY id))
		   FROM $tags_shard})
} @nodes;
like($copies[0], qr/^63 63 0 /,
	'reference table: 63 rows, no duplicate, each decoding to its server');
is_deeply(\@copies, [ ($copies[0]) x 3 ],
	'reference table: the same rows and IDs on every node');

#
# A shard moved between the workers by logical replication while the three
# servers insert: every row and ID kept.
#
my $moved = q_coord(
	q{SELECT shardid FROM citus_shards
	  WHERE table_name = 'events'::regclass AND nodeport = } . $w1->port . q{
	  ORDER BY shardid LIMIT 1});
q_coord(q{ALTER TABLE events ADD COLUMN n int, ADD COLUMN body text,
	ALTER COLUMN kind SET DEFAULT 'move'});
my $move_sql =
    "SELECT pg_sleep(0.5);\n"
  . "SELECT 'start ' || clock_timestamp();\n"
  . "SELECT citus_move_shard_placement($moved, '127.0.0.1', "
  . $w1->port
  . ", '127.0.0.1', "
  . $w2->port
  . ", shard_transfer_mode => 'force_logical');\n"
  . "SELECT 'end ' || clock_timestamp();\n";
# The load lasts at least 25 pauses of 100 ms, so that the move, which
# starts half a second in, runs while the three servers insert.
my ($move, $move_out, $move_err) = start_psql($coord, 'move', $move_sql);
my $before = q_coord('SELECT count(*) FROM events');
my $move_clients = 2;
my $move_txns    = 25;
my $move_batch   = 40;
insert_together(
	nodes    => [ map { [ $_, $id_of{ $_->name } ] } @nodes ],
	clients  => $move_clients,
	txns     => $move_txns,
	batch    => $move_batch,
	pause_ms => 100);
ok($move->finish, 'the shard move finished') or diag($$move_err);
my ($move_from) = $$move_out =~ /^start (.+)$/m;
my ($move_to)   = $$move_out =~ /^end (.+)$/m;
is( q_coord(
		"SELECT nodeport FROM citus_shards WHERE shardid = $moved"),
	$w2->port,
	"shard $moved is now on worker2");
my $load_rows = 3 * $move_clients * $move_txns * $move_batch;
is(q_coord('SELECT count(*) FROM events') - $before,
	$load_rows, "every row inserted during the move is there ($load_rows)");
ids_unique($coord, 'SELECT id FROM events', 'events after the move');
is(q_coord('SELECT count(*) FROM events WHERE origin > 0 AND flakeid_node(id) <> origin'),
	'0', 'after the move every ID still decodes to the server that made it');
my $during = q_coord(
	qq{SELECT count(DISTINCT origin) || ' ' || count(*) FROM events
	   WHERE kind = 'move' AND at BETWEEN '$move_from' AND '$move_to'});
like($during, qr/^3 /, 'all three servers inserted while the shard moved');
my ($moved_rows) = q_coord(
	"SELECT count(*) FROM events WHERE get_shard_id_for_distribution_column('events', id) = $moved");
note("shard move: $load_rows rows inserted around it, "
	  . (split / /, $during)[1]
	  . " while it ran; shard $moved holds $moved_rows rows");

#
# Time ranges and order across shards.
#
usleep(20_000);
my $bound = q_coord('SELECT clock_timestamp()');
usleep(20_000);
foreach my $node (@nodes)
{
	$node->safe_psql('postgres',
		'INSERT INTO events (origin, kind) SELECT '
		  . $id_of{ $node->name }
		  . ", 'late' FROM generate_series(1, 30)");
}
is( q_coord(
		qq{SELECT count(*) || ' ' || count(*) FILTER (WHERE kind = 'late')
		   FROM events WHERE id >= flakeid_from_timestamp('$bound')}),
	'90 90',
	'id >= flakeid_from_timestamp(t) finds exactly the rows made after t');
my $shards = q_coord(
	q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass});
like(
	q_coord(
		qq{EXPLAIN (COSTS OFF) SELECT id FROM events
		   WHERE id >= flakeid_from_timestamp('$bound') ORDER BY id LIMIT 10}),
	qr/Task Count: $shards\b/,
	"a range of IDs goes to every shard ($shards)");
like(
	q_coord(
		q{EXPLAIN (COSTS OFF) SELECT * FROM events WHERE id = 1234567890123456789}),
	qr/Task Count: 1\b/,
	'one ID goes to one shard');

# The global order, from each shard's own rows, against what the
# coordinator merges.
my @all;
foreach my $row (split /\n/,
	q_coord(
		q{SELECT shard_name || ' ' || nodeport FROM citus_shards
		  WHERE table_name = 'events'::regclass}))
{
	my ($shard, $port) = split / /, $row;
	my ($holder) = grep { $_->port == $port } @nodes;
	push @all, split /\n/, $holder->safe_psql('postgres', "SELECT id FROM $shard");
}
my @sorted = sort { $a <=> $b } @all;
is(scalar(@all), q_coord('SELECT count(*) FROM events'),
	'the shards hold every row once');
foreach my $limit (10, 500)
{
	my $merged = q_coord("SELECT string_agg(id::text, ',') FROM "
		  . "(SELECT id FROM events ORDER BY id LIMIT $limit) s");
	ok($merged eq join(',', @sorted[ 0 .. $limit - 1 ]),
		"ORDER BY id LIMIT $limit is the first $limit IDs of all shards in order");
}
my $from_bound = q_coord(
	qq{SELECT string_agg(id::text, ',') FROM
	   (SELECT id FROM events WHERE id >= flakeid_from_timestamp('$bound')
		ORDER BY id LIMIT 50) s});
my $bound_id = q_coord("SELECT flakeid_from_timestamp('$bound')::bigint");
my @after = grep { $_ >= $bound_id } @sorted;
ok($from_bound eq join(',', @after[ 0 .. 49 ]),
	'a range with ORDER BY id LIMIT 50: the first 50 IDs after the bound');

#
# What Citus refuses, and what works instead.
#
my $err = fails_with($coord,
	q{CREATE TABLE by_node (id flakeid DEFAULT nextflake(), body text);
	  SELECT create_distributed_table('by_node', 'flakeid_node(id)')},
	'42703', 'distributing by an expression');
$err = fails_with($coord,
	q{ALTER TABLE by_node ADD COLUMN node int
		GENERATED ALWAYS AS (flakeid_node(id)) STORED;
	  SELECT create_distributed_table('by_node', 'node')},
	'0A000', 'distributing by a generated column');
like($err, qr/Distribution column must not use GENERATED ALWAYS AS/,
	'distributing by a generated column: Citus says why');

q_coord(
	q{CREATE TABLE late_default (id flakeid PRIMARY KEY, body text);
	  SELECT create_distributed_table('late_default', 'id')});
$err = fails_with($coord,
	'ALTER TABLE late_default ALTER COLUMN id SET DEFAULT nextflake()',
	'XX000', 'a default on the distribution column after distributing');
like($err, qr/cannot execute ALTER TABLE command involving partition column/,
	'a default on the distribution column after distributing: refused');
q_coord(
	q{CREATE TABLE tenant_late (tenant int, id flakeid, PRIMARY KEY (tenant, id));
	  SELECT create_distributed_table('tenant_late', 'tenant');
	  ALTER TABLE tenant_late ALTER COLUMN id SET DEFAULT nextflake();});
$w1->safe_psql('postgres', 'INSERT INTO tenant_late (tenant) VALUES (1), (2)');
is(q_coord('SELECT count(*) FROM tenant_late WHERE flakeid_node(id) = 2'),
	'2', 'a default on another column may come after distributing');

q_coord(
	q{CREATE TABLE accounts (id bigint PRIMARY KEY, name text);
	  SELECT create_distributed_table('accounts', 'id');});
$err = fails_with($coord,
	q{CREATE TABLE orders_flake (id flakeid PRIMARY KEY DEFAULT nextflake());
	  SELECT create_distributed_table('orders_flake', 'id', colocate_with => 'accounts')},
	'XX000', 'a flakeid key co-located with a bigint key');
like($err, qr/Distribution column types don't match/,
	'a flakeid key co-located with a bigint key: the types do not match');
q_coord(
	q{CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT nextflake(), total int);
	  SELECT create_distributed_table('orders', 'id', colocate_with => 'accounts');});
is( q_coord(
		q{SELECT count(DISTINCT colocationid) FROM pg_dist_partition
		  WHERE logicalrelid IN ('accounts'::regclass, 'orders'::regclass)}),
	'1',
	'a bigint key with DEFAULT nextflake() co-locates with a bigint key');
$w2->safe_psql('postgres',
	'INSERT INTO orders (total) SELECT g FROM generate_series(1, 10) g');
is( q_coord(
		q{SELECT format('%s %s %s %s', count(*), count(DISTINCT id),
			min(flakeid_node(id)), max(flakeid_node(id))) FROM orders}),
	'10 10 3 3', 'its IDs are flakeids of the server that made them');

$err = fails_with($coord,
	q{CREATE TABLE by_tenant_pk (tenant int, id flakeid PRIMARY KEY DEFAULT nextflake());
	  SELECT create_distributed_table('by_tenant_pk', 'tenant')},
	'0A000', 'a primary key on id alone, distributed by another column');
like($err, qr/PRIMARY KEY constraints that do not include the partition column/,
	'a primary key must include the distribution column');

#
# A node added without flakeid preloaded (Citus alone): every statement
# that would evaluate nextflake() there fails with flakeid's error, and no
# row is made with another node's ID.
#
my $bare = citus_node('worker3', preload => 0);
$bare->start;
citus_add_worker($coord, $bare);
is( $bare->safe_psql(
		'postgres',
		q{SELECT current_setting('shared_preload_libraries') || ' '
		  || (SELECT count(*) FROM pg_extension WHERE extname = 'flakeid')}),
	'citus 1',
	'worker3: Citus alone preloaded; Citus created flakeid there');
q_coord(
	q{CREATE TABLE source4 (k int, v int);
	  SELECT create_distributed_table('source4', 'k', shard_count => 3, colocate_with => 'none');
	  INSERT INTO source4 SELECT g, g FROM generate_series(1, 300) g;});
is( q_coord(
		q{SELECT count(*) FROM citus_shards
		  WHERE table_name = 'source4'::regclass AND nodeport = } . $bare->port),
	'1', 'worker3 holds a shard of source4');

# 15 and 16 generate only when preloaded; 17 and later also without, with a
# node id, which worker3 lacks.
my $no_gen =
  $bare->pg_version >= 17
  ? qr/flakeid\.node_id is not set/
  : qr/flakeid must be loaded via "shared_preload_libraries" to generate IDs/;
my $events_before = q_coord('SELECT count(*) FROM events');
my $tags_before   = q_coord('SELECT count(*) FROM tags');
foreach my $try (
	[ $bare, q{INSERT INTO events (origin, kind) VALUES (4, 'bare')}, 'a single-row INSERT' ],
	[ $bare, q{INSERT INTO events (origin, kind) VALUES (4, 'bare'), (4, 'bare')}, 'a multi-row INSERT' ],
	[ $bare, q{PREPARE p AS INSERT INTO events (origin, kind) VALUES (4, 'bare'); EXECUTE p}, 'a prepared INSERT' ],
	[ $bare, q{COPY events (origin, kind) FROM PROGRAM 'printf "4\tbare\n"'}, 'COPY' ],
	[ $bare, q{INSERT INTO tenant_events (tenant, origin, kind) VALUES (1, 4, 'bare')}, 'an INSERT by tenant' ],
	[ $bare, q{INSERT INTO tags (origin, name) VALUES (4, 'bare')}, 'an INSERT into the reference table' ],
	[ $coord, q{INSERT INTO events (origin, kind) SELECT 4, 'bare' FROM source4}, 'INSERT ... SELECT from its shard, run on the coordinator' ],
	[ $coord, q{SET citus.enable_repartitioned_insert_select = off;
		INSERT INTO events (origin, kind) SELECT 4, 'bare' FROM source4},
		'the same without repartitioning' ])
{
	my ($via, $sql, $what) = @$try;
	my $err = fails_with($via, $sql, '55000', "worker3: $what");
	like($err, $no_gen, "worker3: $what: flakeid's error");
}
is( q_coord(
		q{SELECT (SELECT count(*) FROM events) || ' ' || (SELECT count(*) FROM tags)
		  || ' ' || (SELECT count(*) FROM events WHERE kind = 'bare')}),
	"$events_before $tags_before 0",
	'worker3: nothing was inserted');

# An INSERT ... SELECT that worker3 runs evaluates nextflake() where the
# source's shards are: from a source on the other workers it works.
$bare->safe_psql('postgres',
	q{INSERT INTO events (origin, kind) SELECT 0, 'via-worker3' FROM source1});
is( q_coord(
		q{SELECT count(*) || ' ' || string_agg(DISTINCT flakeid_node(id)::text, ',')
		  FROM events WHERE kind = 'via-worker3'}),
	'400 ' . shard_holders('source1'),
	'worker3: INSERT ... SELECT from a source on a preloaded worker takes its IDs there');

# What does not evaluate nextflake() there works: decoding, and rows whose
# IDs another node made, stored in worker3's shards.
q_coord(
	q{CREATE TABLE spread (id flakeid PRIMARY KEY DEFAULT nextflake(), origin int);
	  SELECT create_distributed_table('spread', 'id', shard_count => 6, colocate_with => 'none');
	  INSERT INTO spread (origin) SELECT 1 FROM generate_series(1, 300);});
is( $bare->safe_psql(
		'postgres',
		q{SELECT format('%s %s %s %s', count(*), count(DISTINCT id),
			min(flakeid_node(id)), max(flakeid_node(id))) FROM spread}),
	'300 300 1 1',
	'worker3 reads and decodes the IDs that the coordinator made');
my @bare_shards = split /\n/,
  q_coord(
	q{SELECT shard_name FROM citus_shards
	  WHERE table_name = 'spread'::regclass AND nodeport = } . $bare->port);
my $bare_rows = 0;
$bare_rows += $bare->safe_psql('postgres', "SELECT count(*) FROM $_")
  foreach @bare_shards;
cmp_ok($bare_rows, '>', 0,
	'some of them are stored in worker3\'s shards (' . scalar(@bare_shards) . ')');

foreach my $node (@nodes, $bare)
{
	my @crashes = grep { /terminated by signal|PANIC/ }
	  split /\n/, slurp_file($node->logfile);
	is(scalar(@crashes), 0, $node->name . ': no crash in the log');
}

$_->stop foreach ($bare, reverse @nodes);
done_testing();
