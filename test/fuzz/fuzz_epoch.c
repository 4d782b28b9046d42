/*
 * The flakeid.epoch parser (FlakeParseEpoch), pure arithmetic on text:
 *   - what it accepts is at or after 1970-01-01, and before the year 10000
 *     and the largest offset after it;
 *   - an accepted moment before the year 10000, written back in UTC as "YYYY-MM-DD HH:MM:SS.mmm+00"
 *     and as "YYYY-MM-DDTHH:MM:SS.mmmZ", is read as the same moment;
 *   - blanks around an accepted text change nothing.
 */
#include "postgres.h"

#include <time.h>

#include "stubs.h"
#include "../../src/epoch.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
Expect(const char *text, int64 ms, const char *what, const uint8_t *data, size_t size)
{
	int64		again;

	if (!FlakeParseEpoch(text, &again) || again != ms)
		FuzzFail(what, data, size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *str = malloc(size + 1);
	int64		ms;

	memcpy(str, data, size);
	str[size] = '\0';
	if (FlakeParseEpoch(str, &ms))
	{
		time_t		secs = (time_t) (ms / 1000);
		struct tm	tm;
		char		text[64];
		char	   *padded;

		if (ms < 0 || ms >= INT64CONST(253402300800000) + 16 * 3600 * 1000)
			FuzzFail("a moment outside 1970 .. 9999", data, size);
		if (ms >= INT64CONST(253402300800000))
		{
			free(str);
			return 0;			/* its year has five digits */
		}
		gmtime_r(&secs, &tm);
		snprintf(text, sizeof(text), "%04d-%02d-%02d %02d:%02d:%02d.%03d+00",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				 tm.tm_min, tm.tm_sec, (int) (ms % 1000));
		Expect(text, ms, "its UTC text reads otherwise", data, size);
		snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
				 tm.tm_min, tm.tm_sec, (int) (ms % 1000));
		Expect(text, ms, "its ISO-8601 text reads otherwise", data, size);
		padded = malloc(size + 5);
		snprintf(padded, size + 5, "  %s  ", str);
		Expect(padded, ms, "blanks around it change it", data, size);
		free(padded);
	}
	free(str);
	return 0;
}
