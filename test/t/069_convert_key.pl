# flakeid_convert_key() where the regression tests cannot go: a server that
# cannot generate (no node id, a standby) refuses and changes nothing; an
# insert that arrives during a conversion waits for it and then gets a
# flakeid, never a value of the old sequence after the check; and a
# login role that owns its tables, no superuser, converts them.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $setup = q{
	CREATE EXTENSION IF NOT EXISTS flakeid;
	CREATE TABLE accounts (id bigserial PRIMARY KEY, name text);
	INSERT INTO accounts (name) SELECT 'old ' || g FROM generate_series(1, 100) g};
my $how = q{
	SELECT format_type(a.atttypid, a.atttypmod) || ' ' || pg_get_expr(d.adbin, d.adrelid)
	FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE a.attrelid = 'accounts'::regclass AND a.attname = 'id'};
my $before = q{bigint nextval('accounts_id_seq'::regclass)};

# no node id: the generator's own error, and nothing changed
my $primary = flake_node('primary', streaming => 1);
$primary->start;
$primary->safe_psql('postgres', $setup);
my $err = fails_with($primary, q{SELECT flakeid_convert_key('accounts')},
	'55000', 'a server without a node id refuses');
like($err, qr/flakeid\.node_id is not set/, 'the error says the node id is missing');
is($primary->safe_psql('postgres', $how), $before, 'the key is unchanged');

# a standby: the generator refuses in recovery
$primary->append_conf('postgresql.conf', 'flakeid.node_id = 9');
$primary->reload;
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$err = fails_with($standby, q{SELECT flakeid_convert_key('accounts', dry_run => true)},
	'25006', 'a standby refuses, also a dry run');
like($err, qr/cannot generate flakeid values during recovery/,
	'the error says the standby cannot generate');
$standby->stop;

# An insert that arrives while a conversion holds the table waits for it,
# and takes the new default once it commits.
my $converting = $primary->background_psql('postgres');
$converting->query_safe(q{BEGIN; SELECT count(*) FROM flakeid_convert_key('accounts')});
my $insert = $primary->background_psql('postgres');
$insert->query_until(qr/sent/, q{
	\echo sent
	INSERT INTO accounts (name) VALUES ('during') RETURNING flakeid_node(id) AS node \gset
	\echo node :node
});
ok( $primary->poll_query_until(
		'postgres', q{
	SELECT count(*) > 0 FROM pg_stat_activity
	WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO accounts%'}),
	'the insert waits for the conversion');
$converting->query_safe('COMMIT');
$converting->quit;
$insert->quit;
is( $primary->safe_psql(
		'postgres', q{
	SELECT flakeid_node(id) || ' ' || (id > (SELECT max(id) FROM accounts WHERE name LIKE 'old%'))
	FROM accounts WHERE name = 'during'}),
	'9 true',
	'it got a flakeid of this server, above every old key');
is($primary->safe_psql('postgres', $how), 'bigint nextflake()', 'the key is converted');

# a login role that owns its tables converts them
$primary->safe_psql(
	'postgres', q{
	CREATE ROLE app LOGIN;
	CREATE DATABASE appdb OWNER app});
$primary->safe_psql('appdb', 'CREATE EXTENSION flakeid');
$primary->safe_psql(
	'appdb', q{
	CREATE TABLE users (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text);
	CREATE TABLE posts (id serial PRIMARY KEY, author int REFERENCES users);
	INSERT INTO users (name) VALUES ('a'), ('b');
	INSERT INTO posts (author) VALUES (1), (2)},
	extra_params => [ '-U', 'app' ]);
is( $primary->safe_psql(
		'appdb', q{
	SELECT count(*) FROM flakeid_convert_key('users', to_type => 'flakeid');
	INSERT INTO users (name) VALUES ('c');
	INSERT INTO posts (author) SELECT id FROM users WHERE name = 'c';
	SELECT count(*) FILTER (WHERE flakeid_node(author) = 9) || ' ' || count(*)
		|| ' ' || pg_typeof(min(author))
	FROM posts},
		extra_params => [ '-U', 'app' ]),
	"5\n1 3 flakeid",
	'the owner, no superuser, converts its key and the column that references it');

$primary->stop;
done_testing();
