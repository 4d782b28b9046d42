# Citus beside flakeid, for test/t/060_citus.pl and bench/citus: Citus
# built from a source tarball (cached, keyed by the tarball's SHA-256 and
# the PostgreSQL version) and installed into the tests' private PostgreSQL
# installation, and a cluster of a coordinator and workers on 127.0.0.1.
#
# The environment (test/run and bench/citus set it up):
#   FLAKE_CITUS_TARBALL  the Citus source tarball; none, or a missing file,
#                        and citus_tarball() says what is needed
#   FLAKE_CITUS_CACHE    where builds are kept (default
#                        /var/cache/flakeid-citus where writable, else
#                        ~/.cache/flakeid-citus)
#   PG_CONFIG            the pg_config of the PostgreSQL to build against
#                        (its headers); the private installation is the one
#                        whose pg_config comes first in PATH

package FlakeCitus;

use strict;
use warnings;

use Digest::SHA;
use Exporter 'import';
use Fcntl ':flock';
use File::Path qw(make_path remove_tree);
use FlakeTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

our @EXPORT = qw(citus_tarball citus_install citus_node citus_cluster
  citus_add_worker);

# Settings of every server of a cluster.  Citus reaches the other nodes
# over TCP without SSL; logical replication moves shards; a few shards per
# table keep two CPUs' work small; Citus sends no usage statistics.
use constant CITUS_CONF => q{
listen_addresses = '127.0.0.1'
citus.node_conninfo = 'sslmode=disable'
citus.enable_statistics_collection = off
citus.shard_count = 4
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
max_worker_processes = 20
max_connections = 80
shared_buffers = 32MB
};

# The Citus source tarball to use, or undef and the reason there is none.
sub citus_tarball
{
	my $tarball = $ENV{FLAKE_CITUS_TARBALL};
	return (undef,
		'no Citus release is known to support this PostgreSQL version: '
		  . 'set FLAKE_CITUS_TARBALL to the source tarball of one that does')
	  unless defined $tarball && $tarball ne '';
	return (undef,
		"no Citus source tarball at $tarball: put one there or set "
		  . 'FLAKE_CITUS_TARBALL (../shared/vendor holds citus-13.2.2.tar.gz '
		  . 'for PostgreSQL 15-17 and citus-14.0.1.tar.gz for 16-18)')
	  unless -f $tarball;
	return ($tarball, undef);
}

