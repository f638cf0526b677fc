/*
 * fuzz_shard.c - libFuzzer target for the shard reader.
 *
 * Whatever the bytes, ch_shard_open either refuses them with a message or
 * yields a shard whose every sample, field, block and key lookup is safe
 * to use: man/chute-shard.5 (VALIDATION) promises that a checked index
 * never points outside the file.  The sanitizers turn any broken promise
 * into a crash.
 *
 * Input: one mode byte, then the file.  Random changes almost never get
 * past the checksums, so with bit 0 of the mode byte set the target first
 * recomputes every checksum it can find (dictionary, header, blocks of a
 * raw index, pages of a paged one, index, footer): the structural checks
 * behind them are what needs fuzzing.  With it clear the bytes go in as
 * they are.  With bit 1 set the shard is opened lazily (CH_SHARD_LAZY),
 * as a stream opens it: each sample is used only once ch_shard_prepare
 * accepts it, and keys are looked up only once ch_shard_load_index has
 * checked the whole index.
 *
 * Beyond memory safety, the target also traps when an opened shard breaks
 * a rule the page's VALIDATION makes the reader enforce (keys not empty,
 * distinct and sorted, samples with at least one field).  Build with
 * -DFUZZ_PAGE_RULES=0 to look for crashes alone.
 *
 * Build and run (scripts/run-fuzz.sh does the same):
 *   clang -g -O1 -std=c11 -D_GNU_SOURCE -Ilib \
 *     -fsanitize=fuzzer,address,undefined \
 *     $(pkg-config --cflags libarchive libzstd libxxhash jansson) \
 *     tests/fuzz/fuzz_shard.c lib/\*.c -o build-fuzz/fuzz_shard \
 *     $(pkg-config --libs libarchive libzstd libxxhash jansson) -lpthread
 *   build-fuzz/fuzz_shard -max_len=65536 CORPUS_DIR
 * Seeds: real shards (from `chute pack`) behind a mode byte 0 or 1; shards
 * whose index is stored raw (index_codec 0) let mutations reach the index.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "chute.h"
#include "common/bytes.h"
#include "shard/format.h"

#ifndef FUZZ_PAGE_RULES
#define FUZZ_PAGE_RULES 1
#endif

/* Rewrites the hash of each frame of a paged index that fits; returns
 * the page table's hash, the footer's index hash. */
static uint64_t fix_pages(uint8_t *ix, uint64_t isize)
{
	if (isize < CHS_PAGE_TABLE_HEADER)
		return ch_hash64(ix, isize);
	uint64_t npages = ld32(ix + 4);
	uint64_t table = CHS_PAGE_TABLE_HEADER + CHS_PAGE_ENTRY_SIZE * npages;
	if (table > isize)
		return ch_hash64(ix, isize);
	uint64_t at = table;
	for (uint64_t p = 0; p < npages; p++) {
		uint8_t *e = ix + CHS_PAGE_TABLE_HEADER + CHS_PAGE_ENTRY_SIZE * p;
		uint64_t n = ld32(e);
		if (n > isize - at)
			break;
		st64(e + 8, ch_hash64(ix + at, n));
		at += n;
	}
	return ch_hash64(ix, table);
}

/* Rewrites the checksums of buf in place, innermost first, wherever the
 * offsets they need lie inside the buffer. */
static void fix_checksums(uint8_t *buf, size_t n)
{
	if (n < 2 * CHS_HEADER_SIZE)
		return;
	uint8_t *foot = buf + n - CHS_FOOTER_SIZE;
	uint64_t body = n - CHS_FOOTER_SIZE;
	uint64_t dict_size = ld64(buf + 16);
	if (dict_size <= body - CHS_HEADER_SIZE)
		st64(buf + 24, dict_size ? ch_hash64(buf + 64, dict_size) : 0);
	st64(buf + 56, ch_hash64(buf, 56));

	uint64_t ioff = ld64(foot), isize = ld64(foot + 8);
	if (ioff <= body && isize <= body - ioff &&
	    ld32(foot + 44) == CHS_INDEX_PAGED) {
		st64(foot + 24, fix_pages(buf + ioff, isize));
	} else if (ioff <= body && isize <= body - ioff) {
		uint8_t *ix = buf + ioff;
		if (ld32(foot + 44) == CHS_INDEX_RAW && isize >= 64) {
			uint64_t nb = ld32(ix + 16);
			for (uint64_t b = 0; b < nb && 64 + 40 * (b + 1) <= isize;
			     b++) {
				uint8_t *e = ix + 64 + 40 * b;
				uint64_t off = ld64(e), size = ld64(e + 8);
				if (off <= ioff && size <= ioff - off)
					st64(e + 24, ch_hash64(buf + off, size));
			}
		}
		st64(foot + 24, ch_hash64(ix, isize));
	}
	st64(foot + 48, ch_hash64(foot, 48));
}

