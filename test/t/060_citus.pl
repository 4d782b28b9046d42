# Citus: flakeid on a real sharded cluster.  A coordinator and two workers
# (flakeid node ids 1, 2 and 3) with their metadata synced, so that every
# node runs distributed statements, on Citus built from a source tarball
# (test/perl/FlakeCitus.pm; test/run passes the tarball on).
#
# What the README's Citus section says, each shown here:
#   - flakeid_cluster_check(), on the coordinator or a worker, lists every
#     node with its node id, layout and state, and flags node ids 1, 2, 2 on
#     both clashing workers, a node without flakeid preloaded (15, 16) or
#     without a node id or with another layout, and flakeid not installed;
#     only superusers and pg_monitor may call it;
#   - a routed INSERT (single-row, multi-row, prepared) and COPY evaluate
#     nextflake() on the node that runs the statement, coordinator or
#     worker, into a table distributed by its flakeid key and into one
#     distributed by a tenant column;
#   - an INSERT ... SELECT with nextflake() is never pushed down: it is
#     repartitioned (or, with repartitioning off, collected on the node that
#     runs it), and the IDs come from the nodes that hold the source shards;
#     from a MATERIALIZED CTE, a subquery with LIMIT or an aggregate without
#     GROUP BY over several shards they come from the node that runs it, and
#     from a source of one shard from that shard's node;
#   - a function or procedure delegated by its distribution argument runs
#     its INSERT on that argument's worker, and the same call where Citus
#     does not delegate it on the node it was sent to; a BEFORE INSERT
#     trigger runs on the node of the row's shard, and on a reference table
#     gives each copy of a row an ID of its own node;
#   - UPDATE ... SET id = nextflake() is refused; ADD COLUMN ... DEFAULT
#     nextflake() fills each shard's rows on the node that holds it;
#   - flakeid created before Citus reaches the workers at the first
#     create_distributed_table(), not at citus_add_node();
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
#     co-locates with bigint tables;
#   - a worker that fails over to its streaming standby (promoted, then
#     citus_update_node()) after a burst ahead of the clock: with a
#     synchronous standby and with an asynchronous one that was behind, no
#     ID is stored twice across the cluster.
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
# flakeid_cluster_check(): every node, each checked on that node, from any
# node; only superusers and pg_monitor may call it.
#

