#!/usr/bin/perl
# Turns the raw figures of bench/run (section, key, round, value; tab
# separated) into the plain-text report: medians, min-max, ratios, and
# whether each target of the performance issue is met.
use strict;
use warnings;

my (%meta, %conf, %val);
while (<>)
{
	chomp;
	my @f = split /\t/;
	if ($f[0] eq 'meta')
	{
		if ($f[1] =~ /^conf/) { push @{ $conf{ $f[1] } }, $f[2]; }
		else { $meta{ $f[1] } = $f[2]; }
		next;
	}
	push @{ $val{ $f[0] }{ $f[1] } }, $f[3];
}

sub figures
{
	my ($section, $key) = @_;
	my @v = sort { $a <=> $b } @{ $val{$section}{$key} || [] };
	return () unless @v;
	my $n = @v;
	my $med = $n % 2 ? $v[ $n / 2 ] : ($v[ $n / 2 - 1 ] + $v[ $n / 2 ]) / 2;
	return ($med, $v[0], $v[-1]);
}
sub median { my @f = figures(@_); return $f[0]; }

# thousands separators
sub num
{
	my ($x, $dec) = @_;
	my $s = sprintf("%.${dec}f", $x);
	1 while $s =~ s/^(\d+)(\d{3})/$1,$2/;
	return $s;
}

sub range
{
	my ($section, $key, $dec) = @_;
	my ($med, $min, $max) = figures($section, $key);
	return sprintf("%s (%s-%s)", num($med, $dec), num($min, $dec), num($max, $dec));
}

my @out;
sub line { push @out, sprintf(shift, @_); }

line("flakeid benchmark (%s mode): %s to %s", $meta{mode}, $meta{start}, $meta{end});
line("machine: %s CPUs (nproc), %s, %s", $meta{nproc}, $meta{cpu}, $meta{kernel});
line("server: %s", $meta{postgres});
line("load average (1/5/15 min): %s at start, %s at end (other work on the machine adds noise)",
	$meta{load_start}, $meta{load_end});
line("settings of both servers: %s", join(', ', @{ $conf{conf} }));
line("  server A: %s; default layout, %s IDs/ms, flakeid.max_lead = %s ms",
	join(', ', @{ $conf{conf_a} }), num($meta{cap_a}, 0), $meta{max_lead});
line("  server B: %s; %s IDs/ms", join(', ', @{ $conf{conf_b} }), num($meta{cap_b}, 0));
line("each figure: median (min-max) over the rounds; ratios are of medians");
line("");

#
# 1. cost per ID
#
my @per_id = (
	[ 'floor', 'g (harness floor)' ],
	[ 'clock', 'clock_timestamp()' ],
	[ 'nv1', "nextval() CACHE 1" ],
	[ 'nv100', "nextval() CACHE 100" ],
	[ 'uuid', 'gen_random_uuid()' ],
	[ 'flake', 'nextflake() burst, server A' ],
	[ 'flake0', 'nextflake() node_bits=0, B' ],
);
my $floor = median('per_id', 'floor');
my $clock = median('per_id', 'clock');
my $nv1 = median('per_id', 'nv1');
line("1. Cost per ID in one backend: SELECT count(expr) FROM (SELECT generate_series(1::int8, %d) g) s",
	$meta{N});
line("   %d rounds, expressions in rotating order, each query timed inside the server",
	$meta{rounds});
line("   %-29s %-27s %6s %8s %9s %8s %8s", 'expression', 'ns per ID (wall clock)', 'on-CPU', 'net', 'x nextval',
	'x clock', 'x clock');
