/*
 * flakeid's binary receive (flakeid_recv): eight bytes in network order,
 * the value when it is 0 or more, 22003 when negative, and an error when
 * the message is too short; never a read past the message.
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"

#include "stubs.h"

extern Datum flakeid_recv(PG_FUNCTION_ARGS);

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly the input, so that ASan sees a read past it */
	char	   *copy = malloc(size == 0 ? 1 : size);
	StringInfoData buf;
	Datum		got;
	uint64		expected = 0;

	memcpy(copy, data, size);
	buf.data = copy;
	buf.len = (int) size;
	buf.maxlen = (int) size;
	buf.cursor = 0;
	for (size_t i = 0; i < 8 && i < size; i++)
		expected = (expected << 8) | data[i];
	if (FuzzCall(flakeid_recv, PointerGetDatum(&buf), 0, 1, &got))
	{
		if (size < 8)
			FuzzFail("read a value from fewer than 8 bytes", data, size);
		if ((int64) expected < 0 || DatumGetInt64(got) != (int64) expected)
			FuzzFail("not the value the bytes say", data, size);
		if (buf.cursor != 8)
			FuzzFail("did not consume exactly 8 bytes", data, size);
	}
	else if (size >= 8 && (int64) expected >= 0)
		FuzzFail("rejected a non-negative value", data, size);
	else if (size >= 8 && fuzz_error.sqlerrcode != ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE)
		FuzzFail("a negative value is not 22003", data, size);
	FuzzReset();
	free(copy);
	return 0;
}