# The directory that keeps builds.
sub cache_dir
{
	return $ENV{FLAKE_CITUS_CACHE} if $ENV{FLAKE_CITUS_CACHE};
	my $system = '/var/cache/flakeid-citus';
	return $system if -d $system && -w $system;
	return ($ENV{XDG_CACHE_HOME} // "$ENV{HOME}/.cache") . '/flakeid-citus';
}

# What pg_config says of an option.
sub pg_config
{
	my ($pg_config, $option) = @_;
	my $value = `$pg_config $option`;
	die "$pg_config $option failed" if $? != 0;
	chomp $value;
	return $value;
}

# Run a command of the build, its output appended to $log; dies with the
# log's end when it fails.
sub build_step
{
	my ($log, $dir, @cmd) = @_;
	my $rc = system('sh', '-c', 'cd "$1" && shift && exec "$@" >>"$0" 2>&1',
		$log, $dir, @cmd);
	return if $rc == 0;
	my $tail = `tail -n 30 "$log"`;
	die "Citus build step failed: @cmd\n$tail";
}

# Citus 13.2.2 defines a static have_createdb_privilege() for PostgreSQL 15
# that 15.20 exports itself: where the server's headers declare it, leave
# Citus's copy out and use theirs.
sub leave_out_createdb_copy
{
	my ($src, $pg_config) = @_;
	my $compat = "$src/src/include/pg_version_compat.h";
	my $server = pg_config($pg_config, '--includedir-server')
	  . '/commands/dbcommands.h';
	return 0 unless -f $compat && -f $server;
	return 0 unless slurp_file($server) =~ /extern bool have_createdb_privilege\(/;
	my $text = slurp_file($compat);
	$text =~ s/static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n/#include "commands\/dbcommands.h"\n/s
	  or return 0;
	open my $fh, '>', $compat or die "cannot write $compat: $!";
	print $fh $text;
	close $fh;
	return 1;
}

# Build Citus from $tarball against $pg_config and install it under $stage
# (a DESTDIR tree), in a scratch directory next to it.
sub build_citus
{
	my ($tarball, $pg_config, $stage, $log) = @_;
	my $scratch = "$stage.build";

	# Citus is built with its own warning flags: the ones CI gives flakeid
	# (PG_CFLAGS=-Werror ...) would stop it on any warning of its own.
	local %ENV = %ENV;
	delete @ENV{qw(PG_CFLAGS PG_CPPFLAGS PG_LDFLAGS COPT PROFILE)};
	remove_tree($scratch, $stage);
	make_path($scratch);
	build_step($log, $scratch, 'tar', '-xzf', $tarball);
	my ($src) = grep { -x "$_/configure" } glob("$scratch/*");
	die "no configure script in $tarball" unless defined $src;
	note('Citus build: left out its copy of have_createdb_privilege()')
	  if leave_out_createdb_copy($src, $pg_config);
	build_step($log, $src, 'nice', '-n', '19', './configure',
		"PG_CONFIG=$pg_config");
	build_step($log, $src, 'nice', '-n', '19', 'make', '-j2', 'with_llvm=no');
	build_step($log, $src, 'make', 'install', 'with_llvm=no',
		"DESTDIR=$stage");
	remove_tree($scratch);
	return;
}

# Build Citus (or take the cached build) and install it into the private
# PostgreSQL installation.  Returns the cache entry's directory.
sub citus_install
{
	my ($tarball) = citus_tarball();
	die 'no Citus tarball' unless defined $tarball;
	my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
	my ($pg_version) = pg_config($pg_config, '--version') =~ /(\d+(?:\.\d+)*)/;
	my $sha = Digest::SHA->new(256)->addfile($tarball)->hexdigest;
	my $cache = cache_dir();
	my $entry = "$cache/" . substr($sha, 0, 16) . "-pg$pg_version";

	make_path($cache);
	open my $lock, '>', "$cache/.lock" or die "cannot open $cache/.lock: $!";
	flock($lock, LOCK_EX) or die "cannot lock $cache/.lock: $!";
	if (-e "$entry/.built")
	{
		note("Citus from the cache: $entry");
	}
	else
	{
		my $start = time;
		my $log = "$entry.log";
		unlink $log;
		note("building Citus from $tarball into $entry (log: $log)");
		build_citus($tarball, $pg_config, "$entry/stage", $log);
		append_to_file("$entry/.built", "$tarball\n$sha\n");
		note(sprintf('Citus built in %.0f s', time - $start));
	}
	close $lock;

	# The staged tree has the system's paths; the private installation
	# has the same ones under its own root.
	my $private = 'pg_config';
	foreach my $dir (qw(--pkglibdir --sharedir))
	{
		my $from = "$entry/stage" . pg_config($pg_config, $dir);
		my $to   = pg_config($private, $dir);
		die "the pg_config in PATH is the system's, not a private installation"
		  if $to eq pg_config($pg_config, $dir);
		system('cp', '-a', "$from/.", "$to/") == 0
		  or die "cannot copy $from to $to";
	}
	return $entry;
}

# A Citus server, initialised but not started: Citus and flakeid preloaded
# with node id $opts{node_id}, or Citus alone with preload => 0.
sub citus_node
{
	my ($name, %opts) = @_;
	my $preload = $opts{preload} // 1;
	return flake_node(
		$name,
		preload => $preload,
		node_id => $opts{node_id},
		conf    => CITUS_CONF
		  . "shared_preload_libraries = '"
		  . ($preload ? 'citus,flakeid' : 'citus') . "'\n"
		  . ($opts{conf} // ''));
}

# Add a started Citus server to the cluster of $coordinator as a worker.
sub citus_add_worker
{
	my ($coordinator, $worker) = @_;
	$worker->safe_psql('postgres', 'CREATE EXTENSION citus');
	$coordinator->safe_psql('postgres',
		"SELECT citus_add_node('127.0.0.1', " . $worker->port . ')');
	return;
}

# A coordinator and workers (their names in @names, the first the
# coordinator's), started, with node ids 1, 2, ... (or $opts{node_ids}),
# metadata synced to the workers and flakeid created on the coordinator
# (Citus creates it on the workers).  Returns the nodes, coordinator first.
sub citus_cluster
{
	my ($names, %opts) = @_;
	my @ids = @{ $opts{node_ids} // [ 1 .. scalar @$names ] };
	my @nodes;

	foreach my $i (0 .. $#$names)
	{
		my $node = citus_node($names->[$i],
			node_id => $ids[$i], conf => $opts{conf});
		$node->start;
		push @nodes, $node;
	}
	my ($coordinator, @workers) = @nodes;
	$coordinator->safe_psql(
		'postgres', q{CREATE EXTENSION citus;
		SELECT citus_set_coordinator_host('127.0.0.1', } . $coordinator->port . ')');
	citus_add_worker($coordinator, $_) foreach @workers;
	$coordinator->safe_psql('postgres', 'CREATE EXTENSION flakeid');
	return @nodes;
}

1;
