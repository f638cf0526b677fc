/*
 * fuzz_shard.c - libFuzzer target for the shard reader.
 *
 * Whatever the bytes, ch_shard_open either refuses them with a message or
 * yields a shard whose every sample, field, block and key lookup is safe
 * to use: man/chute-shard.5 (VALIDATION) promises that a checked index
 * never points outside the file.  The sanitizers turn any broken promise
 * into a crash.
 *
 * Build and run (scripts/run-fuzz.sh does the same):
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -Ilib \
 *     -fsanitize=fuzzer,address,undefined \
 *     $(pkg-config --cflags libarchive libzstd libxxhash jansson) \
 *     tests/fuzz/fuzz_shard.c lib/\*.c -o build-fuzz/fuzz_shard \
 *     $(pkg-config --libs libarchive libzstd libxxhash jansson) -lpthread
 *   build-fuzz/fuzz_shard -max_len=65536 CORPUS_DIR
 * Real shards (from `chute pack`) make the best seeds: random bytes rarely
 * get past the header hash.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chute.h"

/* The reader opens shards by path, so each input goes through one memory
 * file, created once and reused: /proc/self/fd/N names it. */
static int input_fd = -1;
static char input_path[64];

static int write_input(const uint8_t *data, size_t size)
{
	if (input_fd < 0) {
		input_fd = memfd_create("fuzz_shard.chs", MFD_CLOEXEC);
		if (input_fd < 0)
			return -1;
		snprintf(input_path, sizeof input_path, "/proc/self/fd/%d",
			 input_fd);
	}
	if (ftruncate(input_fd, 0) < 0)
		return -1;
	size_t done = 0;
	while (done < size) {
		ssize_t n = pwrite(input_fd, data + done, size - done,
				   (off_t)done);
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Every sample and field descriptor, with the invariants the API states. */
static void walk_index(const struct ch_shard *sh)
{
	uint64_t n = ch_shard_sample_count(sh);
	uint32_t nblocks = ch_shard_block_count(sh);

	for (uint64_t i = 0; i < n; i++) {
		struct ch_sample_info s;
		ch_shard_sample(sh, i, &s);
		if (s.block >= nblocks || s.key_len == 0 || s.nfields == 0)
			__builtin_trap();
		/* touch the key's bytes so ASan sees any overrun */
		volatile uint8_t sum = 0;
		for (size_t k = 0; k < s.key_len; k++)
			sum += (uint8_t)s.key[k];
		uint64_t total = 0;
		for (uint32_t f = 0; f < s.nfields; f++) {
			struct ch_field_info fi;
			ch_shard_field(sh, i, f, &fi);
			if (fi.offset != total)
				__builtin_trap();
			sum += (uint8_t)strlen(fi.name);
			total += fi.size;
		}
		if (total != s.size)
			__builtin_trap();
		(void)sum;
		/* every key must find its own sample */
		if (ch_shard_find(sh, s.key, s.key_len) != (int64_t)i)
			__builtin_trap();
	}
	for (uint32_t b = 0; b < nblocks; b++) {
		struct ch_block_stat st;
		ch_shard_block(sh, b, &st);
	}
}

/* Keys that exist nowhere, around the edges of the byte order. */
static void find_absent(const struct ch_shard *sh)
{
	static const char *const keys[] = { "", "a", "zzzz", "\xff\xff",
					    "\x01", "n0/x" };
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
		(void)ch_shard_find(sh, keys[k], strlen(keys[k]));
	static char big[70000]; /* longer than any key can be */
	memset(big, 'k', sizeof big);
	(void)ch_shard_find(sh, big, sizeof big);
}

/* Reads every block and every sample; errors are fine, crashes are not. */
static void read_all(const struct ch_shard *sh)
{
	struct ch_block_reader *r = ch_block_reader_new();
	struct ch_error err = { .msg = "" };
	if (!r)
		return;
	for (uint32_t b = 0; b < ch_shard_block_count(sh); b++) {
		const uint8_t *data;
		size_t size;
		if (ch_block_read(r, sh, b, &data, &size, &err) == 0 &&
		    size > 0) {
			volatile uint8_t x = data[0] ^ data[size - 1];
			(void)x;
		}
	}
	for (uint64_t i = 0; i < ch_shard_sample_count(sh); i++) {
		const uint8_t *data;
		if (ch_sample_read(r, sh, i, &data, &err) == 0)
			(void)ch_sample_hash(sh, i, data);
	}
	ch_block_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ch_shard *sh = NULL;
	struct ch_error err = { .msg = "" };

	if (write_input(data, size) < 0)
		return 0;
	if (ch_shard_open(&sh, input_path, &err) < 0) {
		/* a refusal must say why */
		if (err.msg[0] == '\0')
			__builtin_trap();
		return 0;
	}
	if (ch_shard_file_size(sh) != size)
		__builtin_trap();
	walk_index(sh);
	find_absent(sh);
	read_all(sh);
	ch_shard_close(sh);
	return 0;
}
