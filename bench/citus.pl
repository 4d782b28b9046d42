# The measurement of bench/citus (which sets up the environment and passes
# its options as arguments): seconds per run, rounds, clients per node and
# rows per INSERT.

use strict;
use warnings;

use FlakeCitus;
use FlakeTest;
use List::Util qw(sum);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my ($secs, $rounds, $clients, $rows) = @ARGV;

# The servers as bench/run runs them, with Citus's default shard count.
my $conf = q{
fsync = on
synchronous_commit = off
jit = off
citus.shard_count = 32
log_statement = none
};

citus_install();
my @names = qw(coordinator worker1 worker2);
my @nodes = citus_cluster(\@names, conf => $conf);
my ($coord) = @nodes;
my %keys = (
	flakeid   => 'flakeid PRIMARY KEY DEFAULT nextflake()',
	bigserial => 'bigserial PRIMARY KEY');
foreach my $key (sort keys %keys)
{
	$coord->safe_psql('postgres',
		"CREATE TABLE t_$key (id $keys{$key}, payload int NOT NULL);\n"
		  . "SELECT create_distributed_table('t_$key', 'id')");
}

# One round of one table: pgbench on every node at once; tps by node.
sub run_round
{
	my ($key, $round) = @_;
	my $values = join(', ', ('(:client_id)') x $rows);
	my @runs = map {
		[
			$_,
			start_pgbench(
				$_, "insert_${key}_$round",
				"INSERT INTO t_$key (payload) VALUES $values;",
				$secs + 120, '-c', $clients, '-j', $clients, '-T', $secs)
		]
	} @nodes;
	my %tps;
	foreach my $run (@runs)
	{
		my ($node, $h, $out, $err) = @$run;
		ok($h->finish, "$key, round $round, " . $node->name . ': pgbench ran')
		  or diag($$err);
		($tps{ $node->name }) =
		  $$out =~ /tps = ([0-9.]+) \(without initial connection time\)/;
		$tps{ $node->name } //= 0;
	}
	return \%tps;
}

my %figures;    # $figures{$key}{$name} = [tps of each round]
foreach my $round (1 .. $rounds)
{
	# the table that goes first alternates
	my @order = $round % 2 ? qw(flakeid bigserial) : qw(bigserial flakeid);
	foreach my $key (@order)
	{
		my $tps = run_round($key, $round);
		push @{ $figures{$key}{$_} }, $tps->{$_} foreach @names;
		push @{ $figures{$key}{all} }, sum(values %$tps);
	}
}

# The keys are unique; the flakeids come from the three nodes, and so do
# the three ranges of the bigserial key, one per node.
foreach my $key (sort keys %keys)
{
	ids_unique($coord, "SELECT id FROM t_$key", "t_$key");
}
is( $coord->safe_psql(
		'postgres',
		'SELECT count(DISTINCT flakeid_node(id)) FROM t_flakeid'),
	'3', 't_flakeid: IDs of the three nodes');
is( $coord->safe_psql(
		'postgres', 'SELECT count(DISTINCT id >> 48) FROM t_bigserial'),
	'3', 't_bigserial: a range of the sequence per node (its top 16 bits)');

sub median
{
	my @v = sort { $a <=> $b } @_;
	return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}

sub summary
{
	my @v = sort { $a <=> $b } @_;
	return sprintf('%.0f (%.0f-%.0f)', median(@v), $v[0], $v[-1]);
}

# PostgreSQL::Test::Utils sends STDOUT to the log; the report goes where
# Test::More writes (a handle without printf).
sub report
{
	my ($format, @values) = @_;
	my $out = Test::More->builder->output;
	print $out sprintf($format, @values);
	return;
}

my $cpu = `grep -m1 'model name' /proc/cpuinfo`;
$cpu =~ s/^model name\s*:\s*|\s+$//g;
chomp(my $ncpu = `nproc`);
my $citus = $coord->safe_psql('postgres',
	q{SELECT extversion FROM pg_extension WHERE extname = 'citus'});
my $row = "%-10s %-18s %-18s %-18s %-18s\n";
report("\nCitus %s, PostgreSQL %s, %s CPUs (%s)\n",
	$citus, $coord->pg_version, $ncpu, $cpu);
report("INSERT of %d row(s), %d client(s) per node, %d s per run, %d rounds; "
	  . "tps median (min-max)\n\n",
	$rows, $clients, $secs, $rounds);
report($row, 'key', 'all nodes', @names);
foreach my $key (qw(flakeid bigserial))
{
	report($row, $key, map { summary(@{ $figures{$key}{$_} }) } ('all', @names));
}
my @ratio = sort { $a <=> $b }
  map { $figures{flakeid}{all}[$_] / $figures{bigserial}{all}[$_] }
  0 .. $rounds - 1;
report("\nflakeid / bigserial, all nodes, by round: median %.2f (%.2f-%.2f)\n",
	median(@ratio), $ratio[0], $ratio[-1]);

$_->stop foreach reverse @nodes;
done_testing();
