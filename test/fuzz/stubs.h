/* The fuzz targets' harness: see stubs.c. */
#ifndef FLAKEID_FUZZ_STUBS_H
#define FLAKEID_FUZZ_STUBS_H

#include "fmgr.h"

#define FUZZ_MESSAGE_LEN 1024

/* the last error raised, and whether it was thrown */
typedef struct FuzzError
{
	int			elevel;
	int			sqlerrcode;
	bool		thrown;
	char		message[FUZZ_MESSAGE_LEN];
	char		detail[FUZZ_MESSAGE_LEN];
	char		hint[FUZZ_MESSAGE_LEN];
} FuzzError;

extern FuzzError fuzz_error;

extern bool FuzzValidText(const uint8_t *data, size_t size);
extern void FuzzReset(void);
extern bool FuzzCall(PGFunction fn, Datum arg0, Datum arg1, int nargs,
					 Datum *result);
extern void FuzzFail(const char *what, const uint8_t *data, size_t size)
			pg_attribute_noreturn();

#endif