/* The reader opens shards by path, so each input goes through one memory
 * file, created once and reused: /proc/self/fd/N names it. */
static int input_fd = -1;
static char input_path[64];

static int write_input(const uint8_t *data, size_t size, int fix)
{
	static uint8_t *copy;
	static size_t copy_cap;

	if (input_fd < 0) {
		input_fd = memfd_create("fuzz_shard.chs", MFD_CLOEXEC);
		if (input_fd < 0)
			return -1;
		snprintf(input_path, sizeof input_path, "/proc/self/fd/%d",
			 input_fd);
	}
	if (fix && size > 0) {
		if (size > copy_cap) {
			uint8_t *p = realloc(copy, size);
			if (!p)
				return -1;
			copy = p;
			copy_cap = size;
		}
		memcpy(copy, data, size);
		fix_checksums(copy, size);
		data = copy;
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
		if (s.block >= nblocks)
			__builtin_trap();
		if (FUZZ_PAGE_RULES && (s.key_len == 0 || s.nfields == 0))
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
		/* with distinct sorted keys, every key finds its own sample */
		int64_t found = ch_shard_find(sh, s.key, s.key_len);
		if (FUZZ_PAGE_RULES && found != (int64_t)i)
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

/* A lazy shard: each sample that ch_shard_prepare accepts must be as safe
 * as in a shard checked whole; then, once the whole index passes, so must
 * every key lookup. */
static void walk_lazy(struct ch_shard *sh)
{
	struct ch_block_reader *r = ch_block_reader_new();
	struct ch_error err = { .msg = "" };
	if (!r)
		return;
	for (uint64_t i = 0; i < ch_shard_sample_count(sh); i++) {
		struct ch_sample_info s;
		const uint8_t *data;
		if (ch_shard_prepare(sh, i, &err) < 0) {
			if (err.msg[0] == '\0')
				__builtin_trap();
			continue;
		}
		ch_shard_sample(sh, i, &s);
		volatile uint8_t sum = 0;
		for (size_t k = 0; k < s.key_len; k++)
			sum += (uint8_t)s.key[k];
		for (uint32_t f = 0; f < s.nfields; f++) {
			struct ch_field_info fi;
			ch_shard_field(sh, i, f, &fi);
			sum += (uint8_t)strlen(fi.name);
		}
		(void)sum;
		if (ch_sample_read(r, sh, i, &data, &err) == 0)
			(void)ch_sample_hash(sh, i, data);
	}
	ch_block_reader_free(r);
	if (ch_shard_load_index(sh, &err) == 0) {
		walk_index(sh);
		find_absent(sh);
	}
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

	if (size < 1)
		return 0;
	int fix = data[0] & 1, lazy = data[0] & 2;
	data++;
	size--;
	if (write_input(data, size, fix) < 0)
		return 0;
	if (ch_shard_open_flags(&sh, input_path, NULL, lazy ? CH_SHARD_LAZY : 0,
				&err) < 0) {
		/* a refusal must say why */
		if (err.msg[0] == '\0')
			__builtin_trap();
		return 0;
	}
	if (ch_shard_file_size(sh) != size)
		__builtin_trap();
	if (lazy) {
		walk_lazy(sh);
	} else {
		walk_index(sh);
		find_absent(sh);
		read_all(sh);
	}
	ch_shard_close(sh);
	return 0;
}