line("   %-29s %-27s %6s %8s %9s %8s %8s", '', '', 'ns', 'of floor', 'CACHE 1', '', 'net');
for my $e (@per_id)
{
	my ($key, $label) = @$e;
	my $m = median('per_id', $key);
	next unless defined $m;
	my $net = $m - $floor;
	my $cpu = median('per_id_cpu', $key);
	line("   %-29s %-27s %6s %8.1f %9.2f %8.2f %8s", $label, range('per_id', $key, 1),
		$cpu < 0 ? 'n/a' : sprintf('%.1f', $cpu), $net, $m / $nv1, $m / $clock,
		$key eq 'floor' ? '' : sprintf('%.2f', $net / ($clock - $floor)));
}
{
	my @share;
	for my $key (keys %{ $val{per_id} })
	{
		for my $i (0 .. $#{ $val{per_id}{$key} })
		{
			my $w = $val{per_id_waited}{$key}[$i];
			push @share, $w / $val{per_id}{$key}[$i] if $w >= 0;
		}
	}
	$val{share}{all} = \@share;
	my ($sm, $smin, $smax) = figures('share', 'all');
	line("   net = minus the floor; x clock net = net / net of clock_timestamp(); on-CPU = the backend's CPU time")
	  if defined $sm;
	line("   the backend waited for a CPU (other load) for %.1f %% of a run's wall time (median; %.1f-%.1f %%)",
		100 * $sm, 100 * $smin, 100 * $smax) if defined $sm;
}
for my $key ('flake', 'flake0')
{
	my (undef, undef, $max) = figures('lead_after', $key);
	line("   %s: largest lead over the clock after a run: %d ms (flakeid.max_lead = %s ms)",
		$key eq 'flake' ? 'server A' : 'server B', $max, $meta{max_lead});
}
line("");

#
# 2. sustained
#
my ($sn_med, $sn_min, $sn_max) = figures('sust_ns', 'flake');
my $cap = $meta{cap_a};
my $per_ms = sub { 1e6 / $_[0] };
line("2. Sustained, demand above the cap: %s IDs per run from one backend, %d runs, server A",
	num($meta{sust_n}, 0), $meta{sust_runs});
line("   the lead over the clock is first raised to flakeid.max_lead, so the runs see only the steady state");
line("   IDs per ms: %s (%s-%s) of a cap of %s = %.1f %% (%.1f-%.1f %%)",
	num($per_ms->($sn_med), 0), num($per_ms->($sn_max), 0), num($per_ms->($sn_min), 0),
	num($cap, 0), 100 * $per_ms->($sn_med) / $cap, 100 * $per_ms->($sn_max) / $cap,
	100 * $per_ms->($sn_min) / $cap);
my $scpu = median('sust_cpu', 'flake');
line("   %.1f ns of wall clock per ID, of which %s on a CPU (the rest asleep, waiting for the clock)",
	$sn_med, $scpu < 0 ? 'n/a' : sprintf('%.1f ns', $scpu));
line("   lead at start and end of each run (ms): %s", join(', ', map { s/ /->/r } @{ $val{sust_lead}{flake} }));
line("   (every ID of a run is dense in ID space, so IDs per ms = cap x (1 + lead gained / run time): a");
line("   run below the cap is one whose backend fell behind the clock, losing lead)");
line("");

#
# 3. pgbench
#
my @kinds = ([ 'flake', 'nextflake()' ], [ 'serial', 'bigserial' ], [ 'uuid', 'gen_random_uuid()' ]);
line("3. pgbench inserts, tps: pgbench -n -M prepared -T %s, %d rounds in rotating order, each run on an",
	$meta{pgb_time}, $meta{pgb_rounds});
line("   emptied table (primary key + int4 column) after a CHECKPOINT, server A");
line("   %-7s %-5s %-22s %-22s %-22s %7s %7s", 'clients', 'rows', map({ $_->[1] } @kinds),
	'flake/', 'uuid/');
line("   %-7s %-5s %-22s %-22s %-22s %7s %7s", '', '/stmt', '', '', '', 'serial', 'serial');
for my $c (1, 2)
{
	for my $r (1, 1000)
	{
		my $s = "pgb_c${c}_r$r";
		my $ser = median($s, 'serial');
		line("   %-7s %-5s %-22s %-22s %-22s %7.3f %7.3f", $c, $r,
			map({ range($s, $_->[0], 0) } @kinds),
			median($s, 'flake') / $ser, median($s, 'uuid') / $ser);
	}
}
line("");

#
# 4. bytes per row
#
line("4. Bytes per row after loading %s rows in one INSERT ... SELECT (primary key + int4 column; one run)",
	num($meta{bulk_rows}, 0));
line("   %-19s %10s %12s %12s %18s", 'key', 'table', 'pk index', 'load ns/row',
	'index after pgb*');
for my $k (@kinds)
{
	line("   %-19s %10.2f %12.2f %12.0f %18.2f", $k->[1], median('table_bytes', $k->[0]),
		median('index_bytes', $k->[0]), median('bulk_ns', $k->[0]),
		median('pgb_index_bytes', $k->[0]));
}
line("   * pk index bytes per row after a pgbench run with 2 clients and 1,000-row statements (median)");
line("");

#
# 5. two sessions
#
my @conc = (
	[ 'clock', 'clock_timestamp()' ],
	[ 'nv1', 'nextval() CACHE 1' ],
	[ 'nv100', 'nextval() CACHE 100' ],
	[ 'uuid', 'gen_random_uuid()' ],
	[ 'flake', 'nextflake() burst, server A' ],
	[ 'flake0', 'nextflake() node_bits=0, B' ],
);
line("5. Two concurrent sessions (pgbench -c 2 -j 2 -t 1, each SELECT count(expr) over %s rows), %d rounds",
	num($meta{conc_n}, 0), $meta{conc_rounds});
line("   %-29s %-36s %8s %9s", 'expression', 'total IDs per second', 'x one', 'x nextval');
line("   %-29s %-36s %8s %9s", '', '', 'backend', 'CACHE 1');
my $conc_nv1 = median('conc', 'nv1');
for my $e (@conc)
{
	my ($key, $label) = @$e;
	my $m = median('conc', $key);
	next unless defined $m;
	my @f = figures('conc', $key);
	line("   %-29s %-36s %8.2f %9.2f", $label,
		sprintf("%s (%s-%s)", map { num($_, 0) } @f),
		$m / (1e9 / median('per_id', $key)), $m / $conc_nv1);
}
line("");

#
# targets
#
line("Targets of the performance issue, in this run:");
sub target
{
	my ($what, $figure, $verdict) = @_;
	line("   %-56s %-26s %s", $what, $figure, $verdict);
}
my $flake = median('per_id', 'flake');
my %cpu = map { $_ => median('per_id_cpu', $_) } qw(flake clock nv1);
my $on_cpu = sub {
	my ($base) = @_;
	return '' if $cpu{$base} <= 0 || $cpu{flake} < 0;
	return sprintf(" (on-CPU %.2f)", $cpu{flake} / $cpu{$base});
};
target("burst nextflake() <= 1.3 x clock_timestamp() per call",
	sprintf("%.2f x%s", $flake / $clock, $on_cpu->('clock')),
	$flake / $clock <= 1.3 ? 'met' : 'not met');
target("burst nextflake() <= 0.35 x nextval() CACHE 1",
	sprintf("%.2f x%s", $flake / $nv1, $on_cpu->('nv1')),
	$flake / $nv1 <= 0.35 ? 'met' : 'not met');
my $frac = $per_ms->($sn_med) / $cap;
target("sustained >= 95 % of the layout's cap", sprintf("%.1f %%", 100 * $frac),
	$frac >= 0.95 ? 'met' : 'not met');
for my $c (1, 2)
{
	for my $r (1, 1000)
	{
		my $s = "pgb_c${c}_r$r";
		my ($fm, undef, $fmax) = figures($s, 'flake');
		my ($sm, $smin) = figures($s, 'serial');
		target(sprintf("pgbench tps >= 1.0 x bigserial, %d client%s, %d-row", $c,
				$c > 1 ? 's' : '', $r),
			sprintf("%.3f x", $fm / $sm),
			$fm >= $sm ? 'met' : $fmax >= $smin ? 'within noise (ranges overlap)' : 'not met');
	}
}
my $fi = median('index_bytes', 'flake');
my $si = median('index_bytes', 'serial');
target("pk index bytes per row equal to bigserial's (bulk load)",
	sprintf("%.2f vs %.2f", $fi, $si), abs($fi - $si) <= 0.005 * $si ? 'met' : 'not met');

print "$_\n" for @out;
