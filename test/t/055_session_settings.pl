# Without preloading (PostgreSQL 17 and later): the generator's node id
# and layout come from the server's configuration only.  The library is
# loaded in a session after that session's connection options and its
# role's and database's settings were given to its parameters; such a
# session, even the first to touch the generator after a start, neither
# sets the generator up with its own view nor generates: it fails with
# SQLSTATE 55P02 and an error that names the parameter and where its value
# came from.  Every other session then generates with the configured node
# id (9) and epoch (2021-01-01), and decodes with them, that session too.
# A SET before the library is loaded changes nothing and breaks nothing.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node(
	'session_settings',
	preload => 0,
	node_id => 9,
	conf    => "flakeid.epoch = '2021-01-01 00:00:00+00'");
$node->start;
plan skip_all => 'generation without preloading needs PostgreSQL 17 or later'
  if $node->safe_psql('postgres', 'SHOW server_version_num') < 170000;
$node->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE ROLE app LOGIN;
GRANT CREATE ON SCHEMA public TO app;
});

# What a session sees of IDs that are made now: their node, whether they
# decode to a time within a minute of the clock, and the generator's
# epoch and node id, as one line.
my $sound = q{
SELECT bool_and(flakeid_node(id) = 9)
	|| ' ' || bool_and(flakeid_timestamp(id) BETWEEN now() - interval '1 minute'
		AND clock_timestamp() + interval '10 s')
FROM nextflakes(100) id};

# The decode of a fixed ID: its millisecond counts from the configured
# epoch whoever asks.
my $decode = q{SELECT flakeid_timestamp(0::flakeid) = '2021-01-01 00:00:00+00'};

# Restart, so that the generator is set up afresh by the first session
# that touches it.
sub fresh_start
{
	$node->restart;
	return;
}

# Run SQL as role app with $options as its connection options; returns
# (exit code, stdout, stderr, SQLSTATE).
sub as_app_with
{
	my ($options, $sql) = @_;
	local $ENV{PGOPTIONS} = $options;
	return psql_state($node, $sql, user => 'app');
}

my @options = (
	[ '-c flakeid.epoch=2024-01-01',             'flakeid.epoch' ],
	[ '-c flakeid.node_bits=16',                 'flakeid.node_bits' ],
	[ '-c flakeid.node_id=5',                    'flakeid.node_id' ],
	[ '-c flakeid.epoch=garbage',                'flakeid.epoch' ],
	[ "-c flakeid.epoch=2020-01-01\\ 00:00:00+00", 'flakeid.epoch' ],
	[ '-c flakeid.max_lead=60s',                 'flakeid.max_lead' ]);

foreach my $case (@options)
{
	my ($opts, $name) = @$case;
	fresh_start();
	my ($ret, $out, $err, $state) = as_app_with($opts, 'SELECT nextflake()');
	is($state, '55P02', "$opts: the first session to generate refuses")
	  or diag($err);
	like($err, qr/parameter "\Q$name\E" of this session was set outside the server's configuration/,
		"$opts: the error names the parameter");
	like($err, qr/came from the connection's options/, "$opts: and where its value came from");
	(undef, $out, $err) = as_app_with($opts, $decode);
	is($out, 't', "$opts: that session decodes with the configured epoch") or diag($err);
	is($node->safe_psql('postgres', $sound, connstr => $node->connstr('postgres') . ' user=app'),
		'true true', "$opts: other sessions generate with node id 9 and the configured epoch");
	is( $node->safe_psql('postgres', 'SELECT node_id, epoch FROM flakeid_status()'),
		'9|2021-01-01 00:00:00+00',
		"$opts: the generator has the configured node id and epoch");
}

# The first process to attach, its settings not the configuration's, sees
# the generator not set up, and leaves it so while it only reads the state
fresh_start();
{
	local $ENV{PGOPTIONS} = '-c flakeid.epoch=2024-01-01';
	my ($ret, $out, $err) = $node->psql('postgres',
		"SELECT state FROM flakeid_status();\nSELECT state FROM flakeid_status()");
	is($out, "not set up\nnot set up",
		'a session with a setting of its own, first after a start, reads the state: not set up')
	  or diag($err);
}
is( $node->safe_psql('postgres',
		"SELECT state FROM flakeid_status();\nSELECT nextflake() IS NOT NULL;\nSELECT state FROM flakeid_status()"),
	"not set up\nt\nready",
	'a session with the configuration\'s settings sets the generator up with its first call, not by reading the state');

# A role's and a database's settings: given before the library is loaded
# (a superuser's session that has not loaded it sets them).
foreach my $case (
	[ 'ALTER ROLE app SET flakeid.node_id = 5',        'ALTER ROLE app RESET flakeid.node_id' ],
	[ 'ALTER DATABASE postgres SET flakeid.epoch = \'2024-01-01\'',
	  'ALTER DATABASE postgres RESET flakeid.epoch' ])
{
	my ($set, $reset) = @$case;
	$node->safe_psql('postgres', $set);
	fresh_start();
	my ($ret, $out, $err, $state) = as_app_with('', 'SELECT nextflake()');
	is($state, '55P02', "$set: the first session to generate refuses") or diag($err);
	like($err, qr/came from the role's or the database's settings/, "$set: and says where from");
	$node->safe_psql('postgres', $reset);
	is($node->safe_psql('postgres', $sound, connstr => $node->connstr('postgres') . ' user=app'),
		'true true', "$set: other sessions generate with node id 9 and the configured epoch");
}

# A SET before the library is loaded: refused with a WARNING when it
# loads, and the session generates with the configuration's values.
fresh_start();
my ($ret, $out, $err) = as_app_with('',
	"SET flakeid.epoch = '2024-01-01';\nSET flakeid.node_id = 5;\n$sound;\nSHOW flakeid.node_id;");
is($out, "true true\n9", 'a SET before loading changes nothing: the session generates as node 9')
  or diag($err);

$node->stop;
done_testing();
