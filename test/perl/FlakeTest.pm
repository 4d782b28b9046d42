# Helpers shared by flakeid's TAP tests: a node with flakeid preloaded, and
# assertions on the SQLSTATE of failing statements.

package FlakeTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(flake_node psql_as fails_with start_fails settings_locked);

# A new, initialised but not started node.  Options:
#   preload   => 0 to leave flakeid out of shared_preload_libraries
#   node_id   => the flakeid.node_id to write into postgresql.conf
#   conf      => more postgresql.conf lines
#   streaming => 1 for a primary that standbys can be made from
sub flake_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init(allows_streaming => $opts{streaming} ? 1 : 0);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'flakeid'")
	  unless defined $opts{preload} && !$opts{preload};
	$node->append_conf('postgresql.conf', "flakeid.node_id = $opts{node_id}")
	  if defined $opts{node_id};
	$node->append_conf('postgresql.conf', $opts{conf}) if defined $opts{conf};
	return $node;
}

# Run SQL with verbose error messages (they carry the SQLSTATE), as the
# bootstrap superuser or as the role given by user =>, in database db =>
# (default postgres).  Returns (exit code, stdout, stderr).
sub psql_as
{
	my ($node, $sql, %opts) = @_;
	my $db = $opts{db} // 'postgres';
	my $connstr = $node->connstr($db);
	$connstr .= " user=$opts{user}" if defined $opts{user};

	my ($ret, $out, $err) = $node->psql(
		$db, $sql,
		connstr      => $connstr,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($ret, $out, $err);
}

# Assert that SQL fails with an ERROR of the given SQLSTATE (or of one of
# several, as in "55P02|42501"); returns the error text (with DETAIL and
# HINT lines) for further checks.
sub fails_with
{
	my ($node, $sql, $sqlstate, $test_name, %opts) = @_;
	my ($ret, $out, $err) = psql_as($node, $sql, %opts);

	ok($ret != 0 && $err =~ /\b(?:ERROR|FATAL):  (?:$sqlstate):/,
		"$test_name: fails with SQLSTATE $sqlstate")
	  or diag("exit code $ret\nstdout: $out\nstderr: $err");
	return $err;
}

# Assert that the node refuses to start and that its log, from this start
# on, matches every pattern given.  A node that starts all the same is
# stopped again, so that the test can go on.
sub start_fails
{
	my ($node, $test_name, @patterns) = @_;
	my $offset = -s $node->logfile // 0;

	my $started = $node->start(fail_ok => 1);
	ok(!$started, "$test_name: server refuses to start");
	$node->stop if $started;
	my $log = slurp_file($node->logfile, $offset);
	like($log, $_, "$test_name: log says why") foreach @patterns;
	return;
}

# Assert that role $user, connected to database $db (which it may own),
# cannot give parameter $guc the value $value by any means a session has:
# SET, SET LOCAL, set_config(), ALTER ROLE ... SET, ALTER DATABASE ... SET,
# a function's SET clause, ALTER SYSTEM and the connection's options.  The
# setting, as new sessions see it, must stay unchanged.
sub settings_locked
{
	my ($node, $user, $db, $guc, $value) = @_;
	my $before = $node->safe_psql($db, "SHOW $guc");
	my $who = "$user may not set $guc";
	my %as = (user => $user, db => $db);

	fails_with($node, "SET $guc = '$value'", '55P02|42501',
		"$who: SET", %as);
	fails_with($node, "BEGIN; SET LOCAL $guc = '$value'",
		'55P02|42501', "$who: SET LOCAL", %as);
	fails_with($node, "SELECT set_config('$guc', '$value', false)",
		'55P02|42501', "$who: set_config()", %as);
	fails_with($node, "ALTER ROLE CURRENT_USER SET $guc = '$value'",
		'55P02|42501', "$who: ALTER ROLE SET", %as);
	fails_with($node, "ALTER DATABASE \"$db\" SET $guc = '$value'",
		'55P02|42501', "$who: ALTER DATABASE SET", %as);
	fails_with(
		$node,
		"CREATE FUNCTION pg_temp.sneaky() RETURNS text LANGUAGE sql "
		  . "SET $guc = '$value' AS \$\$SELECT current_setting('$guc')\$\$",
		'55P02|42501',
		"$who: function SET clause",
		%as);
	fails_with($node, "ALTER SYSTEM SET $guc = '$value'",
		'42501', "$who: ALTER SYSTEM", %as);

	# a connection's startup options: refused, or at least without effect
	{
		local $ENV{PGOPTIONS} = "-c $guc=$value";
		my ($ret, $out, $err) = psql_as($node, "SHOW $guc", %as);
		ok($ret != 0 || $out eq $before,
			"$who: connection option leaves it unchanged")
		  or diag("stdout: $out\nstderr: $err");
	}

	my (undef, $after) = psql_as($node, "SHOW $guc", %as);
	is($after, $before, "$who: still $before");
	return;
}

1;