# flakeid_cluster_check() on a node (in database db =>, as role user =>):
# by node port, "node id|node bits|epoch's year|state|problem" of every
# node of the cluster, "-" for no problem.
sub cluster_check
{
	my ($node, %opts) = @_;
	my $connstr = $node->connstr($opts{db} // 'postgres');
	$connstr .= " user=$opts{user}" if defined $opts{user};
	my $rows = $node->safe_psql(
		$opts{db} // 'postgres',
		q{SELECT format('%s %s|%s|%s|%s|%s', nodeport, node_id, node_bits,
			extract(year FROM epoch AT TIME ZONE 'UTC'), state, coalesce(problem, '-'))
		  FROM flakeid_cluster_check()},
		connstr => $connstr);
	return { map { split / /, $_, 2 } split /\n/, $rows };
}

# What flakeid_cluster_check() says of a healthy node with node id $id.
sub healthy { return "$_[0]|10|2020|ready|-" }

my %healthy = map { $_->port => healthy($id_at{ $_->port }) } @nodes;
foreach my $via ($coord, $w2)
{
	is_deeply(cluster_check($via), \%healthy,
		'flakeid_cluster_check() on ' . $via->name
		  . ': every node with its node id and layout, ready, no problem');
}
q_coord('CREATE ROLE flake_watcher LOGIN');
fails_with($coord, 'SELECT * FROM flakeid_cluster_check()',
	'42501', 'flakeid_cluster_check() as a role without pg_monitor',
	user => 'flake_watcher');
q_coord('GRANT pg_monitor TO flake_watcher');
is_deeply(cluster_check($w1, user => 'flake_watcher'),
	\%healthy, 'flakeid_cluster_check() as a member of pg_monitor, on a worker');

# Node ids 1, 2, 2: worker2 restarted with worker1's node id.  Both are
# flagged, each naming the other; fixed and restarted, no problem.
$w2->append_conf('postgresql.conf', 'flakeid.node_id = 2');
$w2->restart;
my ($p1, $p2) = ($w1->port, $w2->port);
my %clash = (
	$coord->port => healthy(1),
	$p1 => "2|10|2020|ready|node id 2 also on 127.0.0.1:$p2",
	$p2 => "2|10|2020|ready|node id 2 also on 127.0.0.1:$p1");
is_deeply(cluster_check($coord), \%clash,
	'node ids 1, 2, 2: flagged on both workers that have node id 2, and only there');
is_deeply(cluster_check($w2), \%clash,
	'node ids 1, 2, 2: the same seen from a worker that has it');
$w2->append_conf('postgresql.conf', 'flakeid.node_id = 3');
$w2->restart;
is_deeply(cluster_check($coord), \%healthy,
	'node ids 1, 2, 3 again, restarted: no problem');

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

# SQL that joins rows t of a distributed table to h.node, the node id of
# the server that holds their shard, by the table's distribution column
# $col.
sub holder_join
{
	my ($table, $col) = @_;
	my $ports = join(', ', map { "($_, $id_at{$_})" } sort keys %id_at);
	return qq{JOIN citus_shards s
		ON s.shardid = get_shard_id_for_distribution_column('$table', t.$col)
	  LEFT JOIN (VALUES $ports) h(port, node) ON h.port = s.nodeport};
}

#
# Sources that Citus plans in steps, INSERT ... SELECT from a MATERIALIZED
# CTE, from a subquery with LIMIT, or of an aggregate without GROUP BY:
# the source's rows are collected first, and the target list, nextflake()
# in it, runs on the node that runs the statement, not on the source's
# shards; only a source of one shard sends the whole SELECT, target list
# and all, to the node of that shard.
#
q_coord(
	q{CREATE TABLE shapes (id flakeid PRIMARY KEY DEFAULT nextflake(), kind text NOT NULL, n bigint);
	  SELECT create_distributed_table('shapes', 'id');});
my %shape_sql = (
	'a MATERIALIZED CTE' =>
	  [ 'WITH s AS MATERIALIZED (SELECT v FROM %2$s) SELECT %1$s, v FROM s', 400 ],
	'a subquery with LIMIT' =>
	  [ 'SELECT %1$s, v FROM (SELECT v FROM %2$s ORDER BY v LIMIT 50) s', 50 ],
	'an aggregate without GROUP BY' => [ 'SELECT %1$s, count(*) FROM %2$s', 1 ]);
my %shape_from;
foreach my $shape (sort keys %shape_sql)
{
	my ($sql, $rows) = @{ $shape_sql{$shape} };
	# the coordinator holds no shard of source2, worker2 some; source1's
	# one shard is on the other worker
	foreach my $run (
		[ $coord, 'source2', $id_of{coordinator} ],
		[ $w2, 'source2', $id_of{worker2} ],
		[ $not_source1, 'source1', shard_holders('source1') ])
	{
		my ($via, $source, $expect) = @$run;
		my $what = "INSERT ... SELECT from $shape over $source, on " . $via->name;
		my ($ret, $out, $err) = psql_as($via,
			"SET client_min_messages = debug1;\n"
			  . 'INSERT INTO shapes (kind, n) '
			  . sprintf($sql, "'$what'", $source));
		is($ret, 0, "$what: runs") or diag($err);
		like($err, $method{collect}, "$what: the source's rows are collected first");
		is( q_coord(
				qq{SELECT count(*) || ' ' || string_agg(DISTINCT flakeid_node(id)::text, ',')
				   FROM shapes WHERE kind = '$what'}),
			"$rows $expect",
			"$what: IDs from "
			  . ($source eq 'source1'
				? "the node of the source's one shard ($expect)"
				: "the node that runs it ($expect), not from all the source's shards ("
				  . shard_holders($source) . ')'));
		$shape_from{$what} = $expect;
	}
}
note('INSERT ... SELECT in steps, node ids of the IDs: '
	  . join('; ', map { "$_: $shape_from{$_}" } sort keys %shape_from));

#
# Functions and procedures delegated to the worker of their distribution
# argument run their INSERT there; a call that Citus does not delegate (in
# a transaction block, or not a plain call) runs it where it was sent.
#
q_coord(
	q{
CREATE FUNCTION add_tenant_event(t int, k text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO tenant_events (tenant, origin, kind) VALUES (t, 0, k);
END $$;
SELECT create_distributed_function('add_tenant_event(int,text)', '$1',
	colocate_with => 'tenant_events');
CREATE PROCEDURE add_tenant_event_proc(t int, k text) LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO tenant_events (tenant, origin, kind) VALUES (t, 0, k);
END $$;
SELECT create_distributed_function('add_tenant_event_proc(int,text)', '$1',
	colocate_with => 'tenant_events');
});
my $tenant = 7;
my $tenant_node = $id_at{
	q_coord(
		"SELECT nodeport FROM citus_shards WHERE shardid = "
		  . "get_shard_id_for_distribution_column('tenant_events', $tenant)") };
my ($tenant_other) = grep { $id_of{ $_->name } != $tenant_node } ($w1, $w2);
my %delegated = (
	function => qr/pushing down the function call/,
	procedure => qr/pushing down the procedure/);
foreach my $call (
	[ $coord, "SELECT add_tenant_event($tenant, '%s')", 'function' ],
	[ $coord, "CALL add_tenant_event_proc($tenant, '%s')", 'procedure' ],
	[ $tenant_other, "SELECT add_tenant_event($tenant, '%s')", 'function' ],
	[ $coord, "BEGIN; SELECT add_tenant_event($tenant, '%s'); COMMIT", undef ],
	[ $coord, "SELECT add_tenant_event(g, '%s') FROM generate_series($tenant, $tenant) g", undef ],
	[ $tenant_other, "BEGIN; SELECT add_tenant_event($tenant, '%s'); COMMIT", undef ])
{
	my ($via, $sql, $delegated) = @$call;
	my $shape = $sql =~ s/'%s'/.../r;
	my $what = "$shape on " . $via->name;
	my ($ret, $out, $err) = psql_as($via,
		"SET client_min_messages = debug1;\n" . sprintf($sql, "call $what"));
	is($ret, 0, "$what: runs") or diag($err);
	my $expect = $delegated ? $tenant_node : $id_of{ $via->name };
	if ($delegated)
	{
		like($err, $delegated{$delegated}, "$what: delegated, as Citus says");
	}
	else
	{
		unlike($err, qr/pushing down/, "$what: not delegated");
	}
	is( q_coord(
			qq{SELECT count(*) || ' ' || string_agg(flakeid_node(id)::text, ',')
			   FROM tenant_events WHERE kind = 'call $what'}),
		"1 $expect",
		"$what: the ID comes from "
		  . ($delegated ? "the worker of tenant ${tenant}'s shard" : 'the node it was sent to'));
}

#
# A BEFORE INSERT trigger that sets NEW.id := nextflake() runs on the node
# of the row's shard.  Citus distributes a table with a trigger only with
# citus.enable_unsafe_triggers on.  On a reference table the trigger runs
# on every copy, so each node's copy of a row gets an ID of its own; only a
# column DEFAULT (the table tags below) gives every copy the same ID.
#
q_coord(
	q{
CREATE FUNCTION set_flakeid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.id := nextflake();
	RETURN NEW;
END $$;
CREATE TABLE trigger_events (tenant int NOT NULL, id flakeid, origin int);
CREATE TRIGGER trigger_events_id BEFORE INSERT ON trigger_events
	FOR EACH ROW EXECUTE FUNCTION set_flakeid();
CREATE TABLE trigger_tags (id flakeid, name text);
CREATE TRIGGER trigger_tags_id BEFORE INSERT ON trigger_tags
	FOR EACH ROW EXECUTE FUNCTION set_flakeid();
});
my $trigger_err = fails_with($coord,
	q{SELECT create_distributed_table('trigger_events', 'tenant')},
	'XX000', 'a table with a trigger, citus.enable_unsafe_triggers off');
like($trigger_err, qr/cannot distribute relation "trigger_events" because it has triggers/,
	'a table with a trigger: Citus refuses to distribute it by default');
q_coord(
	q{SET citus.enable_unsafe_triggers = on;
	  SELECT create_distributed_table('trigger_events', 'tenant');
	  SELECT create_reference_table('trigger_tags');});
$coord->safe_psql('postgres',
	q{INSERT INTO trigger_events (tenant, origin) SELECT g, 1 FROM generate_series(1, 40) g});
is( q_coord(
		qq{SELECT count(*) || ' ' || count(DISTINCT t.id) || ' '
			|| count(*) FILTER (WHERE flakeid_node(t.id) <> h.node) || ' '
			|| string_agg(DISTINCT flakeid_node(t.id)::text, ',' ORDER BY flakeid_node(t.id)::text)
		   FROM trigger_events t } . holder_join('trigger_events', 'tenant')),
	'40 40 0 ' . shard_holders('trigger_events'),
	'a BEFORE INSERT trigger on a distributed table: each ID from the node of its row\'s shard, '
	  . 'not from the coordinator that ran the INSERT');
$w1->safe_psql('postgres', q{INSERT INTO trigger_tags (name) VALUES ('one')});
my $trigger_shard = q_coord(
	q{SELECT shard_name FROM citus_shards WHERE table_name = 'trigger_tags'::regclass LIMIT 1});
my @trigger_copies = map {
	$_->safe_psql('postgres',
		"SELECT count(*) || ' ' || min(flakeid_node(id)) || ' ' || min(id) FROM $trigger_shard")
} @nodes;
is( join(',', map { (split / /)[0] . ' ' . (split / /)[1] } @trigger_copies),
	join(',', map { "1 $id_of{$_->name}" } @nodes),
	'a reference table with that trigger: each node\'s copy of the row has an ID of that node');
is( scalar(keys %{ { map { (split / /)[2] => 1 } @trigger_copies } }),
	scalar(@nodes),
	'a reference table with that trigger: the copies of one row have different IDs');

#
# UPDATE ... SET c = nextflake() is refused; ADD COLUMN ... DEFAULT
# nextflake() fills the rows of each shard on the node that holds it.
#
foreach my $where ('', " WHERE tenant = $tenant")
{
	my $err = fails_with($coord, "UPDATE tenant_events SET id = nextflake()$where",
		'0A000', "UPDATE ... SET id = nextflake()$where");
	like($err, qr/functions used in UPDATE queries on distributed tables must not be VOLATILE/,
		"UPDATE ... SET id = nextflake()$where: Citus refuses a volatile function");
}
q_coord('ALTER TABLE source3 ADD COLUMN c flakeid DEFAULT nextflake()');
is( q_coord(
		qq{SELECT count(*) || ' ' || count(DISTINCT t.c) || ' '
			|| count(*) FILTER (WHERE flakeid_node(t.c) <> h.node) || ' '
			|| string_agg(DISTINCT flakeid_node(t.c)::text, ',' ORDER BY flakeid_node(t.c)::text)
		   FROM source3 t } . holder_join('source3', 'k')),
	'400 400 0 ' . shard_holders('source3'),
	'ADD COLUMN ... DEFAULT nextflake(): each shard\'s rows get IDs of the node that holds it');
$w2->safe_psql('postgres', 'INSERT INTO source3 (k, v) VALUES (1001, 1001)');
is(q_coord('SELECT flakeid_node(c) FROM source3 WHERE k = 1001'),
	$id_of{worker2},
	'ADD COLUMN ... DEFAULT nextflake(): later rows get IDs of the node that ran the INSERT');

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
# flakeid created before Citus, in a database of its own: Citus does not
# take it for one of its objects, so citus_add_node() leaves it off the
# workers; the first create_distributed_table() of a table that uses it
# creates it there.  flakeid_cluster_check() says so meanwhile.
#
foreach my $node (@nodes)
{
	$node->safe_psql('postgres', 'CREATE DATABASE early')
	  if $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_database WHERE datname = 'early'}) eq '0';
}
$_->safe_psql('early', 'CREATE EXTENSION citus') foreach ($w1, $w2);
$coord->safe_psql('early',
	q{CREATE EXTENSION flakeid;
	  CREATE EXTENSION citus;
	  SELECT citus_set_coordinator_host('127.0.0.1', } . $coord->port . q{);}
	  . join('', map { "SELECT citus_add_node('127.0.0.1', " . $_->port . ');' } ($w1, $w2)));
