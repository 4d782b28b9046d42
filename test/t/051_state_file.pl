# The state file flakeid.state under damage: either copy of the lease
# damaged (as by a torn write or later rot), both damaged, the file
# unreadable, the file missing, and a file written by flakeid 1.1.  With
# the clock set back below the last ID, a restart never issues an ID at or
# below one issued before; a damaged copy is logged; an unreadable file is
# reported as such, with a hint that keeps the floor.

use strict;
use warnings;

use File::Copy qw(copy move);
use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

plan skip_all => 'libfaketime is not installed' unless faketime_library();

my $node = flake_node('state', node_id => 21, quiet => 1);
start_faked($node, '+0');
$node->safe_psql('postgres', q{
CREATE EXTENSION flakeid;
CREATE TABLE ids (id flakeid PRIMARY KEY DEFAULT nextflake(), phase int NOT NULL);
});
my $file = $node->data_dir . '/flakeid.state';

# Insert n rows with DEFAULT nextflake(); returns (ok, SQLSTATE, error).
sub generate
{
	my ($phase, $n) = @_;
	my ($ret, $out, $err, $state) = psql_state($node,
		"INSERT INTO ids (phase) SELECT $phase FROM generate_series(1, $n)");
	return ($ret == 0, $state, $err);
}

# Run IDs about two seconds ahead of the clock and store some of them.
sub burst_ahead
{
	my ($phase) = @_;
	generate($phase, 1000);
	$node->safe_psql('postgres', 'SELECT count(*) FROM nextflakes(8192000)');
	my @r = generate($phase, 1000);
	die "generation failed: $r[2]" unless $r[0];
	return $node->safe_psql('postgres', 'SELECT max(id)::bigint FROM ids');
}

# Flip one byte of the file, at an offset.
sub damage
{
	my ($offset) = @_;
	open my $fh, '+<:raw', $file or die "open $file: $!";
	seek $fh, $offset, 0;
	read $fh, my $byte, 1;
	seek $fh, $offset, 0;
	print $fh chr(ord($byte) ^ 0xFF);
	close $fh or die "close $file: $!";
	return;
}

# The valid copies of the lease, by offset.
sub valid_copies
{
	return join ',', map { $_->{offset} } grep { $_->{valid} eq 't' }
	  state_file_copies($node);
}

# Both copies hold the lease, at offsets 0 and 4096, with one serial.
burst_ahead(1);
my @copies = grep { $_->{valid} eq 't' } state_file_copies($node);
is(join(',', map { "$_->{offset}/$_->{version}" } @copies), '0/3,4096/3',
	'two copies of the lease, at offsets 0 and 4096');
is($node->safe_psql('postgres', 'SELECT count(*) FROM flakeid_state_file() WHERE NOT valid'),
	'0', 'a healthy server shows no other copy, so that no check for invalid ones alarms');
is($copies[0]{serial} . ' ' . $copies[0]{lease_end_ms},
	$copies[1]{serial} . ' ' . $copies[1]{lease_end_ms},
	'with the same serial and lease');

# A restart with both copies healthy warns of no damaged copy.
$node->stop;
my $healthy = -s $node->logfile;
start_faked($node, '+0');
ok(!$node->log_contains(qr/has a damaged copy of the time lease/, $healthy),
	'both copies healthy: a restart warns of no damaged copy');

# Either copy damaged: the other one is enough, whichever it is.
my $phase = 2;
foreach my $victim (0, 4096)
{
	my $max = burst_ahead($phase);
	my $when = $node->safe_psql('postgres',
		"SELECT extract(epoch FROM flakeid_timestamp($max))");
	$node->stop;
	damage($victim + 20);
	my $offset = -s $node->logfile;
	start_faked($node, offset_to($when - 1));
	ok( $node->log_contains(
			qr/WARNING:  flakeid state file "flakeid\.state" has a damaged copy of the time lease/,
			$offset),
		"copy at $victim damaged: the log warns");
	ok($node->log_contains(qr/The copy at offset $victim is not valid/, $offset),
		"copy at $victim damaged: the log names the copy");
	$phase++;
	my ($ok, $state, $err) = generate($phase, 2000);
	ok($ok, "copy at $victim damaged, clock before the last ID: INSERTs work")
	  or diag($err);
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM ids WHERE phase = $phase AND id <= $max"),
		'0', "copy at $victim damaged: every new ID is above every earlier one");
	is(valid_copies(), '0,4096', "copy at $victim damaged: the next renewal rewrote it");
	$phase++;
}

# Both copies damaged: nothing is generated, rather than a guess.
my $max = $node->safe_psql('postgres', 'SELECT max(id)::bigint FROM ids');
$node->stop;
copy($file, "$file.saved") or die "copy: $!";
damage(20);
damage(4096 + 20);
$node->start;
my $err = fails_with($node, 'SELECT nextflake()', 'XX001',
	'both copies damaged');
