/*
 * The compact text forms (flakeid_parse, flakeid_format).  The first byte
 * picks the form (and the case of its name); the rest is text to parse.
 *   - text that parses gives a value of 0 or more, and the value's form
 *     parses back to it;
 *   - bad text is 22P02 or 22003, never another error;
 *   - two values from the input: their forms have the form's width, parse
 *     back, and compare byte by byte as the values compare.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "stubs.h"

extern Datum flakeid_format(PG_FUNCTION_ARGS);
extern Datum flakeid_parse(PG_FUNCTION_ARGS);

static const char *const forms[] = {"base32", "base62", "hex", "BASE32", "Hex", "Base62"};
static const int widths[] = {13, 11, 16, 13, 16, 11};

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static text *
Format(int64 value, text *name, const uint8_t *data, size_t size)
{
	Datum		out;

	if (!FuzzCall(flakeid_format, Int64GetDatum(value), PointerGetDatum(name), 2, &out))
		FuzzFail("formatting failed", data, size);
	return DatumGetTextPP(out);
}

static int64
ParseBack(text *txt, text *name, const uint8_t *data, size_t size)
{
	Datum		out;

	if (!FuzzCall(flakeid_parse, PointerGetDatum(txt), PointerGetDatum(name), 2, &out))
		FuzzFail("a formatted value does not parse", data, size);
	return DatumGetInt64(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int			f;
	text	   *name;
	text	   *txt;
	Datum		got;

	if (size < 1)
		return 0;
	f = data[0] % lengthof(forms);
	name = cstring_to_text(forms[f]);
	txt = cstring_to_text_with_len((const char *) data + 1, size - 1);
	if (!FuzzValidText(data + 1, size - 1))
		;						/* no server passes such text */
	else if (FuzzCall(flakeid_parse, PointerGetDatum(txt), PointerGetDatum(name), 2, &got))
	{
		int64		value = DatumGetInt64(got);

		if (value < 0)
			FuzzFail("parsed to a negative value", data, size);
		if (ParseBack(Format(value, name, data, size), name, data, size) != value)
			FuzzFail("the value's form does not parse back to it", data, size);
	}
	else if (fuzz_error.sqlerrcode != ERRCODE_INVALID_TEXT_REPRESENTATION &&
			 fuzz_error.sqlerrcode != ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE)
		FuzzFail("an error other than 22P02 or 22003", data, size);

	if (size >= 17)
	{
		uint64		ua = 0,
					ub = 0;
		int64		a,
					b;
		text	   *fa,
				   *fb;
		int			cmp;

		for (int i = 1; i <= 8; i++)
			ua = (ua << 8) | data[i];
		for (int i = 9; i <= 16; i++)
			ub = (ub << 8) | data[i];
		a = (int64) (ua & PG_INT64_MAX);
		b = (int64) (ub & PG_INT64_MAX);
		fa = Format(a, name, data, size);
		fb = Format(b, name, data, size);
		if (VARSIZE_ANY_EXHDR(fa) != widths[f] || VARSIZE_ANY_EXHDR(fb) != widths[f])
			FuzzFail("a form of the wrong width", data, size);
		cmp = memcmp(VARDATA_ANY(fa), VARDATA_ANY(fb), widths[f]);
		if ((cmp < 0) != (a < b) || (cmp == 0) != (a == b))
			FuzzFail("the forms do not sort like the values", data, size);
		if (ParseBack(fa, name, data, size) != a || ParseBack(fb, name, data, size) != b)
			FuzzFail("a form does not parse back to its value", data, size);
	}
	FuzzReset();
	return 0;
}
