/*
 * The least of the server that flakeid's parsers need outside it, for the
 * fuzz targets: memory that is freed after each input, and an ereport()
 * whose ERROR jumps back to the target (through PG_exception_stack, as in
 * the server) with its SQLSTATE and message kept.  The int64 parser is a
 * copy of bigint's rules (PostgreSQL 15: blanks, a sign, decimal digits,
 * blanks), written here, not the server's code.
 */
#include "postgres.h"

#include <ctype.h>
#include <stdarg.h>

#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "stubs.h"

sigjmp_buf *PG_exception_stack = NULL;
ErrorContextCallback *error_context_stack = NULL;
MemoryContext CurrentMemoryContext = NULL;

/* memory: every allocation is on a list, freed by FuzzReset() */

typedef struct Chunk
{
	struct Chunk *next;
	max_align_t data[];
} Chunk;

static Chunk *chunks;

static void *
Remember(size_t size)
{
	Chunk	   *c = malloc(sizeof(Chunk) + (size == 0 ? 1 : size));

	if (c == NULL)
		abort();
	c->next = chunks;
	chunks = c;
	return c->data;
}

void *
palloc(Size size)
{
	return Remember(size);
}

void *
palloc0(Size size)
{
	return memset(Remember(size), 0, size);
}

void
pfree(void *pointer)
{
	(void) pointer;				/* freed with the rest by FuzzReset() */
}

char *
pstrdup(const char *in)
{
	return strcpy(palloc(strlen(in) + 1), in);
}

char *
pnstrdup(const char *in, Size len)
{
	char	   *out;

	len = strnlen(in, len);
	out = palloc(len + 1);
	memcpy(out, in, len);
	out[len] = '\0';
	return out;
}

char *
psprintf(const char *fmt,...)
{
	va_list		args;
	int			len;
	char	   *out;

	va_start(args, fmt);
	len = vsnprintf(NULL, 0, fmt, args);
	va_end(args);
	out = palloc(len + 1);
	va_start(args, fmt);
	vsnprintf(out, len + 1, fmt, args);
	va_end(args);
	return out;
}

/* errors */

FuzzError fuzz_error;

bool
errstart(int elevel, const char *domain)
{
	(void) domain;
	if (elevel < ERROR)
		return false;
	memset(&fuzz_error, 0, sizeof(fuzz_error));
	fuzz_error.elevel = elevel;
	return true;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	(void) filename;
	(void) lineno;
	(void) funcname;
	fuzz_error.thrown = true;
	if (PG_exception_stack == NULL)
		abort();
	siglongjmp(*PG_exception_stack, 1);
}

void
pg_re_throw(void)
{
	siglongjmp(*PG_exception_stack, 1);
}

int
errcode(int sqlerrcode)
{
	fuzz_error.sqlerrcode = sqlerrcode;
	return 0;
}

static void
Format(char *buf, const char *fmt, va_list args)
{
	vsnprintf(buf, FUZZ_MESSAGE_LEN, fmt, args);
}

int
errmsg(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	Format(fuzz_error.message, fmt, args);
	va_end(args);
	return 0;
}

int
errdetail(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	Format(fuzz_error.detail, fmt, args);
	va_end(args);
	return 0;
}

int
errhint(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	Format(fuzz_error.hint, fmt, args);
	va_end(args);
	return 0;
}

ErrorData *
CopyErrorData(void)
{
	ErrorData  *edata = palloc0(sizeof(ErrorData));

	edata->elevel = fuzz_error.elevel;
	edata->sqlerrcode = fuzz_error.sqlerrcode;
	edata->message = pstrdup(fuzz_error.message);
	return edata;
}

void
FreeErrorData(ErrorData *edata)
{
	(void) edata;
}

void
FlushErrorState(void)
{
	memset(&fuzz_error, 0, sizeof(fuzz_error));
}

/* text and encodings: the database encoding is UTF-8 */

int
pg_mblen(const char *mbstr)
{
	unsigned char c = (unsigned char) *mbstr;

	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0)
		return 2;
	if ((c & 0xf0) == 0xe0)
		return 3;
	if ((c & 0xf8) == 0xf0)
		return 4;
	return 1;
}

int
pg_mbstrlen_with_len(const char *mbstr, int limit)
{
	int			len = 0;

	while (limit > 0 && *mbstr)
	{
		int			l = pg_mblen(mbstr);

		limit -= l;
		mbstr += l;
		len++;
	}
	return len;
}

int
pg_mbcharcliplen(const char *mbstr, int len, int limit)
{
	int			clen = 0;
	int			nch = 0;

	while (len > 0 && *mbstr)
	{
		int			l = pg_mblen(mbstr);

		nch++;
		if (nch > limit)
			break;
		clen += l;
		len -= l;
		mbstr += l;
	}
	return clen;
}

unsigned char
pg_ascii_toupper(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') ? ch - 'a' + 'A' : ch;
}

