#!/usr/bin/env perl
# flakeid in a Sqitch project, as docs/clients.md shows it: as the
# application's role (FLAKE_APP_USER, no superuser) that owns its database
# flakeid_sqitch, `sqitch deploy` applies the change events (the extension
# and a table with DEFAULT nextflake()), `sqitch verify` checks it (and
# fails without the default), `sqitch revert` removes both and a second deploy makes them again; rows inserted
# through DBD::Pg (Sqitch's own driver) in between get exact keys of this
# server that keep increasing.
use strict;
use warnings;

use DBI;
use FindBin;
use Math::BigInt;
use Test::More;

my $SERVER_NODE_ID = 42;    # test/flakeid.conf
my $DATABASE = 'flakeid_sqitch';
my $user = $ENV{FLAKE_APP_USER} or die "error: FLAKE_APP_USER is not set\n";

# sqitch COMMAND ARGS... in this directory, on the database as the role;
# its output, and whether it succeeded.
sub sqitch
{
	my @command = ('sqitch', '--chdir', $FindBin::Bin, @_, "db:pg://$user\@/$DATABASE");
	my $output = qx{@command 2>&1};
	return ($? == 0, $output);
}

my $dbh = DBI->connect("dbi:Pg:dbname=$DATABASE", $user, undef,
	{ RaiseError => 1, PrintError => 0, AutoCommit => 1 });

is_deeply(
	$dbh->selectrow_hashref(
		q{SELECT r.rolsuper::int AS superuser, (pg_get_userbyid(d.datdba) = current_user)::int AS owner
		    FROM pg_roles r, pg_database d
		   WHERE r.rolname = current_user AND d.datname = current_database()}),
	{ superuser => 0, owner => 1 },
	'the application role owns the database and is not a superuser');

# The extension's version and the type and default of events.id (undef
# where gone).
sub schema
{
	return $dbh->selectrow_hashref(
		q{SELECT (SELECT extversion FROM pg_extension WHERE extname = 'flakeid') AS extension,
		         (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
		           WHERE attrelid = to_regclass('events') AND attname = 'id') AS id_type,
		         (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
		           WHERE adrelid = to_regclass('events') AND adnum = 1) AS id_default});
}

# Inserts three events; their keys, checked: exact, above 2^53, of this
# server, made within a minute of now, ascending.
sub insert
{
	my $ids = $dbh->selectcol_arrayref(
		q{INSERT INTO events (body) VALUES ('one'), ('two'), ('three') RETURNING id});
	is(scalar @$ids, 3, 'three keys');
	foreach my $id (@$ids)
	{
		ok(Math::BigInt->new($id) > Math::BigInt->new(2)**53, 'a key above 2^53');
		is_deeply(
			$dbh->selectrow_arrayref(
				q{SELECT id::text, flakeid_node(id),
				         (abs(extract(epoch FROM flakeid_timestamp(id) - now())) < 60)::int
				    FROM events WHERE id = $1::flakeid}, undef, $id),
			[ $id, $SERVER_NODE_ID, 1 ],
			'the key reads back exact, of this server and now');
	}
	ok(Math::BigInt->new($ids->[0]) < Math::BigInt->new($ids->[1])
		  && Math::BigInt->new($ids->[1]) < Math::BigInt->new($ids->[2]),
		'ascending');
	is($dbh->selectrow_array(q{SELECT body FROM events WHERE id = $1}, undef, $ids->[1]),
		'two', 'found by its key');
	return $ids;
}

my ($ok, $output) = sqitch('deploy');
ok($ok, 'sqitch deploy') or diag $output;
($ok, $output) = sqitch('verify');
ok($ok, 'sqitch verify') or diag $output;
my $first = schema();
is($first->{id_type}, 'flakeid', 'events.id is a flakeid');
is($first->{id_default}, 'nextflake()', 'with DEFAULT nextflake()');
ok($first->{extension}, 'the extension is installed');
my $before = insert();
$dbh->do('ALTER TABLE events ALTER COLUMN id DROP DEFAULT');
($ok, $output) = sqitch('verify');
ok(!$ok, 'sqitch verify fails without the default');
$dbh->do('ALTER TABLE events ALTER COLUMN id SET DEFAULT nextflake()');

($ok, $output) = sqitch('revert', '-y');
ok($ok, 'sqitch revert') or diag $output;
is_deeply(schema(), { extension => undef, id_type => undef, id_default => undef },
	'the table and the extension are gone');

($ok, $output) = sqitch('deploy');
ok($ok, 'sqitch deploy again') or diag $output;
is_deeply(schema(), $first, 'the same schema again');
my $again = insert();
ok(Math::BigInt->new($again->[0]) > Math::BigInt->new($before->[-1]),
	'keys after the second deploy are above the first ones');

$dbh->disconnect;
done_testing();
