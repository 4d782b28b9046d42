/*-------------------------------------------------------------------------
 *
 * epoch.c
 *	  Reading flakeid.epoch: an ISO-8601 timestamp such as "2020-01-01",
 *	  "2020-01-01 00:00:00+00" or "2020-01-01T00:00:00.000Z", into
 *	  milliseconds since 1970-01-01 UTC.
 *
 * A timestamp without an offset is UTC, never local time.  Pure
 * arithmetic on the text: no catalog, no time zone data, no allocation,
 * so that it can be tested on its own (test/fuzz).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "epoch.h"

static bool
IsDigit(char c)
{
	return c >= '0' && c <= '9';
}

/* Read exactly n decimal digits. */
static bool
ScanDigits(const char **p, int n, int *value)
{
	int			v = 0;

	for (int i = 0; i < n; i++)
	{
		if (!IsDigit((*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*value = v;
	return true;
}

/* Whether the text at p starts with word, in any case of ASCII letters. */
static bool
StartsWithWord(const char *p, const char *word)
{
	for (; *word != '\0'; p++, word++)
	{
		char		c = *p;

		if (c >= 'a' && c <= 'z')
			c = (char) (c - 'a' + 'A');
		if (c != *word)
			return false;
	}
	return true;
}

/* Read an optional UTC offset: Z, UTC, +HH, +HHMM or +HH:MM. */
static bool
ScanOffset(const char **p, int *offset_min)
{
	int			sign,
				hh,
				mm = 0;

	*offset_min = 0;
	while (**p == ' ')
		(*p)++;
	if (**p == '\0')
		return true;
	if (**p == 'Z' || **p == 'z')
	{
		(*p)++;
		return true;
	}
	if (StartsWithWord(*p, "UTC"))
	{
		*p += 3;
		return true;
	}
	if (**p != '+' && **p != '-')
		return false;
	sign = (**p == '-') ? -1 : 1;
	(*p)++;
	if (!ScanDigits(p, 2, &hh))
		return false;
	if (**p == ':')
		(*p)++;
	if (IsDigit(**p) && !ScanDigits(p, 2, &mm))
		return false;
	if (hh > 15 || mm > 59)
		return false;
	*offset_min = sign * (hh * 60 + mm);
	return true;
}

/* Read the time of day after a date: HH:MM, then :SS and .fff optionally. */
static bool
ScanTime(const char **p, int *hour, int *min, int *sec, int *msec)
{
	if (!ScanDigits(p, 2, hour) || *(*p)++ != ':' || !ScanDigits(p, 2, min))
		return false;
	if (**p != ':')
		return true;
	(*p)++;
	if (!ScanDigits(p, 2, sec))
		return false;
	if (**p != '.')
		return true;
	(*p)++;
	if (!IsDigit(**p))
		return false;
	for (int scale = 100; IsDigit(**p); (*p)++, scale /= 10)
	{
		if (scale == 0)
			return false;		/* finer than a millisecond */
		*msec += (**p - '0') * scale;
	}
	return true;
}

static bool
IsLeapYear(int year)
{
	return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

/* Days in a month of a year, month 1 to 12. */
static int
DaysInMonth(int year, int mon)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return days[mon - 1] + (mon == 2 && IsLeapYear(year) ? 1 : 0);
}

/* Days from 1970-01-01 to a valid date from 1970 on. */
static int64
DaysSince1970(int year, int mon, int day)
{
	int64		days = 0;

	for (int y = 1970; y < year; y++)
		days += IsLeapYear(y) ? 366 : 365;
	for (int m = 1; m < mon; m++)
		days += DaysInMonth(year, m);
	return days + day - 1;
}

/*
 * Parse flakeid.epoch into milliseconds since 1970-01-01 UTC.  False for
 * anything but a valid timestamp at or after 1970-01-01 00:00 UTC.
 */
bool
FlakeParseEpoch(const char *str, int64 *result)
{
	const char *p = str;
	int			year,
				mon,
				day,
				hour = 0,
				min = 0,
				sec = 0,
				msec = 0,
				offset_min;

	while (*p == ' ')
		p++;
	if (!ScanDigits(&p, 4, &year) || *p++ != '-' ||
		!ScanDigits(&p, 2, &mon) || *p++ != '-' ||
		!ScanDigits(&p, 2, &day))
		return false;
	if (*p == 'T' || *p == 't' || (*p == ' ' && IsDigit(p[1])))
	{
		p++;
		if (!ScanTime(&p, &hour, &min, &sec, &msec))
			return false;
	}
	if (!ScanOffset(&p, &offset_min))
		return false;
	while (*p == ' ')
		p++;
	if (*p != '\0')
		return false;

	if (year < 1970 || mon < 1 || mon > 12 || day < 1 ||
		day > DaysInMonth(year, mon) || hour > 23 || min > 59 || sec > 59)
		return false;
	*result = ((DaysSince1970(year, mon, day) * 24 + hour) * 60 + min -
			   offset_min) * 60 * 1000 + sec * 1000 + msec;
	return *result >= 0;
}
