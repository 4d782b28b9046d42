/*-------------------------------------------------------------------------
 *
 * type.c
 *	  Input, binary receive and casts of the flakeid type.
 *
 * A flakeid is stored as an int8, so output, send, comparison and hashing
 * are core's int8 functions, bound in the install script.  Only the ways in
 * need C: they reject negative values.  Text input reports bad text as a
 * soft error where the caller asks for one (PostgreSQL 16 and later:
 * pg_input_is_valid(), COPY's ON_ERROR, SQL/JSON's ON ERROR, and arrays,
 * records and domains of flakeid), so that the caller can go on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "compat.h"
#include "layout.h"
#include "type.h"

PG_FUNCTION_INFO_V1(flakeid_in);
PG_FUNCTION_INFO_V1(flakeid_recv);
PG_FUNCTION_INFO_V1(flakeid_from_int8);
PG_FUNCTION_INFO_V1(flakeid_from_int4);

/*
 * Input text as an error message quotes it: all of it, or its first
 * FLAKE_QUOTE_CHARS characters and "...", so that a huge input does not
 * fill the log.  len is its length in bytes.
 */
char *
FlakeQuoteInput(const char *str, int len)
{
	int			keep = pg_mbcharcliplen(str, len, FLAKE_QUOTE_CHARS);

	if (keep >= len)
		return pnstrdup(str, len);
	return psprintf("%.*s...", keep, str);
}

/*
 * A value below 0 or above the largest int64, reported through escontext:
 * thrown when it is NULL or not an error-saving context.
 */
static void
ReportOutOfRange(const char *what, Node *escontext)
{
	errsave(escontext,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value \"%s\" is out of range for type %s",
					FlakeQuoteInput(what, strlen(what)), "flakeid"),
			 errdetail("flakeid values are between 0 and %lld.",
					   (long long) PG_INT64_MAX)));
}

/*
 * Parse text with core's int64 parser, so that exactly what bigint accepts
 * is accepted, and report its errors in terms of flakeid, through escontext.
 * Returns 0 after a soft error.
 */
static int64
ParseFlakeText(const char *str, Node *escontext)
{
	int64		value;
	int			sqlerrcode = FlakeStrToInt64(str, &value);

	if (sqlerrcode == ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE ||
		(sqlerrcode == 0 && value < 0))
	{
		ReportOutOfRange(str, escontext);
		return 0;
	}
	if (sqlerrcode != 0)
		ereturn(escontext, 0,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"",
						"flakeid", FlakeQuoteInput(str, strlen(str)))));
	return value;
}

/* Text input: a non-negative decimal integer. */
Datum
flakeid_in(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(ParseFlakeText(PG_GETARG_CSTRING(0), fcinfo->context));
}

/* Binary input: an int8 that must not be negative. */
Datum
flakeid_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int64		value = pq_getmsgint64(buf);

	if (value < 0)
		ReportOutOfRange(psprintf(INT64_FORMAT, value), NULL);
	PG_RETURN_INT64(value);
}

/* Cast from bigint. */
Datum
flakeid_from_int8(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);

	if (value < 0)
		ReportOutOfRange(psprintf(INT64_FORMAT, value), NULL);
	PG_RETURN_INT64(value);
}

/* Cast from integer. */
Datum
flakeid_from_int4(PG_FUNCTION_ARGS)
{
	int32		value = PG_GETARG_INT32(0);

	if (value < 0)
		ReportOutOfRange(psprintf("%d", value), NULL);
	PG_RETURN_INT64((int64) value);
}
