# The floor after archive recovery at the edges of what it allows for
# (062 and 064 run both servers on one clock, far inside them):
#
#   1. the old primary's clock ahead of the standby's by most of
#      flakeid.max_clock_skew (2.5 s of 3 s), more than a lease: its IDs,
#      returned up to flakeid.max_lead ahead of its own clock, lie below
#      the promoted standby's floor only if the floor adds the whole
#      allowance (a floor that left it out or subtracted it fails);
#   2. a standby that never recorded a lease: its base backup was taken
#      before the primary's first ID and it received nothing after, and it
#      is promoted after a burst: the floor applies all the same.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# A burst on the old primary that ends within 200 ms of its
# flakeid.max_lead ahead of its own clock; returns the last ID.
sub burst_to_lead
{
	my ($primary, $lead_ms) = @_;
	my $n = ($lead_ms - 200) * 4096;
	my @out = split /\n/, $primary->safe_psql('postgres', qq{
SELECT nextflakes($n) LIMIT 1;
SELECT id::bigint, flakeid_timestamp(id) - clock_timestamp() > interval '@{[ ($lead_ms - 600) / 1000 ]} s'
FROM (SELECT nextflake() AS id) s;});
	my ($x, $ahead) = split /\|/, $out[-1];
	is($ahead, 't', 'the old primary returned an ID close to flakeid.max_lead ahead of its clock');
	return $x;
}

# The promoted server's first IDs lie above $x.
sub first_above
{
	my ($node, $x, $what) = @_;
	my $first = $node->safe_psql('postgres', 'SELECT nextflake()::bigint');
	cmp_ok($first, '>', $x, "$what: the first ID is above every ID the old primary returned");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FILTER (WHERE id::bigint <= $x) FROM nextflakes(10000) id"),
		'0', "$what: so are the next ones");
	return;
}

# 1. The old primary's clock 2.5 s ahead, flakeid.max_clock_skew = 3s.
SKIP:
{
	skip 'libfaketime is not installed', 4 unless faketime_library();
	my $conf = q{
flakeid.max_lead = '6s'
flakeid.max_clock_skew = '3s'
flakeid.max_clock_wait = '20s'};
	my $primary = flake_node('skew_primary', node_id => 9, streaming => 1, conf => $conf);
	start_faked($primary, '+2.5');
	$primary->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (id flakeid PRIMARY KEY DEFAULT nextflake());
INSERT INTO t SELECT FROM generate_series(1, 100);});
	$primary->backup('backup');
	my $standby = PostgreSQL::Test::Cluster->new('skew_standby');
	$standby->init_from_backup($primary, 'backup', has_streaming => 1);
	$standby->start;
	catch_up($primary, $standby);
	$standby->stop;
	my $offset = server_clock_offset($primary);
	ok($offset > 2.2 && $offset < 2.8, 'the old primary\'s clock runs 2.5 s ahead')
	  or diag("offset $offset s");
	my $x = burst_to_lead($primary, 6000);
	$primary->stop('immediate');
	$standby->start;
	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
	first_above($standby, $x, 'old primary\'s clock ahead within flakeid.max_clock_skew');
	$standby->stop;
}

# 2. A standby that never recorded a lease.
{
	my $primary = flake_node('nolease_primary', node_id => 9, streaming => 1,
		conf => "flakeid.max_lead = '20s'");
	$primary->start;
	$primary->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE t (id flakeid PRIMARY KEY DEFAULT nextflake());});
	is($primary->safe_psql('postgres', 'SELECT issued FROM flakeid_status()'), '0',
		'no ID was made before the base backup');
	$primary->backup('backup');
	my $standby = PostgreSQL::Test::Cluster->new('nolease_standby');
	$standby->init_from_backup($primary, 'backup', has_streaming => 1);
	$standby->append_conf('postgresql.conf', "primary_conninfo = ''");
	$standby->start;
	is($standby->safe_psql('postgres', 'SELECT count(*) FROM flakeid_state_file() WHERE valid'), '0',
		'the standby has no lease recorded');
	my $x = burst_to_lead($primary, 20000);
	$primary->stop('immediate');
	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not finish';
	first_above($standby, $x, 'a standby that never recorded a lease');
	$standby->stop;
}

done_testing();
