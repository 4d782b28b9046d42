/*
 * asan_start.c: a library preloaded after the AddressSanitizer runtime by
 * test/run sanitize, so that Debian's PostgreSQL programs start under it.
 *
 * ASan starts on the first malloc().  In the server, that malloc comes from
 * bindtextdomain() in libgpg-error's constructor, with glibc's gettext
 * lock held for writing.  While it starts, ASan looks up swift_demangle
 * and, when the lookup fails, calls dlerror(), which translates its
 * message and so takes the same lock again for reading.  The lock is left
 * broken and the next bindtextdomain(), in PostgreSQL's main(), waits
 * forever.  With the symbol defined the lookup succeeds, dlerror() has
 * nothing to translate, and the lock is untouched.
 *
 * ASan calls it for every name it symbolizes; NULL means "not a Swift
 * name", and the name goes to the C++ demangler as without it.
 */
#include <stddef.h>
#include <stdint.h>

extern char *swift_demangle(const char *mangled, size_t length,
							char *out, size_t *out_length, uint32_t flags);

char *
swift_demangle(const char *mangled, size_t length,
			   char *out, size_t *out_length, uint32_t flags)
{
	(void) mangled;
	(void) length;
	(void) out;
	(void) out_length;
	(void) flags;
	return NULL;
}
