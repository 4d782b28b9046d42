/*
 * flakeid's text input (flakeid_in): accepted exactly when bigint's rules
 * accept the text with a value of 0 or more, with that value; otherwise
 * 22P02 or 22003 with a message that names flakeid and quotes at most
 * FLAKE_QUOTE_CHARS characters of the text.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "stubs.h"
#include "../../src/type.h"

extern Datum flakeid_in(PG_FUNCTION_ARGS);

static Datum
bigint_in(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(pg_strtoint64(PG_GETARG_CSTRING(0)));
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *str;
	Datum		got,
				ref;
	bool		ok,
				ref_ok;
	char		again[32];

	if (!FuzzValidText(data, size))
		return 0;
	str = malloc(size + 1);
	memcpy(str, data, size);
	str[size] = '\0';
	ref_ok = FuzzCall(bigint_in, CStringGetDatum(str), 0, 1, &ref);
	ok = FuzzCall(flakeid_in, CStringGetDatum(str), 0, 1, &got);
	if (ok)
	{
		if (!ref_ok || DatumGetInt64(ref) != DatumGetInt64(got))
			FuzzFail("accepted other than bigint", data, size);
		if (DatumGetInt64(got) < 0)
			FuzzFail("accepted a negative value", data, size);
		/* the value's own text reads back as the value */
		snprintf(again, sizeof(again), INT64_FORMAT, DatumGetInt64(got));
		FuzzReset();
		if (!FuzzCall(flakeid_in, CStringGetDatum(again), 0, 1, &ref) ||
			DatumGetInt64(ref) != DatumGetInt64(got))
			FuzzFail("its own text does not read back", data, size);
	}
	else
	{
		if (ref_ok && DatumGetInt64(ref) >= 0)
			FuzzFail("rejected what bigint accepts", data, size);
		if (fuzz_error.sqlerrcode != ERRCODE_INVALID_TEXT_REPRESENTATION &&
			fuzz_error.sqlerrcode != ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE)
			FuzzFail("an error other than 22P02 or 22003", data, size);
		if (strstr(fuzz_error.message, "flakeid") == NULL)
			FuzzFail("the message does not name flakeid", data, size);
		if (strlen(fuzz_error.message) > 100 + FLAKE_QUOTE_CHARS * 4)
			FuzzFail("the message quotes more than it should", data, size);
	}
	FuzzReset();
	free(str);
	return 0;
}
