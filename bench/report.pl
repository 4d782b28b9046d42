#!/usr/bin/perl
# Turns the raw figures of bench/run (section, key, round, value; tab
# separated) into the plain-text report: medians, min-max, ratios, and
# whether each target of the performance issues is met.  Given the raw
# files of several runs (say, one part each), it reports them together.
#
#   bench/report.pl RAW.tsv [RAW.tsv ...]
use strict;
use warnings;

my (%meta, %conf, %val, %parts);
while (<>)
{
	chomp;
	my @f = split /\t/;
	if ($f[0] eq 'meta')
	{
		# each run's settings replace the previous run's
		%conf = () if $f[1] eq 'start';
		if ($f[1] =~ /^conf/) { push @{ $conf{ $f[1] } }, $f[2]; }
		elsif ($f[1] eq 'parts') { $parts{$_} = 1 for split /,/, $f[2]; }
		elsif ($f[1] eq 'start') { $meta{start} //= $f[2]; }
		else { $meta{ $f[1] } = $f[2]; }
		next;
	}
	push @{ $val{ $f[0] }{ $f[1] } }, $f[3];
}
# raw figures from before the parts existed are all of the single part
%parts = (single => 1) unless %parts;

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
	return 'n/a' unless defined $med;
	return sprintf("%s (%s-%s)", num($med, $dec), num($min, $dec), num($max, $dec));
}

my (@out, @targets);
sub line { push @out, sprintf(shift, @_); }
sub target
{
	my ($what, $figure, $verdict) = @_;
	push @targets, sprintf("   %-76s %-22s %s", $what, $figure, $verdict);
}

line("flakeid benchmark (%s mode, parts %s): %s to %s", $meta{mode},
	join(', ', grep { $parts{$_} } qw(single ids inserts edge standby)), $meta{start}, $meta{end});
line("machine: %s CPUs (nproc), %s, %s", $meta{nproc}, $meta{cpu}, $meta{kernel});
line("server: %s", $meta{postgres});
line("load average (1/5/15 min): %s at start, %s at end (other work on the machine adds noise)",
	$meta{load_start}, $meta{load_end});
line("settings of the servers: %s", join(', ', @{ $conf{conf} }));
line("  server A: %s; default layout, %s IDs/ms, flakeid.max_lead = %s ms",
	join(', ', @{ $conf{conf_a} }), num($meta{cap_a}, 0), $meta{max_lead});
line("  server B: %s; %s IDs/ms", join(', ', @{ $conf{conf_b} }), num($meta{cap_b}, 0))
  if $parts{single} || $parts{ids};
line("  server C: %s; default layout", join(', ', @{ $conf{conf_c} || [] }))
  if $parts{edge};
line("  server D: %s; default layout, its synchronous standby streaming over the socket",
	join(', ', @{ $conf{conf_d} || [] }))
  if $parts{standby};
line("each figure: median (min-max) over the rounds; ratios are of medians");
line("");