unsigned char
pg_ascii_tolower(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch;
}

int
pg_strcasecmp(const char *s1, const char *s2)
{
	for (;; s1++, s2++)
	{
		int			c1 = pg_ascii_tolower((unsigned char) *s1);
		int			c2 = pg_ascii_tolower((unsigned char) *s2);

		if (c1 != c2)
			return c1 - c2;
		if (c1 == 0)
			return 0;
	}
}

struct varlena *
pg_detoast_datum_packed(struct varlena *datum)
{
	return datum;				/* the targets make plain, short values */
}

char *
text_to_cstring(const text *t)
{
	return pnstrdup(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

text *
cstring_to_text_with_len(const char *s, int len)
{
	text	   *result = palloc(len + VARHDRSZ);

	SET_VARSIZE(result, len + VARHDRSZ);
	memcpy(VARDATA(result), s, len);
	return result;
}

text *
cstring_to_text(const char *s)
{
	return cstring_to_text_with_len(s, strlen(s));
}

/* bigint's rules for text, as PostgreSQL 15 has them */
int64
pg_strtoint64(const char *s)
{
	const char *p = s;
	bool		neg = false;
	uint64		acc = 0;

	while (*p && isspace((unsigned char) *p))
		p++;
	if (*p == '-')
	{
		p++;
		neg = true;
	}
	else if (*p == '+')
		p++;
	if (!isdigit((unsigned char) *p))
		goto invalid;
	while (*p && isdigit((unsigned char) *p))
	{
		int			digit = *p++ - '0';

		if (acc > (((uint64) PG_INT64_MAX) + 1 - digit) / 10)
			goto out_of_range;
		acc = acc * 10 + digit;
	}
	while (*p && isspace((unsigned char) *p))
		p++;
	if (*p != '\0')
		goto invalid;
	if (neg)
		return acc == ((uint64) PG_INT64_MAX) + 1 ? PG_INT64_MIN : -(int64) acc;
	if (acc > (uint64) PG_INT64_MAX)
		goto out_of_range;
	return (int64) acc;

out_of_range:
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("value \"%s\" is out of range for type %s", s, "bigint")));
invalid:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type %s: \"%s\"", "bigint", s)));
	return 0;
}

int64
pq_getmsgint64(StringInfo msg)
{
	uint64		result = 0;

	if (msg->cursor < 0 || msg->cursor + 8 > msg->len)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("insufficient data left in message")));
	for (int i = 0; i < 8; i++)
		result = (result << 8) | (unsigned char) msg->data[msg->cursor++];
	return (int64) result;
}

/* the harness */

/*
 * Whether bytes are text the server could pass: valid UTF-8 without a zero
 * byte (every text and cstring a server hands to a function is verified
 * in its encoding).
 */
bool
FuzzValidText(const uint8_t *data, size_t size)
{
	size_t		i = 0;

	while (i < size)
	{
		int			l = pg_mblen((const char *) data + i);

		if (data[i] == 0 || (data[i] >= 0x80 && data[i] < 0xc2) || data[i] > 0xf4 ||
			i + l > size)
			return false;
		for (int k = 1; k < l; k++)
		{
			if ((data[i + k] & 0xc0) != 0x80)
				return false;
		}
		i += l;
	}
	return true;
}

void
FuzzReset(void)
{
	while (chunks != NULL)
	{
		Chunk	   *next = chunks->next;

		free(chunks);
		chunks = next;
	}
	memset(&fuzz_error, 0, sizeof(fuzz_error));
	PG_exception_stack = NULL;
}

/* Call a function of one or two arguments; true when it returned. */
bool
FuzzCall(PGFunction fn, Datum arg0, Datum arg1, int nargs, Datum *result)
{
	LOCAL_FCINFO(fcinfo, 2);
	sigjmp_buf	jump;

	memset(fcinfo, 0, SizeForFunctionCallInfo(2));
	fcinfo->nargs = nargs;
	fcinfo->args[0].value = arg0;
	fcinfo->args[1].value = arg1;
	PG_exception_stack = &jump;
	if (sigsetjmp(jump, 0) != 0)
	{
		PG_exception_stack = NULL;
		return false;
	}
	*result = fn(fcinfo);
	PG_exception_stack = NULL;
	if (fcinfo->isnull)
		abort();
	return true;
}

/* A failed property: say which, with the input, and stop. */
void
FuzzFail(const char *what, const uint8_t *data, size_t size)
{
	fprintf(stderr, "property failed: %s\ninput (%zu bytes):", what, size);
	for (size_t i = 0; i < size; i++)
		fprintf(stderr, " %02x", data[i]);
	fprintf(stderr, "\nlast error: %d \"%s\" (%s)\n", fuzz_error.sqlerrcode,
			fuzz_error.message, fuzz_error.detail);
	abort();
}
