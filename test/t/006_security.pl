# Security: no non-superuser session changes the node id, the layout or
# flakeid.cache (which relaxes the order of IDs across backends), by any
# means; and the extension installs and compares correctly under a
# hostile search_path.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('security', node_id => 11);
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE ROLE alice LOGIN;
	CREATE ROLE dave LOGIN;
	CREATE DATABASE daves OWNER dave});
$node->safe_psql('daves', 'CREATE EXTENSION flakeid');

my %settings = (
	'flakeid.node_id'   => '3',
	'flakeid.node_bits' => '16',
	'flakeid.epoch'     => '2030-01-01');

# alice, a plain login role, and dave, who owns the database he is in
foreach my $who ([ 'alice', 'postgres' ], [ 'dave', 'daves' ])
{
	my ($user, $db) = @$who;
	foreach my $guc (sort keys %settings)
	{
		settings_locked($node, $user, $db, $guc, $settings{$guc});
	}
	settings_locked($node, $user, $db, 'flakeid.cache', '64');
	my ($ret, $out, $err) = psql_as(
		$node, q{
		SELECT count(*) FILTER (WHERE flakeid_node(id) = 11
			AND (id::bigint >> 12) & 1023 = 11
			AND flakeid_timestamp(id) > timestamptz '2024-01-01 00:00:00+00')
		FROM nextflakes(100) id},
		user => $user,
		db   => $db);
	is($out, '100', "$user still makes IDs of node 11 in the default layout");
}

is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM pg_db_role_setting, unnest(setconfig) c
	WHERE c LIKE 'flakeid.%'}),
	'0',
	'no role or database setting for flakeid was stored');
unlike(slurp_file($node->data_dir . '/postgresql.auto.conf'),
	qr/flakeid/, 'postgresql.auto.conf is untouched');

# the superuser cannot SET them for a session either
foreach my $guc (sort keys %settings)
{
	fails_with($node, "SET $guc = '$settings{$guc}'", '55P02',
		"superuser SET $guc");
}
# flakeid.cache is a superuser's to set
is($node->safe_psql('postgres', 'SET flakeid.cache = 64; SHOW flakeid.cache'),
	'64', 'a superuser sets flakeid.cache for a session');

# A hostile search_path at install time: mallory's schema comes first, even
# before pg_catalog, and holds look-alikes of the int8 functions and
# operators the extension binds to.  Each records its calls and gives the
# wrong answer.
$node->safe_psql('postgres', 'CREATE ROLE mallory LOGIN');
my $traps = q{
	CREATE SEQUENCE evil.calls;
	GRANT ALL ON SEQUENCE evil.calls TO PUBLIC;
};
foreach my $op ([ 'int8eq', '=', '<>' ], [ 'int8ne', '<>', '=' ],
	[ 'int8lt', '<', '>=' ], [ 'int8le', '<=', '>' ],
	[ 'int8gt', '>', '<=' ], [ 'int8ge', '>=', '<' ])
{
	my ($func, $name, $negation) = @$op;
	$traps .= qq{
	CREATE FUNCTION evil.$func(bigint, bigint) RETURNS boolean
		LANGUAGE plpgsql AS \$\$
		BEGIN
			PERFORM nextval('evil.calls');
			RETURN \$1 OPERATOR(pg_catalog.$negation) \$2;
		END \$\$;
	CREATE OPERATOR evil.$name (LEFTARG = bigint, RIGHTARG = bigint,
		FUNCTION = evil.$func);
	};
}
$traps .= q{
	CREATE FUNCTION evil.btint8cmp(bigint, bigint) RETURNS integer
		LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM nextval('evil.calls');
			RETURN 0;
		END $$;
	CREATE FUNCTION evil.hashint8(bigint) RETURNS integer
		LANGUAGE plpgsql AS $$
		BEGIN
			PERFORM nextval('evil.calls');
			RETURN 0;
		END $$;
};

# A superuser installs plainly (into the first schema of the path, evil)
# and into public; and, as the extension is trusted, mallory installs it
# herself into her own database, where the script runs as a superuser.
my @variants = ([ 'hostile_plain', '', undef ],
	[ 'hostile_public', ' SCHEMA public', undef ]);
if ($node->safe_psql('postgres',
		q{SELECT trusted FROM pg_available_extension_versions v
		  JOIN pg_available_extensions a USING (name)
		  WHERE name = 'flakeid' AND version = default_version}) eq 't')
{
	push @variants, [ 'hostile_trusted', '', 'mallory' ];
}
else
{
	note('flakeid is not trusted: mallory cannot install it herself');
}

