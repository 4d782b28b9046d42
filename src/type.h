/*-------------------------------------------------------------------------
 *
 * type.h
 *	  The flakeid type's input, and quoting input text in messages.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_TYPE_H
#define FLAKEID_TYPE_H

/* At most this many characters of an input are quoted in a message. */
#define FLAKE_QUOTE_CHARS		40

extern char *FlakeQuoteInput(const char *str, int len);

#endif							/* FLAKEID_TYPE_H */
