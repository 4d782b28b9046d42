# Dumps and copies: databases with flakeid columns, btree, hash and BRIN
# indexes, DEFAULT nextflake() in flakeid and bigint columns, and flakeid in
# a schema of its own come back identical from pg_dump -Fc + pg_restore and
# from a plain pg_dump | psql; new rows still get IDs from nextflake(); and
# binary, text and CSV COPY round trips through files are exact.

use strict;
use warnings;

use IPC::Run;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'flakeid'\nflakeid.node_id = 7");
$node->start;

my $tmp = PostgreSQL::Test::Utils::tempdir;

# The extension in public: every kind of index, defaults in flakeid and
# bigint columns, a generated column and an expression index that decode,
# a foreign key, arrays, and hash and range partitions on flakeid.
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql(
	'src', q{
	CREATE EXTENSION flakeid;
	CREATE TABLE events (
		id flakeid PRIMARY KEY DEFAULT nextflake(),
		body text NOT NULL,
		made timestamptz GENERATED ALWAYS AS (flakeid_timestamp(id)) STORED);
	CREATE INDEX events_hash ON events USING hash (id);
	CREATE INDEX events_brin ON events USING brin (id);
	CREATE INDEX events_node ON events (flakeid_node(id));
	CREATE TABLE legacy (
		id bigint PRIMARY KEY DEFAULT nextflake(),
		event flakeid REFERENCES events (id),
		note text);
	CREATE TABLE batches (n int PRIMARY KEY, ids flakeid[] NOT NULL);
	CREATE TABLE parted (id flakeid NOT NULL DEFAULT nextflake(), v int)
		PARTITION BY HASH (id);
	CREATE TABLE parted_0 PARTITION OF parted FOR VALUES WITH (MODULUS 2, REMAINDER 0);
	CREATE TABLE parted_1 PARTITION OF parted FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	CREATE TABLE ranged (id flakeid PRIMARY KEY) PARTITION BY RANGE (id);
	CREATE TABLE ranged_old PARTITION OF ranged
		FOR VALUES FROM (MINVALUE) TO (flakeid_from_timestamp('2024-01-01 00:00:00+00'));
	CREATE TABLE ranged_new PARTITION OF ranged
		FOR VALUES FROM (flakeid_from_timestamp('2024-01-01 00:00:00+00')) TO (MAXVALUE);
	CREATE VIEW event_keys AS
		SELECT flakeid_format(id, 'base32') AS key, body FROM events;

	INSERT INTO events (body) SELECT 'e' || g FROM generate_series(1, 5000) g;
	INSERT INTO events (id, body) VALUES
		(0, 'zero'), (9223372036854775807, 'max'),
		(flakeid_from_timestamp('2021-06-01 12:00:00+00'), 'old');
	INSERT INTO legacy (event, note) SELECT id, body FROM events WHERE body LIKE '%7';
	INSERT INTO legacy (id, note) VALUES (9223372036854775806, 'explicit');
	INSERT INTO batches SELECT g, ARRAY(SELECT nextflakes(3)) FROM generate_series(1, 100) g;
	INSERT INTO parted (v) SELECT g FROM generate_series(1, 2000) g;
	INSERT INTO ranged SELECT id FROM events;
});

# The extension in schema ids, which is not on the search_path, and the
# tables in another schema.
$node->safe_psql('postgres', 'CREATE DATABASE src_ids');
$node->safe_psql(
	'src_ids', q{
	CREATE SCHEMA ids;
	CREATE EXTENSION flakeid SCHEMA ids;
	CREATE SCHEMA app;
	CREATE TABLE app.orders (
		id ids.flakeid PRIMARY KEY DEFAULT ids.nextflake(),
		legacy_id bigint UNIQUE DEFAULT ids.nextflake(),
		item text);
	CREATE INDEX orders_hash ON app.orders USING hash (id);
	CREATE INDEX orders_brin ON app.orders USING brin (id);
	CREATE VIEW app.order_keys AS
		SELECT ids.flakeid_format(id, 'base62') AS key, item FROM app.orders;
	INSERT INTO app.orders (item) SELECT 'i' || g FROM generate_series(1, 2000) g;
});

# The tables of each source database, with their column definitions for
# dblink, and what must hold for a row inserted after a restore.
my %tables = (
	src => [
		[ 'public.events', 'id flakeid, body text, made timestamptz' ],
		[ 'public.legacy', 'id bigint, event flakeid, note text' ],
		[ 'public.batches', 'n int, ids flakeid[]' ],
		[ 'public.parted', 'part text, id flakeid, v int' ],
		[ 'public.ranged', 'part text, id flakeid' ],
		[ 'public.event_keys', 'key text, body text' ],
	],
	src_ids => [
		[ 'app.orders', 'id ids.flakeid, legacy_id bigint, item text' ],
		[ 'app.order_keys', 'key text, item text' ],
	]);
