/* test_copy.c - common/copy.c: a copy around the cache is a memcpy, byte
 * for byte, whatever the alignment and the size (the tail under 16 bytes,
 * the lines under 64), and writes nothing outside its destination. */
#include <stdint.h>
#include <string.h>

#include "common/internal.h"
#include "unit.h"

#define ROOM 5000

static void copies_every_byte_and_no_more(void)
{
	static const size_t sizes[] = { 0,   1,	  15,  16,  17,	 63,  64,
					65,  100, 127, 128, 784, 1000, 4113 };
	static uint8_t src[ROOM + 64], dst[ROOM + 192] __attribute__((
		aligned(64)));
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131 + 7);
	int bad = 0;
	for (size_t z = 0; z < sizeof(sizes) / sizeof(*sizes); z++)
		for (size_t da = 0; da < 64; da++)
			for (size_t sa = 0; sa < 16; sa += 5) {
				size_t n = sizes[z];
				memset(dst, 0xEE, sizeof(dst));
				ch_copy_cold(dst + 64 + da, src + sa, n);
				ch_copy_cold_done();
				bad += memcmp(dst + 64 + da, src + sa, n) != 0;
				for (size_t k = 0; k < 64 + da; k++)
					bad += dst[k] != 0xEE;
				for (size_t k = 64 + da + n; k < sizeof(dst);
				     k++)
					bad += dst[k] != 0xEE;
			}
	CHECK_EQ_U64(bad, 0);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(copies_every_byte_and_no_more),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