like($err, qr/flakeid state file "flakeid\.state" is damaged/,
	'both copies damaged: says so');
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'state file damaged', 'both copies damaged: flakeid_status() says so');
$node->stop;
move("$file.saved", $file) or die "move: $!";

# The file cannot be read: the error says why, and keeps the floor.
SKIP:
{
	skip 'file permissions do not bind the superuser root', 6 if $> == 0;
	chmod 0000, $file or die "chmod $file: $!";
	$node->start;
	$err = fails_with($node, 'SELECT nextflake()', '42501',
		'the file is unreadable');
	like($err,
		qr/could not read flakeid state file "flakeid\.state": Permission denied/,
		'the file is unreadable: the error gives the cause');
	like($err, qr/HINT:  .*Do not remove the file/,
		'the file is unreadable: the hint keeps the floor');
	is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
		'state file unreadable', 'the file is unreadable: flakeid_status() says so');
	$node->stop;
	chmod 0600, $file or die "chmod $file: $!";
	$node->start;
	my ($ok) = generate($phase, 100);
	ok($ok, 'readable again: generation works after a restart');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM ids WHERE phase = $phase AND id <= $max"),
		'0', 'readable again: above every earlier ID');
	$phase++;
	$node->stop;
}

# The file is missing: the server says so and starts from the clock.
move($file, "$file.gone") or die "move: $!";
my $offset = -s $node->logfile;
$node->start;
ok($node->log_contains(qr/flakeid state file "flakeid\.state" not found/, $offset),
	'a missing file is logged');
is($node->safe_psql('postgres', 'SELECT state FROM flakeid_status()'),
	'ready', 'a missing file is a first start: ready');
$node->stop;
unlink $file;
move("$file.gone", $file) or die "move: $!";

# Files written by older versions, read, their floor kept, and rewritten
# in the current format: flakeid 1.1 (format version 1, two copies at
# offsets 0 and 512, whose old second copy is then gone) and 1.2 (format
# version 2, no timeline in the lease; on timeline 1 it ended no archive
# recovery, so no floor ahead of the clock).  Each fixture is the file of
# a server that issued IDs up to the one given (test/fixtures/README).
my ($ret, $out, $e, $lease_end);
foreach my $fixture (
	[ '1.1', 3, 912490645115910036, '0/1/2/t,512/1/1/t' ],
	[ '1.2', 4, 913592545995408359, '0/2/1/t,4096/2/1/t' ])
{
	my ($version, $node_id, $last_id, $copies) = @$fixture;
	(my $name = "from_$version") =~ s/\./_/;
	my $old = flake_node($name, node_id => $node_id, quiet => 1);
	my $old_file = $old->data_dir . '/flakeid.state';
	copy("$ENV{FLAKE_SRC}/test/fixtures/flakeid-$version.state", $old_file)
	  or die "copy fixture: $!";
	chmod 0600, $old_file;
	$old->start;
	$old->safe_psql('postgres',
		'CREATE EXTENSION flakeid; CREATE TABLE ids (id flakeid PRIMARY KEY DEFAULT nextflake())');
	is( $old->safe_psql(
			'postgres',
			q{SELECT string_agg(format('%s/%s/%s/%s', "offset", version, serial, valid), ',' ORDER BY "offset")
			  FROM flakeid_state_file()}),
		$copies, "the $version file is read: its two copies, both valid");
	$lease_end = $old->safe_psql('postgres',
		q{SELECT extract(epoch FROM max(lease_end)) FROM flakeid_state_file() WHERE valid});
	$old->stop;
	start_faked($old, offset_to($lease_end - 2));
	($ret, $out, $e) = psql_as($old, qq{
INSERT INTO ids SELECT FROM generate_series(1, 1000);
SELECT count(*) FILTER (WHERE id <= $last_id),
	flakeid_timestamp(min(id)) < clock_timestamp() + interval '3 s'
FROM ids});
	is($out, '0|t',
		"every ID is above the last one flakeid $version issued, and none far ahead of the clock")
	  or diag($e);
	is( $old->safe_psql(
			'postgres',
			q{SELECT string_agg(format('%s/%s/%s', "offset", version, valid), ',' ORDER BY "offset")
			  FROM flakeid_state_file()}),
		'0/3/t,4096/3/t',
		"the $version file is rewritten in the current format, nothing else shown");
	$old->stop;
}