my %after_restore = (
	src => q{
		INSERT INTO events (body) VALUES ('after restore');
		INSERT INTO legacy (note) VALUES ('after restore');
		INSERT INTO parted (v) VALUES (-1);
		SELECT flakeid_node(e.id) = 7 AND flakeid_node(l.id) = 7 AND flakeid_node(p.id) = 7
			AND e.id > (SELECT max(id) FROM events WHERE body LIKE 'e%')
			AND e.made = flakeid_timestamp(e.id)
		FROM events e, legacy l, parted p
		WHERE e.body = 'after restore' AND l.note = 'after restore' AND p.v = -1},
	src_ids => q{
		INSERT INTO app.orders (item) VALUES ('after restore');
		SELECT ids.flakeid_node(id) = 7 AND ids.flakeid_node(legacy_id) = 7
			AND id OPERATOR(ids.>) (SELECT id FROM app.orders WHERE item LIKE 'i%'
				ORDER BY id DESC LIMIT 1)
		FROM app.orders WHERE item = 'after restore'});

# The rows of a table; partitioned tables name the partition of each row.
sub rows_query
{
	my ($table) = @_;
	return $table =~ /parted|ranged/
	  ? "SELECT tableoid::regclass::text, * FROM $table"
	  : "SELECT * FROM $table";
}

# What a restore must reproduce, with every name schema-qualified: the
# extension, columns with their types and defaults, constraints, indexes,
# partition bounds and views.
sub schema_of
{
	my ($db) = @_;
	return $node->safe_psql(
		$db, q{
	SET search_path = '';
	SELECT extname, extversion, extnamespace::regnamespace
	FROM pg_catalog.pg_extension ORDER BY 1;
	SELECT c.oid::regclass, a.attnum, a.attname,
		pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
		a.attgenerated, pg_catalog.pg_get_expr(d.adbin, d.adrelid)
	FROM pg_catalog.pg_attribute a
	JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
	LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE c.relnamespace::regnamespace::text IN ('public', 'app')
		AND c.relkind IN ('r', 'p', 'v') AND a.attnum > 0 AND NOT a.attisdropped
	ORDER BY c.oid::regclass::text, a.attnum;
	SELECT conrelid::regclass, conname, pg_catalog.pg_get_constraintdef(oid)
	FROM pg_catalog.pg_constraint
	WHERE connamespace::regnamespace::text IN ('public', 'app')
	ORDER BY conrelid::regclass::text, conname;
	SELECT schemaname, tablename, indexname, indexdef FROM pg_catalog.pg_indexes
	WHERE schemaname IN ('public', 'app') ORDER BY 1, 2, 3;
	SELECT oid::regclass, pg_catalog.pg_get_expr(relpartbound, oid)
	FROM pg_catalog.pg_class WHERE relispartition ORDER BY oid::regclass::text;
	SELECT oid::regclass, pg_catalog.pg_get_viewdef(oid)
	FROM pg_catalog.pg_class WHERE relkind = 'v'
		AND relnamespace::regnamespace::text IN ('public', 'app')
	ORDER BY oid::regclass::text});
}

# Compare the rows of every table of $src with $dst, EXCEPT both ways,
# from $dst through dblink.
sub rows_match
{
	my ($src, $dst, $how) = @_;
	my $connstr = $node->connstr($src);
	$connstr =~ s/'/''/g;
	$node->safe_psql($dst,
		'CREATE SCHEMA cmp; CREATE EXTENSION dblink SCHEMA cmp');
	foreach my $t (@{ $tables{$src} })
	{
		my ($table, $columns) = @$t;
		my $query = rows_query($table);
		my $remote = "SELECT * FROM cmp.dblink('$connstr', \$q\$$query\$q\$) AS r($columns)";
		my $result = $node->safe_psql(
			$dst, qq{
			SELECT (SELECT count(*) FROM ($query EXCEPT ALL $remote) a),
				(SELECT count(*) FROM ($remote EXCEPT ALL $query) b),
				(SELECT count(*) FROM ($query) c),
				(SELECT count(*) FROM ($remote) d)});
		my ($only_dst, $only_src, $n_dst, $n_src) = split /\|/, $result;
		ok($n_src > 0 && $n_dst == $n_src && $only_dst == 0 && $only_src == 0,
			"$how: $table has the same rows ($result)");
	}
	$node->safe_psql($dst, 'DROP EXTENSION dblink; DROP SCHEMA cmp');
}

# Check a restored database against its source, then write to it.
sub check_restore
{
	my ($src, $dst, $how) = @_;
	my $schema = schema_of($src);
	like($schema, qr/USING hash/, "$src has a hash index");
	like($schema, qr/USING brin/, "$src has a BRIN index");
	like($schema, qr/nextflake\(\)/, "$src has DEFAULT nextflake()");
	is(schema_of($dst), $schema,
		"$how: columns, defaults, constraints, indexes, partitions and views are the same");
	rows_match($src, $dst, $how);
	is($node->safe_psql($dst, $after_restore{$src}),
		't', "$how: inserting after the restore uses nextflake()");
	is( $node->safe_psql(
			$dst, q{SELECT count(*) FROM pg_catalog.pg_index i
			WHERE NOT i.indisvalid OR NOT i.indisready}),
		'0',
		"$how: every index is valid");
}

