/*-------------------------------------------------------------------------
 *
 * decode.c
 *	  Taking an ID apart (the decode functions), and the smallest ID of a
 *	  moment (flakeid_from_timestamp()).
 *
 * These functions depend only on an ID and the server's layout: the one
 * the generator records (see FlakeDecodeLayout()), or the settings where
 * there is no generator.  They work without preloading and on standbys.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "compat.h"
#include "guc.h"
#include "layout.h"
#include "shmem.h"
#include "uuid.h"
#include "worker.h"

PG_FUNCTION_INFO_V1(flakeid_timestamp);
PG_FUNCTION_INFO_V1(flakeid_node);
PG_FUNCTION_INFO_V1(flakeid_sequence);
PG_FUNCTION_INFO_V1(flakeid_decode);
PG_FUNCTION_INFO_V1(flakeid_from_timestamp);
PG_FUNCTION_INFO_V1(flakeid_to_uuid);
PG_FUNCTION_INFO_V1(flakeid_from_uuid);

/*
 * The layout that decoding uses: the generator's, which is the one its
 * IDs were made with (recorded in the state file) until a new one is
 * accepted; where there is no generator, the settings'.
 */
static const FlakeLayout *
FlakeDecodeLayout(void)
{
	static FlakeLayout layout;
	static uint32 layout_word = 0;
	FlakeShared *s = FlakeAttach();
	const char *bad = NULL;
	uint32		word;

	if (s == NULL)
	{
		if (!FlakeConfiguredLayout(&layout, &bad))
			FlakeReportInvalidLayout(bad);
		return &layout;
	}
	word = pg_atomic_read_u32(&s->word);
	if (unlikely(word != layout_word))
	{
		if (FlakeWordStatus(word) == FLAKE_GEN_NOT_SET_UP)
			FlakeEnsureSetUp(s);
		word = FlakeSnapshot(s, &layout);
		if (FlakeWordStatus(word) == FLAKE_GEN_LAYOUT_INVALID)
		{
			(void) FlakeConfiguredLayout(&layout, &bad);
			layout_word = 0;
			FlakeReportInvalidLayout(bad);
		}
		layout_word = word;
	}
	return &layout;
}

Datum
flakeid_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(FlakeTimestamp(FlakeDecodeLayout(),
										 FlakeMs(PG_GETARG_INT64(0))));
}

Datum
flakeid_node(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(FlakeNode(FlakeDecodeLayout(), PG_GETARG_INT64(0)));
}

Datum
flakeid_sequence(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(FlakeSeq(FlakeDecodeLayout(), PG_GETARG_INT64(0)));
}

/* All three parts as one row (ts, node, sequence). */
Datum
flakeid_decode(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	const FlakeLayout *layout = FlakeDecodeLayout();
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	values[0] = TimestampTzGetDatum(FlakeTimestamp(layout, FlakeMs(id)));
	values[1] = Int32GetDatum(FlakeNode(layout, id));
	values[2] = Int32GetDatum(FlakeSeq(layout, id));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

static void
ReportTimestampRange(const FlakeLayout *layout)
{
	char	   *first = pstrdup(timestamptz_to_str(FlakeTimestamp(layout, 0)));
	char	   *last = pstrdup(timestamptz_to_str(FlakeTimestamp(layout, FLAKE_MAX_MS)));

	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of range for type %s", "flakeid"),
			 errdetail("flakeid timestamps run from %s to %s.",
					   first, last)));
}

/*
 * The smallest ID of the millisecond that holds a moment: node 0, sequence
 * 0.  Every ID made at or after the moment is >= it.
 */
Datum
flakeid_from_timestamp(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	const FlakeLayout *layout = FlakeDecodeLayout();
	int64		ms;

	if (TIMESTAMP_NOT_FINITE(ts))
		ReportTimestampRange(layout);
	ms = FlakeMsOfTimestamp(layout, ts);
	if (ms < 0 || ms > FLAKE_MAX_MS)
		ReportTimestampRange(layout);

	PG_RETURN_INT64(FlakeFirstIdOfMs(ms));
}

/* The ID as a version-7 UUID under this server's layout (uuid.h). */
Datum
flakeid_to_uuid(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *uuid = palloc(sizeof(pg_uuid_t));

	StaticAssertStmt(sizeof(uuid->data) == FLAKE_UUID_LEN, "a UUID is 16 bytes");
	FlakeUuidEncode(FlakeDecodeLayout(), PG_GETARG_INT64(0), uuid->data);
	PG_RETURN_UUID_P(uuid);
}

/*
 * The ID that flakeid_to_uuid() made a UUID of, under this server's
 * layout.  Any other UUID is an error (saved, where the caller passed an
 * error-saving context), never a value.
 */
Datum
flakeid_from_uuid(PG_FUNCTION_ARGS)
{
	pg_uuid_t  *uuid = PG_GETARG_UUID_P(0);
	const FlakeLayout *layout = FlakeDecodeLayout();
	int64		id = 0;
	FlakeUuidProblem problem = FlakeUuidDecode(layout, uuid->data, &id);
	char	   *text;
	char	   *first;

	if (likely(problem == FLAKE_UUID_OK))
		PG_RETURN_INT64(id);

	text = DatumGetCString(DirectFunctionCall1(uuid_out, UUIDPGetDatum(uuid)));
	if (problem == FLAKE_UUID_NOT_V7)
		ereturn(fcinfo->context, (Datum) 0,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("UUID \"%s\" was not made by flakeid_to_uuid()", text),
				 (uuid->data[8] & 0xc0) != 0x80 ?
				 errdetail("It is not of the RFC 9562 variant, which flakeid_to_uuid() makes.") :
				 errdetail("It is a version %d UUID; flakeid_to_uuid() makes version 7 UUIDs.",
						   uuid->data[6] >> 4),
				 errhint("Only UUIDs that flakeid_to_uuid() made can be turned back into flakeids.")));
	first = pstrdup(timestamptz_to_str(FlakeTimestamp(layout, 0)));
	if (problem == FLAKE_UUID_OUT_OF_RANGE)
		ereturn(fcinfo->context, (Datum) 0,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("UUID \"%s\" was not made by flakeid_to_uuid()", text),
				 errdetail("Its time lies outside the range of this server's flakeids, %s to %s.",
						   first, timestamptz_to_str(FlakeTimestamp(layout, FLAKE_MAX_MS))),
				 errhint("Only UUIDs that flakeid_to_uuid() made on a server with the same flakeid.epoch can be turned back into flakeids.")));
	ereturn(fcinfo->context, (Datum) 0,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("UUID \"%s\" was not made by flakeid_to_uuid()", text),
			 errdetail("Its last 52 bits do not match the ID it would hold under this server's layout (flakeid.epoch %s, flakeid.node_bits %d).",
					   first, layout->node_bits),
			 errhint("Only UUIDs that flakeid_to_uuid() made on a server with the same flakeid.epoch and flakeid.node_bits can be turned back into flakeids.")));
}
