/* common/pages.c - the slabs that hold decoded blocks, and large zeroed
 * buffers (a lazy shard index).
 *
 * Fresh memory is dear: each 4 KiB page a buffer touches for the first
 * time is a fault and a page-table update, and in a virtual machine with
 * paravirtualised page tables (this project's test machines) an update
 * traps to the hypervisor.  Copying Fashion-MNIST's 45 blocks of 1 MB
 * into fresh malloc'd buffers took 320 ms there, 180 ms with each
 * buffer's pages mapped in one call, 8 to 80 ms on 2 MiB pages (the rest
 * is the kernel zeroing them).  So a slab is mapped 2 MiB-aligned with
 * MADV_HUGEPAGE, one fault and one entry per 2 MiB where the kernel has
 * transparent huge pages, and its pages are put in place by one call
 * (MADV_POPULATE_WRITE, Linux 5.14) where it has none. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "common/internal.h"

#define HUGE_PAGE ((size_t)2 << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

/* m bytes (a multiple of the page size) at a HUGE_PAGE boundary, zeroed
 * and not yet backed: mapped with HUGE_PAGE to spare, the unaligned ends
 * given back.  Huge pages back the whole 2 MiB within it, small ones a
 * tail. */
static void *map_aligned(size_t m)
{
	uint8_t *p = mmap(NULL, m + HUGE_PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uint8_t *a = (uint8_t *)round_up((uintptr_t)p, HUGE_PAGE);
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (a + m < p + m + HUGE_PAGE)
		munmap(a + m, (size_t)(p + HUGE_PAGE - a));
	(void)madvise(a, m, MADV_HUGEPAGE); /* a hint: else only slower */
	return a;
}

/* The same, its pages put in place now. */
static void *map_huge(size_t m)
{
	void *a = map_aligned(m);
	if (a)
		(void)madvise(a, m, MADV_POPULATE_WRITE); /* a hint too */
	return a;
}

/* Asks for huge pages under the whole 2 MiB pages within n bytes at p
 * (malloc'd memory too): each touched first a fault per 2 MiB instead of
 * 512 where the kernel has them.  A hint. */
static void advise_huge(void *p, size_t n)
{
	uintptr_t lo = round_up((uintptr_t)p, HUGE_PAGE);
	uintptr_t hi = ((uintptr_t)p + n) / HUGE_PAGE * HUGE_PAGE;
	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* *n bytes rounded up to whole huge pages, 2 MiB-aligned and advised
 * onto them, from malloc's heap (so free()'s): byte buffers of a MiB and
 * more (common/util.c).  NULL without memory. */
void *ch_huge_alloc(size_t *n)
{
	void *p;
	if (*n > SIZE_MAX - HUGE_PAGE)
		return NULL;
	*n = round_up(*n, HUGE_PAGE);
	if (posix_memalign(&p, HUGE_PAGE, *n) != 0)
		return NULL;
	advise_huge(p, *n);
	return p;
}

/* ------------------------------------------------------------------ */
/* Zeroed buffers                                                       */

/* Rounded to small pages, not to huge ones: what is touched stays within
 * n and a page, as the callers' memory budgets count it. */
#define SMALL_PAGE ((size_t)4096)

void *ch_zeroed_alloc(size_t n)
{
	if (n < HUGE_PAGE)
		return calloc(n ? n : 1, 1);
	return map_aligned(round_up(n, SMALL_PAGE));
}

void ch_zeroed_free(void *p, size_t n)
{
	if (n < HUGE_PAGE)
		free(p);
	else if (p)
		munmap(p, round_up(n, SMALL_PAGE));
}

/* ------------------------------------------------------------------ */
/* Slabs                                                                */

struct ch_slab {
	uint8_t *base;
	size_t size, used;
	unsigned live; /* allocations not yet released */
};

struct ch_slabs {
	pthread_mutex_t lock;
	struct ch_slab *current; /* the one allocations are cut from */
	size_t mapped;		 /* bytes of every slab not unmapped */
};

struct ch_slabs *ch_slabs_new(void)
{
	struct ch_slabs *s = calloc(1, sizeof(*s));
	if (s)
		pthread_mutex_init(&s->lock, NULL);
	return s;
}

static void unmap_slab(struct ch_slabs *s, struct ch_slab *slab)
{
	munmap(slab->base, slab->size);
	s->mapped -= slab->size;
	free(slab);
}

static struct ch_slab *new_slab(struct ch_slabs *s, size_t size)
{
	struct ch_slab *slab = calloc(1, sizeof(*slab));
	if (slab && !(slab->base = map_huge(size))) {
		free(slab);
		return NULL;
	}
	if (slab) {
		slab->size = size;
		s->mapped += size;
	}
	return slab;
}

/* Requests of more than half a slab get a slab of their own: two blocks
 * of the usual 1 MiB share one huge page, a larger one wastes less than
 * 2 MiB. */
void *ch_slab_alloc(struct ch_slabs *s, size_t n, struct ch_slab **from)
{
	struct ch_slab *slab = NULL;
	n = round_up(n ? n : 1, 64);
	pthread_mutex_lock(&s->lock);
	if (n > HUGE_PAGE / 2) {
		slab = new_slab(s, round_up(n, HUGE_PAGE));
	} else {
		slab = s->current;
		if (slab && !slab->live)
			slab->used = 0; /* all given back: cut from the start */
		if (!slab || slab->size - slab->used < n) {
			if (slab && !slab->live)
				unmap_slab(s, slab);
			slab = s->current = new_slab(s, HUGE_PAGE);
		}
	}
	void *p = NULL;
	if (slab) {
		p = slab->base + slab->used;
		slab->used += n;
		slab->live++;
	}
	pthread_mutex_unlock(&s->lock);
	*from = slab;
	return p;
}

void ch_slab_release(struct ch_slabs *s, struct ch_slab *slab)
{
	if (!slab)
		return;
	pthread_mutex_lock(&s->lock);
	if (--slab->live == 0 && slab != s->current)
		unmap_slab(s, slab);
	pthread_mutex_unlock(&s->lock);
}

size_t ch_slabs_mapped(struct ch_slabs *s)
{
	pthread_mutex_lock(&s->lock);
	size_t m = s->mapped;
	pthread_mutex_unlock(&s->lock);
	return m;
}

void ch_slabs_free(struct ch_slabs *s)
{
	if (!s)
		return;
	if (s->current)
		unmap_slab(s, s->current);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
