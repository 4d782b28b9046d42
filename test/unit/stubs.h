/*
 * The server's lock functions as every unit test that builds a file of
 * src/ against stubs has them: one process, so releasing a lock and
 * setting one up do nothing.  Each test has its own LWLockAcquire(),
 * which is where it runs another process's step.  A test includes this
 * once, after the file of src/ it builds.
 */
#ifndef FLAKE_UNIT_STUBS_H
#define FLAKE_UNIT_STUBS_H

void
LWLockRelease(LWLock *lock)
{
	(void) lock;
}

void
LWLockInitialize(LWLock *lock, int tranche_id)
{
	(void) lock;
	(void) tranche_id;
}

#endif							/* FLAKE_UNIT_STUBS_H */
