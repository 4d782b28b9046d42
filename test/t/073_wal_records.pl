# A standby that replays a flakeid WAL record it cannot read stops with a
# PANIC that names the record, as PostgreSQL's own resource managers do,
# instead of taking it for a lease: a record of another type (a later
# version's), one of a length that no version writes, and a lease record
# whose contents are out of range.  The records are written on the
# primary by a small C function built here, one per fresh standby.  And
# pg_walinspect describes a lease record, and only a lease record as one.

use strict;
use warnings;

use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = flake_node('primary', node_id => 4, streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION flakeid');

# emit_flake_record(info, length, node_bits): a record of flakeid's
# resource manager (167) with that info byte, of the first length bytes
# of a lease (src/record.h) of node 4, 1000 ms past the epoch, with those
# node_bits.  PostgreSQL's server headers and flakeid's own, for the
# lease, come from the trees the tests build against.
my $includes = `'@{[ $ENV{PG_CONFIG} // 'pg_config' ]}' --includedir-server`;
chomp $includes;
my $so = build_shim('emit_record', <<'EOC', '-isystem', $includes, "-I$ENV{FLAKE_SRC}/src");
#include "postgres.h"

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "fmgr.h"
#include "utils/pg_lsn.h"

#include "record.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(emit_flake_record);

Datum
emit_flake_record(PG_FUNCTION_ARGS)
{
	FlakeLease	lease;
	int32		len = PG_GETARG_INT32(1);
	XLogRecPtr	lsn;

	if (len < 0 || len > (int32) sizeof(lease))
		elog(ERROR, "length out of range");
	memset(&lease, 0, sizeof(lease));
	lease.epoch_ms = INT64CONST(1577836800000);
	lease.node_bits = PG_GETARG_INT32(2);
	lease.node_id = 4;
	lease.lease_end = 1000;
	lease.timeline = 1;
	XLogBeginInsert();
	XLogRegisterData((char *) &lease, len);
	lsn = XLogInsert(167, (uint8) PG_GETARG_INT32(0));
	XLogFlush(lsn);
	PG_RETURN_LSN(lsn);
}
EOC
$primary->safe_psql('postgres',
	"CREATE FUNCTION emit_flake_record(int, int, int) RETURNS pg_lsn
	 AS '$so', 'emit_flake_record' LANGUAGE C STRICT");

# pg_walinspect shows a lease record by its type and contents, and one of
# another type as unknown, without reading it as a lease.  (Renewals the
# lease worker writes meanwhile are left out by their lease end.)
$primary->safe_psql('postgres', 'CREATE EXTENSION pg_walinspect');
my $start = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
$primary->safe_psql('postgres',
	'SELECT emit_flake_record(0, 32, 10); SELECT emit_flake_record(16, 32, 10);');
is( $primary->safe_psql(
		'postgres', qq{
SELECT string_agg(record_type || ': ' || coalesce(description, ''), ' / ' ORDER BY start_lsn)
FROM pg_get_wal_records_info('$start', pg_current_wal_flush_lsn())
WHERE resource_manager = 'flakeid'
	AND (record_type <> 'LEASE' OR description LIKE 'lease end 1000 ms;%')}),
	'LEASE: lease end 1000 ms; epoch 1577836800000 ms; node_bits 10; node 4; timeline 1 / UNKNOWN (10): ',
	'pg_walinspect names a lease record and its contents, and shows another type as unknown');

foreach my $case (
	[ 'a record of another type', 0x10, 32, 10, qr/flakeid_redo: unknown record \(info 16, 32 bytes\)/ ],
	[ 'a lease record of a length no version writes', 0, 12, 10,
		qr/flakeid_redo: unknown record \(info 0, 12 bytes\)/ ],
	[ 'a lease record out of range', 0, 32, 99, qr/flakeid_redo: lease record out of range/ ])
{
	my ($what, $info, $len, $node_bits, $panic) = @$case;
	# a backup taken after the records of the cases before
	my $name = "standby_$info\_$len\_$node_bits";
	$primary->backup($name);
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, $name, has_streaming => 1);
	$standby->start;
	catch_up($primary, $standby);
	my $offset = -s $standby->logfile;
	$primary->safe_psql('postgres', "SELECT emit_flake_record($info, $len, $node_bits)");
	ok(wait_until(sub { $standby->log_contains($panic, $offset) }, 60),
		"$what: the standby stops with a PANIC that names it")
	  or diag(slurp_file($standby->logfile, $offset));
	ok(wait_until(sub { $standby->psql('postgres', 'SELECT 1') != 0 }, 60),
		"$what: the standby is down, not replaying past it");
	$standby->stop('immediate', fail_ok => 1);
}

# The primary, which wrote these records and replays none, still
# generates.
is($primary->safe_psql('postgres', 'SELECT count(DISTINCT id) FROM nextflakes(100) id'),
	'100', 'the primary generates');
$primary->stop;
done_testing();
