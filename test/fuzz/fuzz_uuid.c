/*
 * The UUID view of an ID (src/uuid.h), as flakeid_from_uuid() and
 * flakeid_to_uuid() use it, under a layout the input picks: 16 bytes are
 * read back only when they are exactly the UUID of the ID they give, and
 * every ID's UUID is version 7, variant 10, carries its Unix millisecond,
 * reads back, and sorts as the ID does against its neighbours.
 *
 * Input: a UUID (16 bytes), then the layout (8 bytes of epoch, 1 of node
 * bits), then an ID (8 bytes); missing bytes are 0.
 */
#include "postgres.h"

#include "stubs.h"
#include "../../src/uuid.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the latest epoch flakeid.epoch accepts: 9999-12-31 23:59:59.999-14:00 */
#define FUZZ_MAX_EPOCH_MS INT64CONST(253402351199999)

static uint64
Take(const uint8_t *data, size_t size, size_t from, int n)
{
	uint64		v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | (from + i < size ? data[from + i] : 0);
	return v;
}

static void
CheckId(const FlakeLayout *layout, int64 id, const uint8_t *data, size_t size)
{
	unsigned char u[FLAKE_UUID_LEN];
	int64		back = -1;
	uint64		unix_ms = 0;

	FlakeUuidEncode(layout, id, u);
	for (int i = 0; i < 6; i++)
		unix_ms = (unix_ms << 8) | u[i];
	if ((u[6] >> 4) != 7 || (u[8] >> 6) != 2)
		FuzzFail("not version 7, variant 10", data, size);
	if (unix_ms != (uint64) (layout->epoch_ms + FlakeMs(id)))
		FuzzFail("not the ID's Unix millisecond", data, size);
	if (FlakeUuidDecode(layout, u, &back) != FLAKE_UUID_OK || back != id)
		FuzzFail("an ID's UUID does not read back", data, size);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char in[FLAKE_UUID_LEN];
	unsigned char again[FLAKE_UUID_LEN];
	FlakeLayout layout;
	int64		id = -1;
	int64		next;

	for (int i = 0; i < FLAKE_UUID_LEN; i++)
		in[i] = (unsigned char) Take(data, size, i, 1);
	layout.epoch_ms = (int64) (Take(data, size, 16, 8) % (uint64) (FUZZ_MAX_EPOCH_MS + 1));
	layout.node_bits = (int32) (Take(data, size, 24, 1) % (FLAKE_MAX_NODE_BITS + 1));

	/* 16 bytes read back only as exactly the UUID of the ID they give */
	if (FlakeUuidDecode(&layout, in, &id) == FLAKE_UUID_OK)
	{
		if (id < 0 || FlakeMs(id) > FLAKE_MAX_MS)
			FuzzFail("read back an ID outside the layout", data, size);
		FlakeUuidEncode(&layout, id, again);
		if (memcmp(in, again, FLAKE_UUID_LEN) != 0)
			FuzzFail("read back bytes that are not the ID's UUID", data, size);
	}
	else if (id != -1)
		FuzzFail("a refused UUID wrote an ID", data, size);

	/* any ID: its UUID, and order against the next ID */
	id = (int64) (Take(data, size, 25, 8) & ~(UINT64CONST(1) << 63));
	CheckId(&layout, id, data, size);
	if (id < PG_INT64_MAX)
	{
		unsigned char a[FLAKE_UUID_LEN];
		unsigned char b[FLAKE_UUID_LEN];

		next = id + 1 + (int64) (Take(data, size, 33, 2) % (uint64) (PG_INT64_MAX - id));
		CheckId(&layout, next, data, size);
		FlakeUuidEncode(&layout, id, a);
		FlakeUuidEncode(&layout, next, b);
		if (memcmp(a, b, FLAKE_UUID_LEN) >= 0)
			FuzzFail("a larger ID's UUID does not sort after", data, size);
	}
	return 0;
}