my $early_ext = q{SELECT count(*) FROM pg_extension WHERE extname = 'flakeid'};
is( join(' ', map { $_->safe_psql('early', $early_ext) } @nodes),
	'1 0 0',
	'flakeid created before Citus: not on the workers after citus_add_node()');
is_deeply(
	cluster_check($coord, db => 'early'),
	{
		$coord->port => healthy(1),
		map { $_->port => '|||not installed|flakeid not installed' } ($w1, $w2)
	},
	'flakeid_cluster_check(): flakeid not installed on the workers');
$coord->safe_psql('early',
	q{CREATE TABLE early_events (id flakeid PRIMARY KEY DEFAULT nextflake(), origin int);
	  SELECT create_distributed_table('early_events', 'id');});
is( join(' ', map { $_->safe_psql('early', $early_ext) } @nodes),
	'1 1 1',
	'flakeid created before Citus: on every worker after the first create_distributed_table()');
is_deeply(cluster_check($coord, db => 'early'),
	\%healthy, 'flakeid_cluster_check(): then no problem');
$w1->safe_psql('early',
	q{INSERT INTO early_events (origin) SELECT 2 FROM generate_series(1, 10)});
is( $coord->safe_psql('early',
		q{SELECT count(*) || ' ' || string_agg(DISTINCT flakeid_node(id)::text, ',') FROM early_events}),
	'10 2', 'and the workers generate');

