# A clock outside the 41-bit time range of the layout is an error, never a
# wrapped or truncated ID: before flakeid.epoch, and past its 2^41 ms.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# An epoch in the future puts the clock before it.
my $node = PostgreSQL::Test::Cluster->new('future_epoch');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'flakeid'
flakeid.epoch = '2199-01-01 00:00:00+00'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION flakeid');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT nextflake()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'nextflake() fails when the clock reads before the epoch');
like($err, qr/22008: system clock is outside the range of flakeid timestamps/,
	'with SQLSTATE 22008 and a clear message');
like($err, qr/before flakeid\.epoch/, 'the detail names the epoch');
# decoding still works
is($node->safe_psql('postgres', "SELECT flakeid_timestamp(0) = '2199-01-01 00:00:00+00'"),
	't', 'decode uses the configured epoch');
$node->stop;

# A clock past epoch + 2^41 ms (about 69.7 years) is out of range too.
SKIP:
{
	my $faketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
	skip 'libfaketime is not installed', 2 unless -e $faketime;

	my $late = PostgreSQL::Test::Cluster->new('late_clock');
	$late->init;
	$late->append_conf('postgresql.conf', q{
shared_preload_libraries = 'flakeid'
});
	{
		local $ENV{LD_PRELOAD} = $faketime;
		local $ENV{FAKETIME} = '@2090-01-01 00:00:00';
		local $ENV{DONT_FAKE_MONOTONIC} = '1';
		$late->start;
	}
	is($late->safe_psql('postgres', "SELECT extract(year FROM now())"), '2090',
		'the server clock reads 2090');
	$late->safe_psql('postgres', 'CREATE EXTENSION flakeid');
	($ret, $out, $err) = $late->psql('postgres', 'SELECT nextflake()',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/22008: system clock is outside the range of flakeid timestamps/,
		'nextflake() fails past the 41-bit range');
	$late->stop;
}

done_testing();
