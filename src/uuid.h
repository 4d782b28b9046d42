/*-------------------------------------------------------------------------
 *
 * uuid.h
 *	  A flakeid shown as an RFC 9562 version-7 UUID, and back: pure
 *	  arithmetic on the ID, the layout and 16 bytes.
 *
 *	 bytes 0-5    the Unix millisecond: the layout's epoch + the ID's ms
 *	 byte  6      0111 (version 7) | bits 21..18 of the ID
 *	 byte  7      bits 17..10 of the ID
 *	 byte  8      10 (variant) | bits 9..4 of the ID
 *	 byte  9      bits 3..0 of the ID | check bits 51..48
 *	 bytes 10-15  check bits 47..0
 *
 * The 22 low bits of the ID (node and sequence) follow the millisecond in
 * order, so that bytewise order (PostgreSQL's uuid order) is ID order.
 * The check is 52 bits of a hash of the ID and the layout: only the 16
 * bytes that the same ID and layout give are read back, so a UUID from
 * another generator, or one made under another epoch or node_bits, is
 * refused except by a chance of 2^-52 per UUID.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_UUID_H
#define FLAKEID_UUID_H

#include "layout.h"

#define FLAKE_UUID_LEN			16
#define FLAKE_UUID_CHECK_BITS	52

/* Why 16 bytes are not a UUID that FlakeUuidEncode made. */
typedef enum FlakeUuidProblem
{
	FLAKE_UUID_OK = 0,
	FLAKE_UUID_NOT_V7,			/* another version, or not RFC 9562's variant */
	FLAKE_UUID_OUT_OF_RANGE,	/* its millisecond is outside the layout's */
	FLAKE_UUID_CHECK			/* the check bits do not match */
} FlakeUuidProblem;

/* One round of mixing: every bit of h reaches every bit of the result. */
static inline uint64
FlakeUuidMix(uint64 h)
{
	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/* The check bits of an ID under a layout. */
static inline uint64
FlakeUuidCheck(const FlakeLayout *layout, int64 id)
{
	uint64		h = UINT64CONST(0x666c616b65696437);	/* "flakeid7" */

	h = FlakeUuidMix(h ^ (uint64) id);
	h = FlakeUuidMix(h ^ (uint64) layout->epoch_ms);
	h = FlakeUuidMix(h ^ (uint64) layout->node_bits);
	return h >> (64 - FLAKE_UUID_CHECK_BITS);
}

/*
 * The UUID of an ID (0 or more) under a layout.  The Unix millisecond
 * always fits its 48 bits: an epoch is at most 9999-12-31 (2.6e14 ms),
 * IDs run 2^41 ms (2.2e12) from it, and 2^48 is 2.8e14.
 */
static inline void
FlakeUuidEncode(const FlakeLayout *layout, int64 id, unsigned char *out)
{
	int64		unix_ms = layout->epoch_ms + FlakeMs(id);
	uint64		low = (uint64) id & ((UINT64CONST(1) << FLAKE_LOW_BITS) - 1);
	uint64		check = FlakeUuidCheck(layout, id);

	for (int i = 0; i < 6; i++)
		out[i] = (unsigned char) (unix_ms >> (8 * (5 - i)));
	out[6] = (unsigned char) (0x70 | (low >> 18));
	out[7] = (unsigned char) (low >> 10);
	out[8] = (unsigned char) (0x80 | ((low >> 4) & 0x3f));
	out[9] = (unsigned char) (((low & 0x0f) << 4) | (check >> 48));
	for (int i = 10; i < 16; i++)
		out[i] = (unsigned char) (check >> (8 * (15 - i)));
}

/*
 * The ID that 16 bytes hold under a layout, into *id; or why there is none
 * (*id untouched).  Exactly the bytes that FlakeUuidEncode makes of some ID
 * are accepted.
 */
static inline FlakeUuidProblem
FlakeUuidDecode(const FlakeLayout *layout, const unsigned char *in, int64 *id)
{
	int64		unix_ms = 0;
	int64		ms;
	uint64		low;
	uint64		check;
	int64		candidate;

	if ((in[6] & 0xf0) != 0x70 || (in[8] & 0xc0) != 0x80)
		return FLAKE_UUID_NOT_V7;
	for (int i = 0; i < 6; i++)
		unix_ms = (unix_ms << 8) | in[i];
	ms = unix_ms - layout->epoch_ms;
	if (ms < 0 || ms > FLAKE_MAX_MS)
		return FLAKE_UUID_OUT_OF_RANGE;
	low = ((uint64) (in[6] & 0x0f) << 18) | ((uint64) in[7] << 10) |
		((uint64) (in[8] & 0x3f) << 4) | (uint64) (in[9] >> 4);
	check = (uint64) (in[9] & 0x0f) << 48;
	for (int i = 10; i < 16; i++)
		check |= (uint64) in[i] << (8 * (15 - i));
	candidate = FlakeFirstIdOfMs(ms) | (int64) low;
	if (check != FlakeUuidCheck(layout, candidate))
		return FLAKE_UUID_CHECK;
	*id = candidate;
	return FLAKE_UUID_OK;
}

#endif							/* FLAKEID_UUID_H */