# Two valid copies with different serials, as a crash between the two
# writes of a renewal leaves them (the copy at 4096 is written first):
# the newer lease wins, also with the clock set back below both.  First,
# a record made by the test is what the server reads.
$node->start;
my $newest = burst_ahead($phase);
$phase++;
my ($copy) = grep { $_->{valid} eq 't' } state_file_copies($node);
my $newer_end = $copy->{lease_end_ms};
$node->stop;
my %lease = (epoch_ms => 1577836800000, node_bits => 10, node_id => 21);
write_state_file($node,
	0    => state_file_record(%lease, serial => 7, lease_end => $newer_end),
	4096 => state_file_record(%lease, serial => 7, lease_end => $newer_end));
$node->start;
is( $node->safe_psql('postgres',
		q{SELECT string_agg(format('%s/%s/%s/%s/%s', "offset", valid, serial, node_id, lease_end_ms), ',' ORDER BY "offset")
		  FROM flakeid_state_file()}),
	"0/t/7/21/$newer_end,4096/t/7/21/$newer_end",
	'a record the test writes is read as it was meant');
$node->stop;
my ($ok, $state);
# the newer copy at 4096, as that crash leaves it, then at 0, as a write
# at 4096 that the disk lost would: the newer lease wins wherever it lies
foreach my $newer (4096, 0)
{
	if ($newer == 0)
	{
		$node->start;
		$newest = burst_ahead($phase);
		$phase++;
		($copy) = grep { $_->{valid} eq 't' } state_file_copies($node);
		$newer_end = $copy->{lease_end_ms};
		$node->stop;
	}
	my $older = $newer == 0 ? 4096 : 0;
	write_state_file($node,
		$older => state_file_record(%lease, serial => 8, lease_end => $newer_end - 5000),
		$newer => state_file_record(%lease, serial => 9, lease_end => $newer_end));
	start_faked($node, offset_to((1577836800000 + $newer_end) / 1000 - 7));
	($ok, $state, $err) = generate($phase, 1000);
	ok($ok, "copies of different serials, the newer at $newer: generation works") or diag($err);
	is($node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE phase = $phase AND id <= $newest"),
		'0', "copies of different serials, the newer at $newer, clock set back: the newer lease wins");
	$phase++;
	$node->stop;
}

# Records with a good CRC and impossible content are damaged, not a lease;
# so is one of a version no release wrote (4), laid out and checksummed
# as version 3 or as versions 1 and 2 are.
foreach my $impossible ([ node_bits => 99 ], [ lease_end => 1 << 50 ], [ reserved => 7 ],
	[ node_id => -5 ], [ version => 4 ], [ version => 4, no_timeline => 1 ])
{
	my %change = @$impossible;
	my $what = join(', ', map { "$_ = $change{$_}" } sort keys %change);
	my %bad = (%lease, serial => 10, lease_end => $newer_end, %change);
	write_state_file($node, 0 => state_file_record(%bad), 4096 => state_file_record(%bad));
	$node->start;
	fails_with($node, 'SELECT nextflake()', 'XX001', "$what in both copies");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM flakeid_state_file() WHERE valid'),
		'0', "$what: neither copy is valid");
	$node->stop;
}
# So is a record in a slot its version never used: version 3 at offset
# 512, where only version 1 kept a copy, and version 1 at 4096.
write_state_file($node,
	512  => state_file_record(%lease, serial => 10, lease_end => $newer_end),
	4096 => state_file_record(%lease, serial => 10, lease_end => $newer_end, version => 1, no_timeline => 1));
$node->start;
fails_with($node, 'SELECT nextflake()', 'XX001', 'version 3 at offset 512 and version 1 at 4096');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(format('%s/%s', "offset", valid), ',' ORDER BY "offset") FROM flakeid_state_file()}),
	'0/f,512/f,4096/f',
	'version 3 at offset 512 and version 1 at 4096: neither copy is valid');
$node->stop;
# Offset 512, where flakeid 1.1 kept its second copy, is shown as a
# damaged copy as soon as any byte of it is not zero (the first or the
# last), and is left out while it is all zeros.
foreach my $byte (512, 1023, undef)
{
	write_state_file($node,
		0    => state_file_record(%lease, serial => 11, lease_end => $newer_end),
		4096 => state_file_record(%lease, serial => 11, lease_end => $newer_end),
		defined $byte ? ($byte => "\x01") : ());
	$node->start;
	is( $node->safe_psql('postgres',
			q{SELECT string_agg(format('%s/%s', "offset", valid), ',' ORDER BY "offset")
			  FROM flakeid_state_file()}),
		defined $byte ? '0/t,512/f,4096/t' : '0/t,4096/t',
		defined $byte ? "a non-zero byte at $byte: a damaged copy at 512" : 'offset 512 all zeros: no copy there');
	$node->stop;
}

$node->start;
ids_unique($node, 'SELECT id FROM ids', 'the whole test');
$node->stop;
done_testing();