foreach my $src ('src', 'src_ids')
{
	# custom format, restored in parallel
	my $dump = "$tmp/$src.dump";
	$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr($src) ],
		"pg_dump -Fc $src");
	$node->safe_psql('postgres', "CREATE DATABASE ${src}_restored");
	$node->command_ok(
		[
			'pg_restore', '--exit-on-error', '-j', '2',
			'-d', $node->connstr("${src}_restored"), $dump
		],
		"pg_restore $src");
	check_restore($src, "${src}_restored", "pg_dump -Fc | pg_restore of $src");

	# plain text through a pipe
	$node->safe_psql('postgres', "CREATE DATABASE ${src}_plain");
	my ($out, $err) = ('', '');
	my $piped = IPC::Run::run(
		[ 'pg_dump', '-d', $node->connstr($src) ],
		'|',
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr("${src}_plain") ],
		'>', \$out, '2>', \$err, run_timeout());
	ok($piped, "pg_dump $src | psql");
	is($err, '', "pg_dump $src | psql: no errors or warnings");
	check_restore($src, "${src}_plain", "pg_dump | psql of $src");
}

# COPY round trips through files, in every format, into tables LIKE the
# originals; the binary format is int8's, so bigint columns read it too.
foreach my $format ('binary', 'text', 'csv')
{
	foreach my $table ('events', 'legacy', 'batches')
	{
		my $file = "$tmp/$table.$format";
		my $result = $node->safe_psql(
			'src', qq{
			COPY $table TO '$file' WITH (FORMAT $format);
			CREATE TABLE copy_$table (LIKE $table INCLUDING ALL);
			COPY copy_$table FROM '$file' WITH (FORMAT $format);
			SELECT (SELECT count(*) FROM (TABLE $table EXCEPT ALL TABLE copy_$table) a),
				(SELECT count(*) FROM (TABLE copy_$table EXCEPT ALL TABLE $table) b),
				(SELECT count(*) FROM copy_$table) > 0;
			DROP TABLE copy_$table});
		is($result, '0|0|t', "COPY $table (FORMAT $format) round trip");
	}
}

# Client-side \copy (COPY TO STDOUT and FROM STDIN, as drivers use it).
foreach my $format ('binary', 'text')
{
	my $file = "$tmp/client.$format";
	my $result = $node->safe_psql(
		'src', qq{
		\\copy events TO '$file' WITH (FORMAT $format)
		CREATE TABLE client_copy (LIKE events INCLUDING ALL);
		\\copy client_copy FROM '$file' WITH (FORMAT $format)
		SELECT (SELECT count(*) FROM (TABLE events EXCEPT ALL TABLE client_copy) a),
			(SELECT count(*) FROM (TABLE client_copy EXCEPT ALL TABLE events) b);
		DROP TABLE client_copy});
	is($result, '0|0', "\\copy events (FORMAT $format) round trip");
}

# flakeid and bigint share the binary format both ways; negative bigints are
# refused on the way in.
is( $node->safe_psql(
		'src', qq{
		COPY (SELECT id FROM events) TO '$tmp/ids.bin' WITH (FORMAT binary);
		CREATE TABLE as_bigint (id bigint);
		COPY as_bigint FROM '$tmp/ids.bin' WITH (FORMAT binary);
		COPY as_bigint TO '$tmp/bigints.bin' WITH (FORMAT binary);
		CREATE TABLE as_flakeid (id flakeid);
		COPY as_flakeid FROM '$tmp/bigints.bin' WITH (FORMAT binary);
		SELECT (SELECT count(*) FROM (SELECT id::bigint FROM events
				EXCEPT ALL TABLE as_bigint) a),
			(SELECT count(*) FROM (TABLE as_flakeid EXCEPT ALL SELECT id FROM events) b),
			(SELECT count(*) FROM as_flakeid) = (SELECT count(*) FROM events);
		DROP TABLE as_bigint, as_flakeid}),
	'0|0|t',
	'binary COPY: flakeid to bigint and back');
my ($ret, $out, $err) = $node->psql(
	'src', qq{
	CREATE TABLE neg (id bigint);
	INSERT INTO neg VALUES (-1);
	COPY neg TO '$tmp/neg.bin' WITH (FORMAT binary);
	CREATE TABLE neg_flakeid (id flakeid);
	COPY neg_flakeid FROM '$tmp/neg.bin' WITH (FORMAT binary)});
isnt($ret, 0, 'binary COPY of a negative bigint into flakeid fails');
like($err, qr/out of range for type flakeid/, '... as out of range');

$node->stop;
done_testing();
