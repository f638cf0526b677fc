/* test_pages.c - common/pages.c: the slabs that hold decoded blocks give
 * their memory back when their last allocation goes, and count what they
 * keep mapped; byte buffers of a MiB and more (common/util.c) are whole
 * 2 MiB pages. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "unit.h"

#define MIB ((size_t)1 << 20)

/* Two blocks of the usual 1 MiB share a 2 MiB slab; a third opens a
 * second one; the first slab goes when both of its blocks do. */
static void two_blocks_a_slab(void)
{
	struct ch_slabs *s = ch_slabs_new();
	struct ch_slab *a, *b, *c;
	if (!CHECK(s != NULL))
		return;
	uint8_t *pa = ch_slab_alloc(s, 1000000, &a);
	uint8_t *pb = ch_slab_alloc(s, 1000000, &b);
	if (!CHECK(pa && pb))
		return;
	CHECK(a == b);
	CHECK(pb >= pa + 1000000);
	CHECK_EQ_U64(ch_slabs_mapped(s), 2 * MIB);
	CHECK((uintptr_t)pa % (2 * MIB) == 0); /* where a huge page can be */
	memset(pa, 1, 1000000);
	memset(pb, 2, 1000000);
	uint8_t *pc = ch_slab_alloc(s, 1000000, &c);
	if (!CHECK(pc != NULL))
		return;
	CHECK(c != a);
	CHECK_EQ_U64(ch_slabs_mapped(s), 4 * MIB);
	ch_slab_release(s, a);
	CHECK_EQ_U64(ch_slabs_mapped(s), 4 * MIB); /* b still lives there */
	CHECK(pb[999999] == 2);
	ch_slab_release(s, b);
	CHECK_EQ_U64(ch_slabs_mapped(s), 2 * MIB);
	ch_slab_release(s, c);
	/* the current slab stays for the next allocation, cut from its start */
	CHECK_EQ_U64(ch_slabs_mapped(s), 2 * MIB);
	struct ch_slab *d;
	CHECK(ch_slab_alloc(s, 4096, &d) == pc);
	ch_slab_release(s, d);
	ch_slabs_free(s);
}

/* More than half a slab: a slab of its own, rounded up to 2 MiB, gone
 * with its allocation. */
static void large_alone(void)
{
	struct ch_slabs *s = ch_slabs_new();
	struct ch_slab *small, *big;
	if (!CHECK(s != NULL))
		return;
	uint8_t *p = ch_slab_alloc(s, 100, &small);
	uint8_t *q = ch_slab_alloc(s, 5 * MIB, &big);
	if (!CHECK(p && q))
		return;
	CHECK(small != big);
	CHECK_EQ_U64(ch_slabs_mapped(s), 2 * MIB + 6 * MIB);
	memset(q, 7, 5 * MIB);
	ch_slab_release(s, big);
	CHECK_EQ_U64(ch_slabs_mapped(s), 2 * MIB);
	/* small is in the current slab: a new small one goes after it */
	struct ch_slab *next;
	uint8_t *r = ch_slab_alloc(s, 100, &next);
	CHECK(next == small);
	CHECK(r == p + 128); /* sizes rounded up to 64 */
	ch_slab_release(s, small);
	ch_slab_release(s, next);
	ch_slabs_free(s);
}

/* A byte buffer growing past 1 MiB moves to 2 MiB-aligned memory, a
 * whole number of 2 MiB, its bytes kept; below that, malloc's. */
static void big_buffers_whole_huge_pages(void)
{
	struct ch_buf b = { 0 };
	struct ch_error err;
	uint8_t chunk[4096];
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (uint8_t)(i * 7 + 3);
	for (size_t n = 0; n < 300; n++) /* 1.2 MB, 4 KiB at a time */
		if (!CHECK(ch_buf_append(&b, chunk, sizeof(chunk), &err) == 0))
			break;
	CHECK((uintptr_t)b.data % (2 * MIB) == 0);
	CHECK(b.cap % (2 * MIB) == 0 && b.cap >= b.len);
	int same = 1;
	for (size_t at = 0; at < b.len; at++)
		same &= b.data[at] == chunk[at % sizeof(chunk)];
	CHECK(same);
	/* and from nothing straight to a frame's size */
	struct ch_buf f = { 0 };
	CHECK(ch_buf_reserve(&f, 9636160, &err) == 0);
	CHECK((uintptr_t)f.data % (2 * MIB) == 0 && f.cap % (2 * MIB) == 0);
	memset(f.data, 1, 9636160);
	ch_buf_release(&f);
	free(b.data); /* callers that take the data free it */
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(two_blocks_a_slab),
		UNIT(large_alone),
		UNIT(big_buffers_whole_huge_pages),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
