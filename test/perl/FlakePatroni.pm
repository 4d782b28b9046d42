# Patroni beside flakeid, for test/t/061_patroni.pl: a one-member etcd, a
# Patroni cluster on 127.0.0.1 whose members run the tests' private
# PostgreSQL installation with flakeid preloaded, clients that record
# every ID a statement returned, and a plain server that keeps the record.
#
# Patroni and etcd are Debian's packages (patroni, etcd-server); Patroni
# talks to etcd through its v3 API (the etcd3 DCS), which etcd serves by
# default in every release Debian carries.  Every daemon runs under
# timeout(1), every command the helpers run has a timeout, and
# patroni_teardown() stops whatever is left.

package FlakePatroni;

use strict;
use warnings;

use DBI;
use Exporter 'import';
use File::Spec;
use FlakeTest;
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(patroni_missing etcd_start patroni_cluster patroni_teardown
  patroni_state patroni_leader wait_healthy patronictl patronictl_start
  postmaster_pid clients_start clients_await clients_stop clients_max
  recorder_start recorder_load recorder_reissued_sql);

# The longest a daemon (etcd, Patroni) may live: five times the harness's
# timeout for one command, far more than the whole test takes.
sub daemon_limit { return 5 * $PostgreSQL::Test::Utils::timeout_default }

# Everything started, for patroni_teardown().
my ($etcd, @patroni, @members, @client_pids);

# Whether a command is in PATH.
sub in_path
{
	my ($cmd) = @_;
	return scalar grep { -x "$_/$cmd" } File::Spec->path;
}

