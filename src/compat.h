/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  What differs between the PostgreSQL versions flakeid supports, each
 *	  difference behind one small named helper, so that no other file needs
 *	  a version test.
 *
 * Include it after postgres.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_COMPAT_H
#define FLAKEID_COMPAT_H

#if PG_VERSION_NUM >= 160000
/* PostgreSQL 16 moved the varlena macros out of postgres.h. */
#include "varatt.h"
#endif

#endif							/* FLAKEID_COMPAT_H */
