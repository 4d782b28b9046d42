# A rolling upgrade in the order the README gives, the standby first: an
# older flakeid's primary (FLAKE_OLD_INSTALL: test/run builds the last
# release without a promotion floor, 1.2, from the git history) runs its
# IDs ahead of the clock and stops; its standby, which runs this version,
# is promoted and continues above every ID the old primary returned.  The
# standby's log says, from the start of replay, that it will.

use strict;
use warnings;

use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

plan skip_all => 'no older flakeid to run beside this one (test/run builds one '
  . 'where the source tree has its git history; FLAKE_OLD_REV names the commit)'
  unless $ENV{FLAKE_OLD_INSTALL};
note "the older flakeid: $ENV{FLAKE_OLD_VERSION}";

my $old = flake_node(
	'old_primary',
	node_id      => 9,
	streaming    => 1,
	install_path => $ENV{FLAKE_OLD_INSTALL},
	conf         => "flakeid.max_lead = '60s'");
$old->start;
$old->safe_psql(
	'postgres', q{
	CREATE EXTENSION flakeid;
	CREATE TABLE t (id flakeid PRIMARY KEY DEFAULT nextflake(), g int);
	INSERT INTO t (g) SELECT generate_series(1, 1000)});
is( $old->safe_psql(
		'postgres', "SELECT extversion FROM pg_extension WHERE extname = 'flakeid'"),
	$ENV{FLAKE_OLD_VERSION},
	'the primary runs the older flakeid');

$old->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('new_standby');
$standby->init_from_backup($old, 'backup', has_streaming => 1);
$standby->start;
catch_up($old, $standby);
ok( $standby->log_contains(
		qr/flakeid continues above the old primary's IDs if this server is promoted/),
	'the standby that runs this version says at the start of replay that it continues above');

# a burst on the old primary, more than 40 s ahead of the clock, which no
# lease the standby received covers, while the standby is stopped; in
# blocks of ten million IDs until the IDs run 45 s ahead, however fast this
# machine makes them
$standby->stop;
my @out = split /\n/, $old->safe_psql(
	'postgres', q{
	DO $$
	BEGIN
		FOR i IN 1 .. 200 LOOP
			PERFORM count(*) FROM (SELECT nextflakes(1000000) FROM generate_series(1, 10)) s;
			EXIT WHEN flakeid_timestamp(nextflake()) > clock_timestamp() + interval '45 s';
		END LOOP;
	END $$;
	SELECT id::bigint, flakeid_timestamp(id) > clock_timestamp() + interval '40 s'
	FROM (SELECT nextflake() AS id) s});
my ($x, $ahead) = split /\|/, $out[-1];
is($ahead, 't', 'the old primary returned an ID more than 40 s ahead of the clock');
$old->stop('immediate');

$standby->start;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'promotion did not finish';
my $first = $standby->safe_psql('postgres', 'SELECT nextflake()::bigint');
cmp_ok($first, '>', $x, 'the first ID of the promoted standby is above the old primary\'s last');
is( $standby->safe_psql(
		'postgres', qq{
	SELECT count(*) FILTER (WHERE id::bigint <= $x) || ' ' || bool_and(flakeid_node(id) = 9)
	FROM nextflakes(100000) id}),
	'0 true',
	'so is every ID after it');
$standby->stop;
done_testing();