foreach my $variant (@variants)
{
	my ($db, $schema_clause, $installer) = @$variant;
	$node->safe_psql('postgres',
		"CREATE DATABASE $db" . (defined $installer ? " OWNER $installer" : ''));
	$node->safe_psql($db, 'CREATE SCHEMA evil AUTHORIZATION mallory');
	my ($ret, $out, $err) = psql_as($node, $traps, user => 'mallory', db => $db);
	is($ret, 0, "$db: mallory sets her traps") or diag($err);
	is( $node->safe_psql(
			$db, q{
		SET search_path = evil, pg_catalog, public;
		SELECT 1::bigint = 1::bigint, 1::bigint < 2::bigint;
		SELECT last_value FROM evil.calls;
		ALTER SEQUENCE evil.calls RESTART}),
		"f|f\n2",
		"$db: the traps catch plain bigint comparisons");

	($ret, $out, $err) = psql_as(
		$node, qq{
		SET search_path = evil, pg_catalog, public;
		CREATE EXTENSION flakeid$schema_clause;
		SELECT extnamespace::regnamespace FROM pg_extension WHERE extname = 'flakeid'},
		db   => $db,
		user => $installer);
	is($ret, 0, "$db: CREATE EXTENSION$schema_clause under a hostile search_path")
	  or diag($err);
	note("$db: flakeid installed into schema $out");

	# nothing the extension binds to belongs to mallory
	is( $node->safe_psql(
			$db, q{
		WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'flakeid'),
		members AS (
			SELECT classid, objid FROM pg_depend, ext
			WHERE refclassid = 'pg_extension'::regclass AND refobjid = ext.oid
				AND deptype = 'e'),
		ops AS (
			SELECT o.* FROM pg_operator o JOIN members m
				ON m.classid = 'pg_operator'::regclass AND m.objid = o.oid),
		families AS (
			SELECT f.oid FROM pg_opfamily f JOIN pg_opclass c ON c.opcfamily = f.oid
				JOIN members m ON m.classid = 'pg_opclass'::regclass AND m.objid = c.oid),
		procs AS (
			SELECT oprcode AS p FROM ops
			UNION ALL SELECT amproc FROM pg_amproc WHERE amprocfamily IN (SELECT oid FROM families)
			UNION ALL SELECT castfunc FROM pg_cast JOIN members m
				ON m.classid = 'pg_cast'::regclass AND m.objid = pg_cast.oid
			UNION ALL SELECT aggtransfn FROM pg_aggregate JOIN members m
				ON m.classid = 'pg_proc'::regclass AND m.objid = aggfnoid),
		operators AS (
			SELECT amopopr AS o FROM pg_amop WHERE amopfamily IN (SELECT oid FROM families)
			UNION ALL SELECT oprcom FROM ops UNION ALL SELECT oprnegate FROM ops)
		SELECT (SELECT count(*) FROM procs JOIN pg_proc ON pg_proc.oid = p
				WHERE proowner = 'mallory'::regrole)
			+ (SELECT count(*) FROM operators JOIN pg_operator ON pg_operator.oid = o
				WHERE oprowner = 'mallory'::regrole)
			|| ' ' || ((SELECT count(*) FROM ops) >= 6)}),
		'0 true',
		"$db: the extension's operators, opclasses and casts use none of mallory's objects");

	# comparisons under the same hostile search_path
	is( $node->safe_psql(
			$db, q{
		SET search_path = evil, pg_catalog, public;
		CREATE TABLE t (id flakeid PRIMARY KEY, g int);
		INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g;
		INSERT INTO t SELECT x, 0 FROM nextflakes(100) x;
		ANALYZE t;
		SELECT (SELECT count(*) FROM t WHERE id = 500)
			|| ' ' || (SELECT count(*) FROM t WHERE id = '500')
			|| ' ' || (SELECT count(*) FROM t WHERE id = 500::bigint)
			|| ' ' || (SELECT count(*) FROM t WHERE id <> 500 AND g > 0)
			|| ' ' || (SELECT count(*) FROM t WHERE id < 100)
			|| ' ' || (SELECT count(*) FROM t WHERE id >= 990 AND id <= 1000)
			|| ' ' || (SELECT string_agg(g::text, ',' ORDER BY id DESC)
					   FROM (SELECT * FROM t WHERE g > 0 ORDER BY id DESC LIMIT 3) s)
			|| ' ' || (SELECT min(id) || '-' || max(id) FROM t WHERE g > 0)
			|| ' ' || (SELECT count(*) FROM t a JOIN t b USING (id))
			|| ' ' || (SELECT count(*) FROM t WHERE g = 0
					   AND id > flakeid_from_timestamp(now() - interval '1 hour'))}),
		'1 1 1 999 99 11 1000,999,998 1-1000 1100 100',
		"$db: comparisons, ordering and joins give correct results");
	is( $node->safe_psql(
			$db, q{
		SET search_path = evil, pg_catalog, public;
		SET enable_seqscan = off;
		SET enable_bitmapscan = off;
		SELECT (SELECT count(*) FROM t WHERE id BETWEEN 10 AND 19)
			|| ' ' || (SELECT count(*) FROM t WHERE id = 42)
			|| ' ' || (SELECT g FROM t WHERE id > 0 ORDER BY id LIMIT 1);
		SET enable_mergejoin = off;
		SET enable_nestloop = off;
		SELECT count(*) FROM t a JOIN t b USING (id)}),
		"10 1 1\n1100",
		"$db: index scans and hash joins give correct results");
	is($node->safe_psql($db, 'SELECT is_called FROM evil.calls'),
		'f', "$db: none of mallory's functions was ever called");
}

$node->stop;
done_testing();