#
# A node added without flakeid preloaded (Citus alone), without a node id
# and with another epoch: every statement that would evaluate nextflake()
# there fails with flakeid's error, and no row is made with another node's
# ID.
#
my $bare = citus_node('worker3', preload => 0,
	conf => "flakeid.epoch = '2024-01-01 00:00:00+00'");
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

# flakeid_cluster_check() flags worker3 alone: on 15 and 16 flakeid has no
# generator there without preloading; on every version worker3 has no node
# id and its layout differs from the others'.
my $bare_check = cluster_check($coord);
my $bare_state = $bare->pg_version >= 17 ? 'node id not set' : 'not preloaded';
is_deeply(
	$bare_check,
	{
		%healthy,
		$bare->port => "|10|2024|$bare_state|"
		  . ($bare->pg_version >= 17 ? '' : 'flakeid not preloaded; ')
		  . 'no node id; layout node_bits 10, epoch 2024-01-01 00:00:00.000+00 '
		  . "unlike most nodes' node_bits 10, epoch 2020-01-01 00:00:00.000+00"
	},
	'flakeid_cluster_check(): worker3 flagged ('
	  . ($bare->pg_version >= 17 ? '' : 'not preloaded, ')
	  . 'no node id, another layout), the other nodes not');
is_deeply(cluster_check($bare), $bare_check,
	'flakeid_cluster_check() on worker3 itself: the same');

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
		'the same without repartitioning' ],
	[ $bare, q{INSERT INTO events (origin, kind)
		WITH s AS MATERIALIZED (SELECT v FROM source2) SELECT 4, 'bare' FROM s},
		'INSERT ... SELECT from a MATERIALIZED CTE over a source on the other workers' ],
	[ $coord, q{INSERT INTO trigger_tags (name) VALUES ('bare')},
		'an INSERT into a reference table whose trigger calls nextflake(), run on the coordinator' ])
{
	my ($via, $sql, $what) = @$try;
	my $err = fails_with($via, $sql, '55000', "worker3: $what");
	like($err, $no_gen, "worker3: $what: flakeid's error");
}
is( q_coord(
		q{SELECT (SELECT count(*) FROM events) || ' ' || (SELECT count(*) FROM tags)
		  || ' ' || (SELECT count(*) FROM events WHERE kind = 'bare')
		  || ' ' || (SELECT count(*) FROM trigger_tags WHERE name = 'bare')}),
	"$events_before $tags_before 0 0",
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

#
# Worker failover: worker2 gets a streaming standby, makes IDs for rows
# that land on the other workers' shards too, and fails: it is stopped
# (the fencing that failover tools do), the standby is promoted and
# citus_update_node() points the cluster to it.  The rows on the other
# workers outlive the failover, so an ID that the promoted worker issues
# again is stored twice.  The burst first takes the IDs 10 s past the
# clock or past where they were, whichever is later (flakeid.max_lead
# allows 30 s here), so that they lie beyond what the standby may have
# received and the promoted worker's clock is still behind them; after the
# promotion a client consumes IDs (as nextflakes() lets any client) until
# the next one would be the burst's first, if that lies ahead, and inserts
# as many rows as the burst.
#
# With a synchronous standby the lease under the burst's IDs reached the
# standby before they were returned.  With an asynchronous one that was
# behind (stopped during the burst), the promoted server continues above
# its clock plus the old one's maximum lead and lease plus
# flakeid.max_clock_skew, the old worker being stopped first and the
# clocks one.
#
q_coord(
	q{CREATE TABLE failover_events (
		tenant int NOT NULL,
		id flakeid NOT NULL DEFAULT nextflake(),
		round text NOT NULL,
		PRIMARY KEY (tenant, id));
	  SELECT create_distributed_table('failover_events', 'tenant',
		shard_count => 8, colocate_with => 'none');});
$w2->safe_psql('postgres',
	"ALTER SYSTEM SET flakeid.max_lead = '30s';\n"
	  . "ALTER SYSTEM SET flakeid.max_clock_wait = '60s';\n"
	  . 'SELECT pg_reload_conf();');
my $burst_rows = 10_000;

# SQL that consumes this server's IDs until its next ID is the one that
# $target (an SQL expression of a flakeid) names, where that lies ahead.
sub walk_to_sql
{
	my ($target) = @_;
	my $tick_of = sub { tick_sql($_[0], 10) };
	return qq{DO \$\$
DECLARE
	target bigint := } . $tick_of->("($target)") . q{;
	id flakeid;
	gap bigint;
BEGIN
	LOOP
		id := nextflake();
		gap := target - } . $tick_of->('id') . q{ - 1;
		EXIT WHEN gap <= 0;
		-- large steps first, the last one from a counter ahead of the clock,
		-- whose ticks follow each other
		IF gap <= 100000 THEN
			PERFORM nextflakes(gap::int) LIMIT 1;
			EXIT;
		END IF;
		PERFORM nextflakes((gap - 50000)::int) LIMIT 1;
	END LOOP;
END $$};
}

# One failover round of worker2; returns the number of IDs stored twice.
sub failover_round
{
	my ($round, $sync) = @_;
	my $old = $w2;
	my $standby = PostgreSQL::Test::Cluster->new("worker2_$round");
	$old->backup($round);
	$standby->init_from_backup($old, $round, has_streaming => 1);
	$standby->start;
	if ($sync)
	{
		$old->safe_psql('postgres',
			"ALTER SYSTEM SET synchronous_standby_names = 'worker2_$round';\n"
			  . 'SELECT pg_reload_conf();');
		$old->poll_query_until('postgres',
			qq{SELECT count(*) = 1 FROM pg_stat_replication
			   WHERE application_name = 'worker2_$round' AND sync_state = 'sync'})
		  or die 'the standby did not become synchronous';
	}
	else
	{
		$old->wait_for_catchup($standby, 'replay', $old->lsn('flush'));
		$standby->stop;
	}

	my $first_tenant = $round eq 'sync' ? 0 : 100_000;
	my $tenants = sub {
		my ($from, $n) = @_;
		return 'generate_series(' . ($first_tenant + $from) . ', '
		  . ($first_tenant + $from + $n - 1) . ')';
	};
	$old->safe_psql('postgres',
		"INSERT INTO failover_events (tenant, round) SELECT g, '$round before' FROM "
		  . $tenants->(1, 100) . " g;\n"
		  . walk_to_sql(q{flakeid_from_timestamp(greatest(clock_timestamp(),
				flakeid_timestamp(nextflake())) + interval '10 s')})
		  . ";\nINSERT INTO failover_events (tenant, round) SELECT g, '$round burst' FROM "
		  . $tenants->(1000, $burst_rows) . ' g');
	my ($first, $last, $ahead, $elsewhere) = split /\|/,
	  $old->safe_psql('postgres',
		qq{SELECT min(t.id), max(t.id),
			round(extract(epoch FROM flakeid_timestamp(max(t.id)) - clock_timestamp())),
			count(*) FILTER (WHERE s.nodeport <> } . $old->port . q{)
		   FROM failover_events t
		   JOIN citus_shards s ON s.shardid = get_shard_id_for_distribution_column('failover_events', t.tenant)
		   WHERE round = '} . $round . q{ burst'});
	cmp_ok($ahead, '>=', 5, "$round failover: the burst's IDs run ahead of the clock ($ahead s)");
	cmp_ok($elsewhere, '>', 0,
		"$round failover: worker2 stored rows with its IDs on the other workers ($elsewhere)");

	# the failover
	my $start = time;
	$old->stop('immediate');
	$standby->start unless $sync;
	$standby->promote;
	q_coord("SELECT citus_update_node(nodeid, '127.0.0.1', " . $standby->port
		  . ') FROM pg_dist_node WHERE nodeport = ' . $old->port);
	delete $id_at{ $old->port };
	$id_at{ $standby->port } = $id_of{worker2};
	$w2 = $standby;
	my $failover_secs = time - $start;
	is( q_coord(
			q{SELECT count(*) FILTER (WHERE nodeport = } . $old->port . q{) || ' '
				|| (count(*) FILTER (WHERE nodeport = } . $standby->port . q{) > 0)
			  FROM citus_shards WHERE table_name = 'failover_events'::regclass}),
		'0 true',
		"$round failover: the cluster uses the promoted standby for worker2's shards");

	# after it: rows, then the client that walks to the burst's first ID
	$standby->safe_psql('postgres',
		"INSERT INTO failover_events (tenant, round) SELECT g, '$round after' FROM "
		  . $tenants->(20_000, 100) . ' g');
	my $after = $standby->safe_psql('postgres',
		"SELECT min(id) FROM failover_events WHERE round = '$round after'");
	$standby->safe_psql('postgres',
		walk_to_sql("$first") . ";\n"
		  . "INSERT INTO failover_events (tenant, round) SELECT g, '$round walk' FROM "
		  . $tenants->(30_000, $burst_rows) . ' g');
	my $walked = $standby->safe_psql('postgres',
		"SELECT min(id) FROM failover_events WHERE round = '$round walk'");
	ok($walked == $first || $walked > $last,
		"$round failover: the client's rows start at the burst's first ID, or above the burst");
	my ($kept, $twice) = split /\|/, q_coord(
		qq{SELECT (SELECT count(*) FROM failover_events WHERE round = '$round burst'),
			(SELECT count(*) FROM (SELECT id FROM failover_events GROUP BY id
			 HAVING count(*) > 1) d)});
	# the figures of the round, shown with the test's results
	diag(sprintf(
			'%s failover in %.1f s: the burst stored %d rows, %d on other workers, %d kept; '
			  . 'the promoted worker\'s first ID is %s the burst\'s last; IDs stored twice: %d',
			$round, $failover_secs, $burst_rows, $elsewhere, $kept,
			($after > $last ? 'above' : 'not above'), $twice));
	cmp_ok($after, '>', $last,
		"$round failover: the promoted worker's IDs are above every ID the old one returned");
	is($twice, 0, "$round failover: no ID stored twice across the cluster");
	return $old;
}

my @retired;
push @retired, failover_round('sync', 1);
push @retired, failover_round('async', 0);
$nodes[2] = $w2;
is( cluster_check($coord)->{ $w2->port },
	healthy($id_of{worker2}),
	'flakeid_cluster_check() after the failovers: the promoted worker2, node id 3, no problem');

foreach my $node (@nodes, $bare, @retired)
{
	my @crashes = grep { /terminated by signal|PANIC/ }
	  split /\n/, slurp_file($node->logfile);
	is(scalar(@crashes), 0, $node->name . ': no crash in the log');
}

$_->stop foreach ($bare, reverse @nodes);
done_testing();
