/*-------------------------------------------------------------------------
 *
 * statefile.h
 *	  The state file, flakeid.state in the data directory: the newest
 *	  lease, written twice.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_STATEFILE_H
#define FLAKEID_STATEFILE_H

#include <sys/types.h>

#include "record.h"

#define FLAKE_STATE_FILE		"flakeid.state"

/* What reading the state file found. */
typedef enum FlakeFileStatus
{
	FLAKE_FILE_OK,				/* a valid lease */
	FLAKE_FILE_MISSING,			/* no file: this server never generated */
	FLAKE_FILE_DAMAGED,			/* no valid copy of the lease */
	FLAKE_FILE_UNREADABLE		/* the file could not be read (errno) */
} FlakeFileStatus;

/* One copy of the lease in the file, as flakeid_state_file() shows it. */
typedef struct FlakeFileCopy
{
	int			offset;			/* where it starts in the file */
	bool		present;		/* the file reaches that far */
	bool		valid;			/* magic, version and CRC are right */
	uint32		version;
	uint64		serial;
	FlakeLease	lease;
} FlakeFileCopy;

/*
 * The state file whose directory entry was last fsync'd, by any process:
 * kept in shared memory, under the lock that serialises writes of the
 * file.  A file made or replaced since, or a directory fsync that failed,
 * makes the next write fsync the data directory again.
 */
typedef struct FlakeFileEntry
{
	bool		synced;			/* dev and ino name the file fsync'd */
	dev_t		dev;
	ino_t		ino;
} FlakeFileEntry;

/* The places a copy can be: two of the current format, one older. */
#define FLAKE_FILE_SLOTS		3

extern FlakeFileStatus FlakeStateFileRead(FlakeLease *lease, uint64 *serial);
extern int	FlakeStateFileCopies(FlakeFileCopy *copies);
extern bool FlakeStateFileWrite(const FlakeLease *lease, uint64 serial,
								FlakeFileEntry *entry);

#endif							/* FLAKEID_STATEFILE_H */
