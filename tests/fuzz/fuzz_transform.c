/*
 * fuzz_transform.c - libFuzzer target for the transforms of chute stream
 * (lib/transform*.c, lib/image_*.c): the bytes of a sample's field are
 * whatever a dataset holds, so no JPEG, PNG, .npy or label, however
 * broken, may crash the decoders, the resampler or the array ops.  Each
 * either refuses the bytes with a message or yields a value of exactly
 * the declared type.
 *
 * Input: one byte choosing the pipeline (its top bit: eval; the rest
 * modulo the number of pipelines, so that the seeds of the first eight
 * keep their pipelines as more are added) and one byte of seed, then the
 * field's bytes.  The sanitizers turn a broken promise into a crash; the
 * target also traps when a value's size is not its type's.
 *
 * Build and run (scripts/run-fuzz.sh does the same):
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -Ilib \
 *     -fsanitize=fuzzer,address,undefined \
 *     $(pkg-config --cflags libarchive libzstd libxxhash jansson libjpeg libpng) \
 *     tests/fuzz/fuzz_transform.c lib/\*.c -o build-fuzz/fuzz_transform \
 *     $(pkg-config --libs ...) -lpthread -lm
 * Seeds: small JPEGs (4:2:0, 4:4:4, gray, progressive) and PNGs (RGB,
 * palette, 16-bit, interlaced), .npy files and labels.  The bytes
 * pipelines (i to m) take any input as a field of some size; the fuzzer
 * reaches them by changing a seed's first byte.  m and n run the
 * geometric ops of H x W (x C) arrays; n of arrays of any shape a .npy
 * says (1-D, 4-D: refused with a message).
 */
#include <stdlib.h>
#include <string.h>

#include "transform/transform.h"

static const char *const specs[] = {
	"a: decode | random-resized-crop 24 | flip | layout chw",
	"b: decode gray | resize 17x9 | normalize 0.5 0.25 | dtype f16",
	"c: decode | center-crop 8 | flip 1",
	"d: decode | resize 40 | center-crop 32x16 | normalize imagenet",
	"e: decode | random-resized-crop 8 scale=0.01,1 ratio=1/10,10",
	"f: npy | pad 16 -1 | random-crop 8",
	"g: npy",
	"h: int",
	"i: bytes u8 4x4 | dtype f32",
	"j: bytes f16",
	"k: bytes i64 | dtype f16 | pad 8 | random-crop 4",
	"l: bytes u8 | pad 3",
	"m: bytes f16 2x3x2 | pad 2 -1 | random-crop 3x4 | flip | "
	"center-crop 2",
	"n: npy | flip | center-crop 2x1 | pad 1 7 | random-crop 2",
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static uint64_t expected_bytes(const struct ch_field_type *t)
{
	uint64_t n = ch_dtype_size(t->dtype);
	for (uint32_t d = 0; d < t->ndim; d++)
		n *= t->shape[d];
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ch_transforms *tx[2];
	static struct ch_transformer tr;
	static int ready;
	struct ch_error err;
	if (!ready) {
		for (int eval = 0; eval < 2; eval++)
			if (ch_transforms_parse((const char *const *)specs, NSPECS,
						eval, &tx[eval], &err) < 0)
				abort(); /* the specs above are valid */
		if (ch_transformer_init(&tr, &err) < 0)
			abort();
		ready = 1;
	}
	if (size < 2)
		return 0;
	const struct ch_pipeline *p =
		&tx[data[0] >> 7]->p[(data[0] & 0x7f) % NSPECS];
	struct ch_transform_key k = { data[1], data[0] & 1, data[1] >> 3 };
	struct ch_buf out = { 0 };
	struct ch_field_type type;
	if (ch_transform_run(&tr, p, &k, data + 2, size - 2, &out, &type,
			     &err) == 0) {
		if (out.len != expected_bytes(&type) || type.ndim > 4)
			__builtin_trap();
	} else if (!err.msg[0]) {
		__builtin_trap(); /* a refusal says why */
	}
	ch_buf_release(&out);
	return 0;
}
