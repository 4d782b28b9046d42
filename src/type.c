/*-------------------------------------------------------------------------
 *
 * type.c
 *	  Input, binary receive and casts of the flakeid type.
 *
 * A flakeid is stored as an int8, so output, send, comparison and hashing
 * are core's int8 functions, bound in the install script.  Only the ways in
 * need C: they reject negative values.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "utils/builtins.h"

#include "flakeid.h"

PG_FUNCTION_INFO_V1(flakeid_in);
PG_FUNCTION_INFO_V1(flakeid_recv);
PG_FUNCTION_INFO_V1(flakeid_from_int8);
PG_FUNCTION_INFO_V1(flakeid_from_int4);

static void
ReportOutOfRange(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value \"%s\" is out of range for type %s",
					what, "flakeid"),
			 errdetail("flakeid values are between 0 and %lld.",
					   (long long) PG_INT64_MAX)));
}

/*
 * Parse text with core's int64 parser, so that exactly what bigint accepts
 * is accepted, and report its errors in terms of flakeid.
 */
static int64
ParseFlakeText(const char *str)
{
	MemoryContext context = CurrentMemoryContext;
	volatile int64 value = 0;
	volatile int sqlerrcode = 0;

	PG_TRY();
	{
		value = pg_strtoint64(str);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
		sqlerrcode = edata->sqlerrcode;
		FreeErrorData(edata);
	}
	PG_END_TRY();

	if (sqlerrcode == ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE)
		ReportOutOfRange(str);
	if (sqlerrcode != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"flakeid", str)));
	if (value < 0)
		ReportOutOfRange(str);
	return value;
}

/* Text input: a non-negative decimal integer. */
Datum
flakeid_in(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(ParseFlakeText(PG_GETARG_CSTRING(0)));
}

/* Binary input: an int8 that must not be negative. */
Datum
flakeid_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int64		value = pq_getmsgint64(buf);

	if (value < 0)
		ReportOutOfRange(psprintf(INT64_FORMAT, value));
	PG_RETURN_INT64(value);
}

/* Cast from bigint. */
Datum
flakeid_from_int8(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);

	if (value < 0)
		ReportOutOfRange(psprintf(INT64_FORMAT, value));
	PG_RETURN_INT64(value);
}

/* Cast from integer. */
Datum
flakeid_from_int4(PG_FUNCTION_ARGS)
{
	int32		value = PG_GETARG_INT32(0);

	if (value < 0)
		ReportOutOfRange(psprintf("%d", value));
	PG_RETURN_INT64((int64) value);
}