# Undef when Patroni and etcd are installed; the reason to skip when this
# Debian release does not package them (test/run passes the packages it
# lacks in FLAKE_UNPACKAGED).  Anything else missing ends the test run.
sub patroni_missing
{
	my %unpackaged = map { $_ => 1 } split ' ', $ENV{FLAKE_UNPACKAGED} // '';
	my @lacking = grep { $unpackaged{$_} } qw(patroni python3-etcd etcd-server);
	if (@lacking)
	{
		my ($major) = `pg_config --version` =~ /(\d+)/;
		return 'this Debian release does not package ' . join(' and ', @lacking)
		  . ' beside PostgreSQL ' . ($major // '?');
	}
	foreach my $need ([ patroni => 'patroni' ], [ patronictl => 'patroni' ],
		[ etcd => 'etcd-server' ])
	{
		my ($cmd, $package) = @$need;
		BAIL_OUT("$cmd is not installed: install the package $package "
			  . '(test/run does, as root)')
		  unless in_path($cmd);
	}
	return undef;
}

# GET a URL; the decoded JSON, or undef when there is no good answer.
sub http_json
{
	my ($url) = @_;
	my $res = HTTP::Tiny->new(timeout => 5)->get($url);
	return undef unless $res->{success};
	return eval { decode_json($res->{content}) };
}

# Start a daemon under timeout(1), its output appended to $log.
sub start_daemon
{
	my ($log, @cmd) = @_;
	return IPC::Run::start([ 'timeout', '-k', '10', daemon_limit(), @cmd ],
		'<', '/dev/null', '>>', $log, '2>&1');
}

# A one-member etcd on 127.0.0.1; returns its client port once it is
# healthy.
sub etcd_start
{
	my $dir = PostgreSQL::Test::Utils::tempdir('etcd');
	my ($client, $peer) = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 2;
	my $log = "$PostgreSQL::Test::Utils::log_path/061_etcd.log";
	$etcd = start_daemon(
		$log, 'etcd',
		'--name'                        => 'flake',
		'--data-dir'                    => "$dir/data",
		'--listen-client-urls'          => "http://127.0.0.1:$client",
		'--advertise-client-urls'       => "http://127.0.0.1:$client",
		'--listen-peer-urls'            => "http://127.0.0.1:$peer",
		'--initial-advertise-peer-urls' => "http://127.0.0.1:$peer",
		'--initial-cluster'             => "flake=http://127.0.0.1:$peer",
		'--initial-cluster-state'       => 'new',
		'--initial-cluster-token'       => "flake-$$");
	my $health = wait_until(
		sub {
			my $h = http_json("http://127.0.0.1:$client/health");
			$h && ($h->{health} // '') eq 'true';
		},
		30);
	die "etcd did not become healthy; see $log\n" unless $health;
	return $client;
}

# A Patroni cluster of members named @$names, each a PostgreSQL::Test::Cluster
# node (for its port, socket directory, data directory and log) that Patroni
# initialises and runs.  Options:
#   etcd    => etcd's client port
#   dcs     => the DCS settings of bootstrap.dcs (a hash ref)
#   bin_dir => the PostgreSQL programs to run
# Returns the members, hashes of name, node, rest (the REST API's port) and
# config (Patroni's configuration file), once one of them leads.
sub patroni_cluster
{
	my (%opts) = @_;
	my $user = getpwuid($<);
	foreach my $name (@{ $opts{names} })
	{
		my $node = PostgreSQL::Test::Cluster->new($name);
		my $rest = PostgreSQL::Test::Cluster::get_free_port();
		my $dir  = $node->basedir;
		my $config = {
			scope     => 'flake',
			namespace => '/flakeid/',
			name      => $name,
			restapi   => {
				listen          => "127.0.0.1:$rest",
				connect_address => "127.0.0.1:$rest"
			},
			etcd3     => { hosts => ["127.0.0.1:$opts{etcd}"] },
			bootstrap => {
				dcs    => $opts{dcs},
				initdb => [ { encoding => 'UTF8' }, 'no-sync' ],
			},
			postgresql => {
				listen          => '127.0.0.1:' . $node->port,
				connect_address => '127.0.0.1:' . $node->port,
				data_dir        => $node->data_dir,
				bin_dir         => $opts{bin_dir},
				pgpass          => "$dir/pgpass",
				authentication  => {
					superuser   => { username => $user, password => 'flake' },
					replication =>
					  { username => 'replicator', password => 'flake' },
				},
				parameters => { unix_socket_directories => $node->host },
				pg_hba     => [
					'local all all trust',
					'host all all 127.0.0.1/32 trust',
					'host replication all 127.0.0.1/32 trust'
				],
			},
			watchdog => { mode => 'off' },
		};
		my $file = "$dir/patroni.yml";
		# JSON is YAML
		PostgreSQL::Test::Utils::append_to_file($file,
			JSON::PP->new->canonical->pretty->encode($config));
		my $member = { name => $name, node => $node, rest => $rest, config => $file };
		push @members, $member;
		push @patroni, start_daemon($node->logfile, 'patroni', $file);
	}
	wait_until(sub { patroni_leader(\@members) }, 120)
	  or die "no Patroni member leads\n" . logs_tail();
	return @members;
}

# The last lines of the members' logs (Patroni's and PostgreSQL's), for
# a failure's message.
sub logs_tail
{
	my $text = '';
	foreach my $m (@members)
	{
		my @lines = split /\n/, PostgreSQL::Test::Utils::slurp_file($m->{node}->logfile);
		splice @lines, 0, -15 if @lines > 15;
		$text .= "--- $m->{name}: " . $m->{node}->logfile . "\n" . join("\n", @lines) . "\n";
	}
	return $text;
}

# The cluster as Patroni's REST API shows it (GET /cluster), from the first
# member that answers.
sub patroni_state
{
	my ($members) = @_;
	foreach my $m (@$members)
	{
		my $state = http_json("http://127.0.0.1:$m->{rest}/cluster");
		return $state if $state && $state->{members};
	}
	return undef;
}

# The member that leads with PostgreSQL running, or undef.
sub patroni_leader
{
	my ($members, $state) = @_;
	$state //= patroni_state($members) or return undef;
	foreach my $s (@{ $state->{members} })
	{
		next unless $s->{role} eq 'leader' && ($s->{state} // '') eq 'running';
		my ($m) = grep { $_->{name} eq $s->{name} } @$members;
		return $m;
	}
	return undef;
}

# Wait until every member runs, the leader streams to both others and, with
# $sync, one of them is its synchronous standby (and none without).
# Returns the leader and the synchronous standby (undef without).
sub wait_healthy
{
	my ($members, $sync, $timeout) = @_;
	my @found;
	my $healthy = wait_until(
		sub {
			my $state = patroni_state($members) or return 0;
			my @s = @{ $state->{members} };
			return 0 unless @s == @$members;
			return 0 if grep { ($_->{state} // '') !~ /^(?:running|streaming)$/ } @s;
			my $leader = patroni_leader($members, $state) or return 0;
			my @standby = grep { $_->{role} eq 'sync_standby' } @s;
			return 0 unless @standby == ($sync ? 1 : 0);
			my ($ret, $out) = $leader->{node}->psql(
				'postgres', q{
SELECT count(*) FILTER (WHERE state = 'streaming') || '|'
	|| count(*) FILTER (WHERE sync_state = 'sync') || '|'
	|| (current_setting('synchronous_standby_names') <> '')
FROM pg_stat_replication}, timeout => 10, timed_out => \my $timed_out);
			return 0
			  unless defined $ret
			  && $ret == 0
			  && $out eq (@$members - 1) . '|' . ($sync ? '1|true' : '0|false');
			my $standby;
			($standby) = grep { $_->{name} eq $standby[0]{name} } @$members if $sync;
			@found = ($leader, $standby);
			return 1;
		},
		$timeout // 120,
		0.5);
	die 'the Patroni cluster did not become healthy ('
	  . ($sync ? 'synchronous' : 'asynchronous') . ")\n" . logs_tail()
	  unless $healthy;
	return @found;
}

# Start patronictl with a member's configuration; returns a function that
# waits for it to end and returns its output, or dies when it failed.
sub patronictl_start
{
	my ($member, @args) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'patronictl', '-c', $member->{config}, @args ],
		'<', '/dev/null', '>', \$out, '2>', \$err, run_timeout(120));
	return sub {
		my $ok = eval { $h->finish };
		die "patronictl @args failed:\n$out$err" unless $ok;
		return $out;
	};
}

# Run patronictl with a member's configuration; dies when it fails.
sub patronictl
{
	return patronictl_start(@_)->();
}

# The pid of a member's postmaster.
sub postmaster_pid
{
	my ($member) = @_;
	my $file = $member->{node}->data_dir . '/postmaster.pid';
	my ($pid) = split /\n/, PostgreSQL::Test::Utils::slurp_file($file);
	return $pid;
}

# Stop what is left: clients, Patroni (which stops its PostgreSQL), then
# any PostgreSQL still running, then etcd.  Called from an END block, it
# keeps the test's exit status, which waiting for the processes would
# overwrite.
sub patroni_teardown
{
	local $?;
	kill 'KILL', @client_pids if @client_pids;
	waitpid($_, 0) foreach @client_pids;
	@client_pids = ();
	foreach my $h (@patroni)
	{
		eval { $h->signal('TERM') };
	}
	foreach my $h (@patroni)
	{
		eval { $h->finish };
	}
	foreach my $m (@members)
	{
		my $pidfile = $m->{node}->data_dir . '/postmaster.pid';
		next unless -f $pidfile;
		my ($pid) = split /\n/, PostgreSQL::Test::Utils::slurp_file($pidfile);
		kill 'QUIT', $pid if $pid && kill(0, $pid);
	}
	eval { $etcd->signal('TERM'); $etcd->finish } if $etcd;
	($etcd, @patroni, @members) = ();
	return;
}

# Clients: $opts{count} processes that run SELECT nextflakes(k), k from 1
# to $opts{max_k}, a millisecond apart, against the libpq connection string
# $opts{conninfo} (every member, target_session_attrs=read-write: they
# follow the leader), reconnecting when a connection ends.  Each writes
# every ID a statement returned, as soon as it returned it, to
# $dir/c<client>.<port of the server>: one line "first last" per run of
# consecutive integers.  They stop at the stop file, or at
# $opts{deadline}.
sub clients_start
{
	my (%opts) = @_;
	my @pids;
	foreach my $c (1 .. $opts{count})
	{
		my $pid = fork();
		die "fork: $!" unless defined $pid;
		client_main($c, %opts) if $pid == 0;
		push @pids, $pid;
	}
	push @client_pids, @pids;
	return { %opts, pids => \@pids };
}

# The runs of consecutive integers in a list of IDs, as lines "first last".
sub runs_of
{
	my @lines;
	my ($first, $last);
	foreach my $id (@_)
	{
		if (defined $last && $id == $last + 1)
		{
			$last = $id;
			next;
		}
		push @lines, "$first $last\n" if defined $first;
		($first, $last) = ($id, $id);
	}
	push @lines, "$first $last\n" if defined $first;
	return @lines;
}

# One client; never returns.
sub client_main
{
	my ($c, %opts) = @_;
	my $ok = eval {
		# libpq's notices (a FATAL as a server ends the connection)
		open STDERR, '>>', "$opts{dir}/c$c.err" or die "open: $!";
		srand($opts{seed} + $c);
		my $stop = "$opts{dir}/stop";
		my ($connects, $refused, $failed, $statements) = (0, 0, 0, 0);
		my %out;
		while (!-e $stop && time() < $opts{deadline})
		{
			POSIX::_exit(1) if getppid() == 1;
			my $dbh = DBI->connect("dbi:Pg:$opts{conninfo}", '', '',
				{ AutoCommit => 1, RaiseError => 0, PrintError => 0 });
			unless ($dbh)
			{
				$refused++;
				usleep(50_000);
				next;
			}
			$connects++;
			$dbh->do(q{SET statement_timeout = '5s'});
			my ($port) = $dbh->selectrow_array('SELECT inet_server_port()');
			my $sth = $dbh->prepare('SELECT nextflakes($1::integer)::bigint');
			unless ($port && $sth)
			{
				$dbh->disconnect;
				next;
			}
			unless ($out{$port})
			{
				open $out{$port}, '>>', "$opts{dir}/c$c.$port" or die "open: $!";
			}
			my $fh = $out{$port};
			while (!-e $stop && time() < $opts{deadline})
			{
				my $ids = $dbh->selectcol_arrayref($sth, undef,
					1 + int(rand($opts{max_k})));
				if ($ids)
				{
					$statements++;
					print $fh runs_of(@$ids);
					$fh->flush;
				}
				else
				{
					$failed++;
					last unless $dbh->ping;
				}
				usleep(1000);
			}
			undef $sth;
			$dbh->disconnect;
		}
		close $_ foreach values %out;
		open my $st, '>', "$opts{dir}/c$c.stats" or die "open: $!";
		print $st "$connects $refused $failed $statements\n";
		close $st;
		1;
	};
	# no END block of the harness in a client: they are the parent's
	POSIX::_exit($ok ? 0 : 2);
}

# The largest ID in the files of a round's clients for the server on
# $port, or undef.
sub clients_max
{
	my ($dir, $port) = @_;
	my $max;
	foreach my $file (glob "$dir/c*.$port")
	{
		open my $fh, '<', $file or die "open $file: $!";
		while (my $line = <$fh>)
		{
			my (undef, $last) = split ' ', $line;
			$max = $last if !defined $max || $last > $max;
		}
		close $fh;
	}
	return $max;
}

# Wait until every client returned IDs from the server on $port, in a
# statement that ended after $since (a time); false after $timeout s.
sub clients_await
{
	my ($clients, $port, $since, $timeout) = @_;
	return wait_until(
		sub {
			foreach my $c (1 .. $clients->{count})
			{
				my @st = Time::HiRes::stat("$clients->{dir}/c$c.$port");
				return 0 unless @st && $st[7] > 0 && $st[9] >= ($since // 0);
			}
			return 1;
		},
		$timeout // 60,
		0.1);
}

# Stop the clients; returns how many ended well, and their figures
# (connections, refused connections, failed and returning statements),
# summed.
sub clients_stop
{
	my ($clients) = @_;
	PostgreSQL::Test::Utils::append_to_file("$clients->{dir}/stop", '');
	my $well = 0;
	my $deadline = time() + 30;
	foreach my $pid (@{ $clients->{pids} })
	{
		my $done = 0;
		until ($done || time() > $deadline)
		{
			$done = waitpid($pid, POSIX::WNOHANG()) == $pid;
			usleep(50_000) unless $done;
		}
		unless ($done)
		{
			kill 'KILL', $pid;
			waitpid($pid, 0);
			next;
		}
		$well++ if $? == 0;
	}
	my %pids = map { $_ => 1 } @{ $clients->{pids} };
	@client_pids = grep { !$pids{$_} } @client_pids;
	my @sum = (0, 0, 0, 0);
	foreach my $c (1 .. $clients->{count})
	{
		my $file = "$clients->{dir}/c$c.stats";
		next unless -f $file;
		my @v = split ' ', PostgreSQL::Test::Utils::slurp_file($file);
		$sum[$_] += $v[$_] // 0 foreach 0 .. 3;
	}
	return ($well, @sum);
}

# A plain PostgreSQL server, outside the cluster, that keeps every ID a
# client saw: table returned (round, client, port, first, last), a row per
# run of consecutive IDs.
sub recorder_start
{
	my $recorder = PostgreSQL::Test::Cluster->new('recorder');
	$recorder->init;
	$recorder->append_conf('postgresql.conf', 'log_statement = none');
	$recorder->start;
	$recorder->safe_psql('postgres', q{
CREATE TABLE returned (round int NOT NULL, client int NOT NULL, port int NOT NULL,
	first bigint NOT NULL, last bigint NOT NULL CHECK (last >= first));
CREATE TABLE loading (first bigint NOT NULL, last bigint NOT NULL);
});
	return $recorder;
}

# Load a round's files (c<client>.<port>) into the recorder.  Returns the
# number of IDs loaded.
sub recorder_load
{
	my ($recorder, $round, $dir) = @_;
	my $n = 0;
	foreach my $file (sort glob "$dir/c*")
	{
		next unless $file =~ m{/c(\d+)\.(\d+)$};
		my ($client, $port) = ($1, $2);
		my $path = File::Spec->rel2abs($file);
		$n += $recorder->safe_psql(
			'postgres', qq{
TRUNCATE loading;
COPY loading FROM '$path' (DELIMITER ' ');
INSERT INTO returned SELECT $round, $client, $port, first, last FROM loading;
SELECT coalesce(sum(last - first + 1), 0) FROM loading;
});
	}
	return $n;
}

# SQL: how many more IDs the recorder holds than distinct ones, i.e. how
# many times an ID was returned again.
sub recorder_reissued_sql
{
	return q{
SELECT (SELECT coalesce(sum(last - first + 1), 0) FROM returned)
	- (SELECT coalesce(sum(upper(r) - lower(r)), 0)
	   FROM unnest((SELECT range_agg(int8range(first, last, '[]')) FROM returned)) r)};
}

1;
