/*-------------------------------------------------------------------------
 *
 * format.c
 *	  Compact text forms of an ID: base32 (Crockford), base62 and hex.
 *
 * Every form is fixed width and zero-padded, and its alphabet is in ASCII
 * order, so that sorting the strings byte by byte (COLLATE "C") sorts the
 * IDs.  Parsing accepts exactly the width of the form.  Base32 follows
 * Crockford on input: lower case, and I, L and O for 1, 1 and 0, are
 * accepted; hyphens and the check symbol are not.  Hex accepts either case.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "compat.h"
#include "type.h"

PG_FUNCTION_INFO_V1(flakeid_format);
PG_FUNCTION_INFO_V1(flakeid_parse);

/* How a form treats the case of its input. */
typedef enum FlakeTextCase
{
	FLAKE_CASE_EXACT,			/* as it is: the alphabet has both cases */
	FLAKE_CASE_UPPER,			/* fold to upper case before the lookup */
	FLAKE_CASE_LOWER			/* fold to lower case before the lookup */
} FlakeTextCase;

/* A compact text form: its alphabet, input rules and width. */
typedef struct FlakeTextForm
{
	const char *name;
	const char *digits;			/* the alphabet, in ascending ASCII order */
	const char *aliases;		/* pairs: a character read as the next one */
	FlakeTextCase input_case;
	int			base;
	int			width;			/* enough digits for every flakeid */
} FlakeTextForm;

#define FLAKE_MAX_WIDTH 16

static const FlakeTextForm flake_text_forms[] = {
	{"base32", "0123456789ABCDEFGHJKMNPQRSTVWXYZ", "I1L1O0", FLAKE_CASE_UPPER, 32, 13},
	{"base62", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", FLAKE_CASE_EXACT, 62, 11},
	{"hex", "0123456789abcdef", "", FLAKE_CASE_LOWER, 16, 16},
};

/* The form named by a format argument; an error for an unknown name. */
static const FlakeTextForm *
LookupTextForm(text *fmt)
{
	char	   *name = text_to_cstring(fmt);

	for (int i = 0; i < (int) lengthof(flake_text_forms); i++)
	{
		if (pg_strcasecmp(name, flake_text_forms[i].name) == 0)
			return &flake_text_forms[i];
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized flakeid format \"%s\"",
					FlakeQuoteInput(name, strlen(name))),
			 errhint("Valid formats are \"base32\", \"base62\" and \"hex\".")));
	return NULL;				/* keep compiler quiet */
}

/* Write value in a form: width digits and a terminating zero byte. */
static void
FormatDigits(const FlakeTextForm *form, uint64 value, char *buf)
{
	for (int i = form->width - 1; i >= 0; i--)
	{
		buf[i] = form->digits[value % form->base];
		value /= form->base;
	}
	buf[form->width] = '\0';
}

/* The value of one character in a form, or -1 if it is not a digit. */
static int
DigitValue(const FlakeTextForm *form, char c)
{
	const char *pos;

	if (form->input_case == FLAKE_CASE_UPPER)
		c = (char) pg_ascii_toupper((unsigned char) c);
	else if (form->input_case == FLAKE_CASE_LOWER)
		c = (char) pg_ascii_tolower((unsigned char) c);
	for (const char *alias = form->aliases; *alias != '\0'; alias += 2)
	{
		if (c == alias[0])
			c = alias[1];
	}
	if (c == '\0')
		return -1;
	pos = strchr(form->digits, c);
	return pos == NULL ? -1 : (int) (pos - form->digits);
}

/* Text of the wrong length for its form: len bytes, nchars characters. */
static void
ReportBadLength(const FlakeTextForm *form, const char *str, int len)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid %s flakeid: \"%s\"", form->name,
					FlakeQuoteInput(str, len)),
			 errdetail("A %s flakeid has exactly %d characters.",
					   form->name, form->width)));
}

/* A character that is not in the alphabet of the form. */
static void
ReportBadDigit(const FlakeTextForm *form, const char *str, const char *bad)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid %s flakeid: \"%s\"", form->name, str),
			 errdetail("\"%.*s\" is not a %s digit.",
					   pg_mblen(bad), bad, form->name)));
}

/* Well-formed text whose value is above the largest flakeid. */
static void
ReportTextOutOfRange(const FlakeTextForm *form, const char *str)
{
	char		largest[FLAKE_MAX_WIDTH + 1];

	FormatDigits(form, (uint64) PG_INT64_MAX, largest);
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value \"%s\" is out of range for type %s",
					str, "flakeid"),
			 errdetail("The largest %s flakeid is \"%s\".",
					   form->name, largest)));
}

/*
 * Read a string of len bytes in a form.  Its length is counted in
 * characters, so that a string of the form's width with a character that
 * is not a digit is reported for that character.  Every character is
 * checked before the value is computed, so bad text is reported as such
 * even when it is also too large.
 */
static int64
ParseDigits(const FlakeTextForm *form, const char *str, int len)
{
	int64		value = 0;

	if (len < form->width || pg_mbstrlen_with_len(str, len) != form->width)
		ReportBadLength(form, str, len);
	for (int i = 0; i < len; i++)
	{
		if (DigitValue(form, str[i]) < 0)
			ReportBadDigit(form, str, str + i);
	}
	for (int i = 0; i < len; i++)
	{
		int			digit = DigitValue(form, str[i]);

		if (value > (PG_INT64_MAX - digit) / form->base)
			ReportTextOutOfRange(form, str);
		value = value * form->base + digit;
	}
	return value;
}

/* An ID in a compact text form: flakeid_format(id, 'base32'). */
Datum
flakeid_format(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	const FlakeTextForm *form = LookupTextForm(PG_GETARG_TEXT_PP(1));
	char		buf[FLAKE_MAX_WIDTH + 1];

	FormatDigits(form, (uint64) id, buf);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(buf, form->width));
}

/* The ID that a compact text form spells: flakeid_parse(txt, 'base32'). */
Datum
flakeid_parse(PG_FUNCTION_ARGS)
{
	text	   *txt = PG_GETARG_TEXT_PP(0);
	const FlakeTextForm *form = LookupTextForm(PG_GETARG_TEXT_PP(1));

	PG_RETURN_INT64(ParseDigits(form, text_to_cstring(txt),
								VARSIZE_ANY_EXHDR(txt)));
}
