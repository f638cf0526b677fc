/* common/pages.c - large buffers mapped with their pages already there.
 * A decoded block is written once from start to end right after it is
 * allocated: from malloc, each of its 4 KiB pages is a fault of its own,
 * and in a virtual machine a fault is dear (the first epoch of a stream
 * spent 40 % of its CPU on them).  MAP_POPULATE takes them all in one
 * call.  Small buffers come from malloc, which reuses its pages. */
#include <stdlib.h>
#include <sys/mman.h>

#include "common/internal.h"

#define PAGES_MIN (256u << 10)

void *ch_pages_alloc(size_t n)
{
	if (n < PAGES_MIN)
		return malloc(n ? n : 1);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void ch_pages_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n < PAGES_MIN)
		free(p);
	else
		munmap(p, n);
}