my %gen_label = (
	floor => 'count(g) (harness floor)',
	clock => 'clock_timestamp()',
	nv1 => 'nextval() CACHE 1',
	nv100 => 'nextval() CACHE 100',
	uuid => 'gen_random_uuid()',
	uuidv7 => 'uuidv7()',
	flake => 'nextflake() sustained, A',
	flake0 => 'nextflake() node_bits=0, B',
	flake0c => "nextflake() B, cache " . ($meta{bench_cache} // '?'),
);
my %key_label = (
	flake => 'flakeid nextflake()',
	serial => 'bigserial',
	uuid => 'uuid gen_random_uuid()',
	uuidv7 => 'uuid uuidv7()',
	serial_blk => "bigint, sequence CACHE " . ($meta{edge_block} // '?'),
	flake_hash => "flakeid, " . ($meta{edge_parts} // '?') . " hash partitions",
	flake_cache => "flakeid, flakeid.cache = " . ($meta{edge_cache} // '?'),
);

# The client counts and other fields of the keys (a|b|...) of a section.
sub key_fields
{
	my ($section, $pos) = @_;
	my %seen;
	$seen{ (split /\|/, $_)[$pos] } = 1 for keys %{ $val{$section} || {} };
	return sort { $a <=> $b } keys %seen;
}

# Where the clients were, summed over the rounds: the three most sampled
# wait events (CPU: running or waiting for a CPU; idle: between statements).
sub waits
{
	my ($section, $key) = @_;
	my (%n, $total);
	for my $k (keys %{ $val{$section} || {} })
	{
		next unless substr($k, 0, length($key) + 1) eq "$key|";
		my $event = substr($k, length($key) + 1);
		$n{$event} += $_ for @{ $val{$section}{$k} };
	}
	$total += $_ for values %n;
	return ('', 0) unless $total;
	my @top = (sort { $n{$b} <=> $n{$a} || $a cmp $b } keys %n)[ 0 .. 2 ];
	my $text = join(', ', map { sprintf("%s %.0f%%", s/^LWLock://r, 100 * $n{$_} / $total) } grep { defined } @top);
	return ($text, ($n{'LWLock:BufferContent'} // 0) / $total);
}

#
# 1.-5. the single-backend part
#
sub report_single
{
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
		[ 'flake0c', $gen_label{flake0c} ],
		[ 'touuid', 'flakeid_to_uuid(g)' ],
		[ 'fromuuid', 'flakeid_from_uuid(to_uuid(g))' ],
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
		[ 'flake0c', $gen_label{flake0c} ],
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
	# the targets of the single-backend part (issue 9)
	#
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

}
report_single() if $parts{single} && exists $val{per_id};

#
# 6. IDs per second by clients
#
if ($parts{ids})
{
	my @clients = key_fields('ids', 1);
	my @gens = grep { exists $val{ids}{"$_|$clients[0]"} } qw(floor clock nv1 nv100 uuid uuidv7 flake flake0 flake0c);
	my $cap = $meta{cap_a} * 1000;
	line("6. IDs per second by clients: pgbench -n -M prepared -c N -j N -T %s, each statement",
		$meta{sweep_time});
	line("   SELECT count(expr) FROM (SELECT generate_series(1::int8, %s) g) s; %s round(s), in rotating order",
		$meta{sweep_batch}, $meta{sweep_rounds});
	line("   nextflake() on A runs sustained, so that the layout's cap (%s IDs/s) shows: its lead is", num($cap, 0));
	line("   raised to flakeid.max_lead first, the run lasts a second more and its first second is left out;");
	line("   on B (node_bits = 0, cap %s IDs/s) the generator's own speed shows", num($meta{cap_b} * 1000, 0));
	line("   millions of IDs per second, median:");
	line("   %-29s%s", 'expression', join('', map { sprintf("%9s", "$_ cl.") } @clients));
	for my $g (@gens)
	{
		line("   %-29s%s", $gen_label{$g},
			join('', map { my $m = median('ids', "$g|$_"); defined $m ? sprintf("%9.2f", $m / 1e6) : sprintf("%9s", '-') } @clients));
	}
	line("   in detail:");
	line("   %-29s %7s  %-37s %7s %7s", 'expression', 'clients', 'IDs per second, median (min-max)', 'x cap', 'x clock');
	for my $g (@gens)
	{
		for my $c (@clients)
		{
			my $m = median('ids', "$g|$c");
			next unless defined $m;
			my $clock = median('ids', "clock|$c");
			my $x_cap = $g eq 'flake' ? sprintf('%.3f', $m / $cap)
			  : $g =~ /^flake0/ ? sprintf('%.4f', $m / ($meta{cap_b} * 1000)) : '';
			line("   %-29s %7s  %-37s %7s %7.2f", $gen_label{$g}, $c, range('ids', "$g|$c", 0), $x_cap,
				$m / $clock);
		}
	}
	line("   nextflake() on A, lead over the clock (ms) before and after each run, by clients:");
	for my $c (@clients)
	{
		line("     %3s: %s", $c, join(', ', map { s/ /->/r } @{ $val{ids_lead}{"flake|$c"} || [] }));
	}
	line("");

	my $top = $clients[-1];
	my $x_cap = median('ids', "flake|$top") / $cap;
	target("$top clients, default layout: >= 95 % of the cap", sprintf("%.1f %%", 100 * $x_cap),
		$x_cap >= 0.95 ? 'met' : 'not met');
	my ($f0, undef, $f0max) = figures('ids', "flake0|$top");
	my ($u, $umin) = figures('ids', "uuid|$top");
	target("$top clients, node_bits = 0: >= gen_random_uuid()'s IDs/s", sprintf("%.2f x", $f0 / $u),
		$f0 >= $u ? 'met' : $f0max >= $umin ? 'within noise (ranges overlap)' : 'not met');
	my $nv100 = median('ids', "nv100|$top");
	target("$top clients, node_bits = 0: aiming for 0.8 x nextval() CACHE 100", sprintf("%.2f x", $f0 / $nv100),
		$f0 / $nv100 >= 0.8 ? 'met' : 'not met');
	if (exists $val{ids}{"flake0c|$top"})
	{
		my $x = median('ids', "flake0c|$top") / $nv100;
		target(sprintf("$top clients, node_bits = 0, cache %s: aiming for 0.8 x nextval() CACHE 100",
				$meta{bench_cache}), sprintf("%.2f x", $x), $x >= 0.8 ? 'met' : 'not met');
	}
	for my $g (grep { exists $val{ids}{"$_|2"} } qw(flake0 flake0c))
	{
		my $x = median('ids', "$g|2") / median('ids', 'clock|2');
		target(sprintf("2 sessions, node_bits = 0%s: >= 0.8 x the clock's (%s CPUs)",
				$g eq 'flake0c' ? ", cache $meta{bench_cache}" : '', $meta{nproc}),
			sprintf("%.2f x", $x), $x >= 0.8 ? 'met' : 'not met');
	}
}

#
# 7. INSERTs by clients
#
if ($parts{inserts})
{
	my @clients = key_fields('ins_tps', 1);
	my @keys = grep { exists $val{ins_tps}{"$_|$clients[0]|1"} } qw(flake serial uuid uuidv7);
	line("7. pgbench INSERTs by clients: -n -M prepared -T %s, %s round(s) in rotating order, each run on an",
		$meta{sweep_time}, $meta{sweep_rounds});
	line("   emptied table (primary key + int4 column, small: all in memory) after a CHECKPOINT, server A;");
	line("   'where' is where the clients were, sampled every 10 ms: CPU = running or waiting for a CPU,");
	line("   idle = between statements, BufferContent = waiting for a page's lock (the index's right edge)");
	line("   %-23s %7s %4s  %-26s %11s %8s %8s  %s", 'key', 'clients', 'rows', 'tps, median (min-max)',
		'rows/s', 'x serial', 'WAL B/r', 'where');
	for my $rows (1, 100)
	{
		for my $c (@clients)
		{
			for my $k (@keys)
			{
				my $key = "$k|$c|$rows";
				next unless exists $val{ins_tps}{$key};
				my ($w) = waits('ins_wait', $key);
				line("   %-23s %7s %4s  %-26s %11s %8.2f %8.0f  %s", $key_label{$k}, $c, $rows,
					range('ins_tps', $key, 0), num(median('ins_rows', $key), 0),
					median('ins_tps', $key) / median('ins_tps', "serial|$c|$rows"),
					median('ins_wal', $key), $w);
			}
		}
	}
	line("");
}

#
# 8. the B-tree's right edge
#
if ($parts{edge})
{
	my @clients = key_fields('edge_tps', 1);
	line("8. The B-tree's right edge: pgbench INSERTs of 100 rows per statement, -T %s, %s round(s)",
		$meta{sweep_time}, $meta{sweep_rounds});
	if (defined $meta{edge_cache})
	{
		line("   a. small tables, all in memory (server A), emptied before each run; three ways around the right");
		line("      edge that keep the keys k-ordered: each backend inserting its own block of %s keys (a",
			$meta{edge_block});
		line("      sequence's CACHE), each backend reserving its own blocks of flakeids (flakeid.cache = %s,",
			$meta{edge_cache});
		line("      its largest setting, in the clients' sessions), and %s hash partitions (one right edge each)",
			$meta{edge_parts});
	}
	else
	{
		line("   a. small tables, all in memory (server A), emptied before each run; two ways around the right");
		line("      edge that keep the keys k-ordered: each backend inserting its own block of %s keys (a",
			$meta{edge_block});
		line("      sequence's CACHE), and %s hash partitions (one right edge each)", $meta{edge_parts});
	}
	if (exists $val{edge_order_run})
	{
		line("      order, over the last %s rows in key order (each statement is a transaction, named by its",
			num($meta{edge_order_rows}, 0));
		line("      xmin): run = rows per run of one statement's rows in key order (100: no other statement's");
		line("      key among a statement's keys); disp = mean distance in rows between a row's place in key");
		line("      order and its place in the order the statements began");
	}
	line("   %-33s %7s  %-26s %11s %8s %8s %8s %6s %7s  %s", 'key', 'clients', 'tps, median (min-max)', 'rows/s',
		'x serial', 'index', 'WAL B/r', 'run', 'disp', 'where');
	line("   %-33s %7s  %-26s %11s %8s %8s %8s %6s %7s", '', '', '', '', '', 'B/row', '', 'rows', 'rows');
	my $fig = sub {
		my ($section, $key, $fmt) = @_;
		my $m = median($section, $key);
		return defined $m ? sprintf($fmt, $m) : 'n/a';
	};
	for my $c (@clients)
	{
		for my $k (qw(flake serial uuid uuidv7 serial_blk flake_cache flake_hash))
		{
			my $key = "$k|$c";
			next unless exists $val{edge_tps}{$key};
			my ($w) = waits('edge_wait', $key);
			line("   %-33s %7s  %-26s %11s %8.2f %8.2f %8.0f %6s %7s  %s", $key_label{$k}, $c,
				range('edge_tps', $key, 0), num(median('edge_rows', $key), 0),
				median('edge_tps', $key) / median('edge_tps', "serial|$c"),
				median('edge_index_bytes', $key), median('edge_wal', $key),
				$fig->('edge_order_run', $key, '%.1f'), $fig->('edge_order_disp', $key, '%.0f'), $w);
		}
	}
	line("   b. tables larger than shared_buffers (server C: %s), preloaded with %s rows each and not",
		$meta{edge_sb}, num($meta{edge_rows}, 0));
	line("      emptied; table and index MB after the preload, and seconds it took: %s",
		join('; ', map {
			my ($t, $i) = split / /, ($val{big_mb}{$_} || ['? ?'])->[0];
			sprintf("%s %s + %s MB, %s s", $key_label{$_}, $t, $i, $val{big_load_s}{$_}[0])
		} grep { exists $val{big_mb}{$_} } qw(flake serial uuid uuidv7)));
	line("      blocks read = read into shared_buffers from the kernel (its page cache or the disk)");
	line("   %-23s %7s  %-26s %11s %8s %8s %9s %9s  %s", 'key', 'clients', 'tps, median (min-max)', 'rows/s',
		'x serial', 'WAL B/r', 'idx read', 'heap read', 'where');
	line("   %-23s %7s  %-26s %11s %8s %8s %9s %9s", '', '', '', '', '', '', 'per row', 'per row');
	for my $c (key_fields('big_tps', 1))
	{
		for my $k (qw(flake serial uuid uuidv7))
		{
			my $key = "$k|$c";
			next unless exists $val{big_tps}{$key};
			my ($w) = waits('big_wait', $key);
			line("   %-23s %7s  %-26s %11s %8.2f %8.0f %9.3f %9.3f  %s", $key_label{$k}, $c,
				range('big_tps', $key, 0), num(median('big_rows', $key), 0),
				median('big_tps', $key) / median('big_tps', "serial|$c"),
				median('big_wal', $key), median('big_idx_read', $key), median('big_heap_read', $key), $w);
		}
	}
	line("");
}

#
# what a synchronous standby costs
#
if ($parts{standby} && exists $val{sb_per_id})
{
	line("What a synchronous standby costs (server D, one synchronous standby; server A, none):");
	line("   %-44s %-28s %-28s %7s", '', 'with the standby (D)', 'without (A)', 'ratio');
	line("   %-44s %-28s %-28s %7.2f", 'ns per nextflake(), one backend', range('sb_per_id', 'sync', 1),
		range('sb_per_id', 'none', 1), median('sb_per_id', 'sync') / median('sb_per_id', 'none'));
	line("   %-44s %-28s %-28s %7.2f", 'pgbench 1-row inserts, 1 client, tps', range('sb_inserts', 'sync', 0),
		range('sb_inserts', 'none', 0), median('sb_inserts', 'sync') / median('sb_inserts', 'none'));
	line("   idle for %s s after one call: the lease worker's CPU time in ticks of 1/%s s, and its wake-ups",
		$meta{idle_s}, $meta{clk_tck});
	line("   %-44s %-28s %-28s", 'CPU ticks', median('sb_idle_ticks', 'sync'), median('sb_idle_ticks', 'none'));
	line("   %-44s %-28s %-28s", 'wake-ups', median('sb_idle_wakeups', 'sync'),
		median('sb_idle_wakeups', 'none'));
	line("");
	my $x = median('sb_per_id', 'sync') / median('sb_per_id', 'none');
	target("cost per ID with a synchronous standby <= 1.1 x without", sprintf("%.2f x", $x),
		$x <= 1.1 ? 'met' : 'not met');
	my ($t_sync, $t_none) = (median('sb_idle_ticks', 'sync'), median('sb_idle_ticks', 'none'));
	target("idle lease worker's CPU with the standby <= 2 x without + 3 ticks", "$t_sync vs $t_none ticks",
		$t_sync <= 2 * $t_none + 3 ? 'met' : 'not met');
}

#
# the targets
#
if ($parts{single} && exists $val{per_id}{flake})
{
	my $x = median('per_id', 'flake') / median('per_id', 'clock');
	target("1 client: burst nextflake() <= 1.1 x clock_timestamp()", sprintf("%.2f x", $x),
		$x <= 1.1 ? 'met' : 'not met');
}
if (@targets)
{
	line("Targets of the performance issues, in this run:");
	push @out, @targets;
}

print "$_\n" for @out;
