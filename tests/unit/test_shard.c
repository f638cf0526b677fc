/* test_shard.c - the shard writer and reader: round trip, lookup, and
 * that any damage to a shard is detected, never crashes the reader. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/shard.h"
#include "pack/catalog.h"
#include "unit.h"

static char dir[] = "/tmp/chute-test-shard-XXXXXX";

struct sample {
	const char *key;
	const char *names[2];
	uint8_t *data[2];
	uint64_t sizes[2];
	uint32_t nfields;
};

static uint8_t *pseudo_random(size_t n, uint32_t seed)
{
	uint8_t *p = malloc(n);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
	return p;
}

static uint8_t *text(size_t n)
{
	uint8_t *p = malloc(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)"the quick brown fox "[i % 20];
	return p;
}

/* Samples: "a" (random jpg + text cls), "b" (text), "c" (random jpg). */
static struct sample samples[3];

static void make_samples(void)
{
	samples[0] = (struct sample){ "a", { "cls", "jpg" },
				      { text(3), pseudo_random(9000, 1) },
				      { 3, 9000 }, 2 };
	samples[1] = (struct sample){ "b", { "txt" }, { text(5000) }, { 5000 }, 1 };
	samples[2] = (struct sample){ "c", { "jpg" }, { pseudo_random(7000, 2) },
				      { 7000 }, 1 };
}

/* Writes samples 0..2 as blocks {0,1} and {2}, optionally with a dict. */
static int write_shard(const char *path, const void *dict, size_t dict_size)
{
	struct ch_error err;
	struct ch_shard_writer *w;
	struct ch_block_encoder *enc = ch_block_encoder_new(3, dict, dict_size);
	if (ch_shard_writer_open(&w, path, dict, dict_size, &err) < 0) {
		unit_note("%s", err.msg);
		return -1;
	}
	size_t groups[2][2] = { { 0, 2 }, { 2, 1 } };
	for (int g = 0; g < 2; g++) {
		uint8_t raw[20000];
		struct ch_sample_desc descs[2];
		struct ch_field_desc fields[2][2];
		uint64_t off = 0;
		for (size_t k = 0; k < groups[g][1]; k++) {
			struct sample *s = &samples[groups[g][0] + k];
			uint64_t start = off;
			for (uint32_t f = 0; f < s->nfields; f++) {
				memcpy(raw + off, s->data[f], s->sizes[f]);
				fields[k][f] = (struct ch_field_desc){ s->names[f],
								      s->sizes[f] };
				off += s->sizes[f];
			}
			descs[k] = (struct ch_sample_desc){
				.key = s->key, .key_len = strlen(s->key),
				.hash = 0, .offset = start,
				.nfields = s->nfields, .fields = fields[k] };
		}
		const uint8_t *stored;
		size_t stored_size;
		uint32_t codec;
		struct ch_encoded_block blk;
		if (ch_block_encode(enc, raw, off, &stored, &stored_size, &codec,
				    &err) < 0)
			return -1;
		blk = (struct ch_encoded_block){ stored, stored_size, off, codec,
						 groups[g][1], descs };
		if (ch_shard_writer_add(w, &blk, &err) < 0) {
			unit_note("%s", err.msg);
			return -1;
		}
	}
	struct ch_shard_summary sum;
	int rc = ch_shard_writer_finish(w, &sum, &err);
	ch_shard_writer_free(w);
	ch_block_encoder_free(enc);
	return rc;
}

static char *path_in_dir(const char *name)
{
	char *p = malloc(strlen(dir) + strlen(name) + 2);
	sprintf(p, "%s/%s", dir, name);
	return p;
}

static void round_trip(void)
{
	struct ch_error err;
	struct ch_shard *sh;
	char *path = path_in_dir("rt.chs");
	if (!CHECK(write_shard(path, NULL, 0) == 0))
		goto out;
	if (!CHECK(ch_shard_open(&sh, path, &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	CHECK_EQ_U64(ch_shard_sample_count(sh), 3);
	CHECK_EQ_U64(ch_shard_block_count(sh), 2);
	struct ch_block_reader *r = ch_block_reader_new();
	for (uint64_t i = 0; i < 3; i++) {
		struct ch_sample_info si;
		const uint8_t *data;
		ch_shard_sample(sh, i, &si);
		CHECK(si.key_len == 1 && si.key[0] == samples[i].key[0]);
		CHECK_EQ_U64(si.nfields, samples[i].nfields);
		if (!CHECK(ch_sample_read(r, sh, i, &data, &err) == 0))
			continue;
		for (uint32_t f = 0; f < si.nfields; f++) {
			struct ch_field_info fi;
			ch_shard_field(sh, i, f, &fi);
			CHECK_STR(fi.name, samples[i].names[f]);
			CHECK_EQ_U64(fi.size, samples[i].sizes[f]);
			CHECK(memcmp(data + fi.offset, samples[i].data[f],
				     fi.size) == 0);
		}
		CHECK_EQ_U64(ch_shard_find(sh, samples[i].key, 1), i);
	}
	CHECK(ch_shard_find(sh, "zz", 2) == -1);
	CHECK(ch_shard_find(sh, "", 0) == -1);
	struct ch_block_stat b0, b1;
	ch_shard_block(sh, 0, &b0);
	ch_shard_block(sh, 1, &b1);
	CHECK_EQ_U64(b1.codec, CH_CODEC_RAW); /* random bytes: not compressed */
	CHECK_EQ_U64(b1.offset, b0.offset + b0.stored_size);
	ch_block_reader_free(r);
	ch_shard_close(sh);
out:
	unlink(path);
	free(path);
}

/* A shard of n one-field samples "kNNNNN", 8 to a block: an index of many
 * pages. */
static int write_many(const char *path, uint32_t n)
{
	struct ch_error err;
	struct ch_shard_writer *w;
	struct ch_block_encoder *enc = ch_block_encoder_new(3, NULL, 0);
	if (ch_shard_writer_open(&w, path, NULL, 0, &err) < 0) {
		unit_note("%s", err.msg);
		return -1;
	}
	int rc = 0;
	char keys[8][16];
	for (uint32_t first = 0; rc == 0 && first < n; first += 8) {
		uint8_t raw[8 * 16];
		struct ch_sample_desc descs[8];
		struct ch_field_desc fields[8];
		uint32_t k = 0;
		for (; k < 8 && first + k < n; k++) {
			snprintf(keys[k], sizeof(keys[k]), "k%05u", first + k);
			memset(raw + 16 * k, (int)((first + k) % 251), 16);
			fields[k] = (struct ch_field_desc){ "bin", 16 };
			descs[k] = (struct ch_sample_desc){
				.key = keys[k], .key_len = strlen(keys[k]),
				.offset = 16 * k, .nfields = 1,
				.fields = &fields[k] };
		}
		const uint8_t *stored;
		size_t stored_size;
		uint32_t codec;
		struct ch_encoded_block blk;
		rc = ch_block_encode(enc, raw, 16 * k, &stored, &stored_size,
				     &codec, &err);
		blk = (struct ch_encoded_block){ stored, stored_size, 16 * k,
						 codec, k, descs };
		if (rc == 0)
			rc = ch_shard_writer_add(w, &blk, &err);
	}
	struct ch_shard_summary sum;
	if (rc == 0)
		rc = ch_shard_writer_finish(w, &sum, &err);
	if (rc < 0)
		unit_note("%s", err.msg);
	ch_shard_writer_free(w);
	ch_block_encoder_free(enc);
	return rc;
}

#define MANY 3001
#define READERS 4

struct lazy_reader {
	const struct ch_shard *lazy, *whole;
	uint32_t start;
	int bad;
};

/* Prepares and reads every sample, in an order of its own, comparing
 * with the shard opened whole. */
static void *read_lazily(void *arg)
{
	struct lazy_reader *lr = arg;
	struct ch_block_reader *r = ch_block_reader_new();
	struct ch_error err;
	for (uint32_t k = 0; k < MANY && !lr->bad; k++) {
		uint64_t i = (lr->start + (uint64_t)k * 389) % MANY;
		struct ch_sample_info a, b;
		struct ch_field_info fa, fb;
		const uint8_t *data;
		if (ch_shard_prepare(lr->lazy, i, &err) < 0 ||
		    ch_sample_read(r, lr->lazy, i, &data, &err) < 0) {
			lr->bad = 1;
			break;
		}
		ch_shard_sample(lr->lazy, i, &a);
		ch_shard_sample(lr->whole, i, &b);
		ch_shard_field(lr->lazy, i, 0, &fa);
		ch_shard_field(lr->whole, i, 0, &fb);
		lr->bad = a.key_len != b.key_len ||
			  memcmp(a.key, b.key, a.key_len) || a.hash != b.hash ||
			  a.block != b.block || a.offset != b.offset ||
			  strcmp(fa.name, fb.name) || fa.size != fb.size ||
			  data[0] != i % 251;
	}
	ch_block_reader_free(r);
	return NULL;
}

/* A lazy open decodes index pages as samples are prepared, from several
 * threads at once, and sees what a whole open sees. */
static void lazy_open_reads_like_a_whole_one(void)
{
	struct ch_error err;
	struct ch_shard *whole = NULL, *lazy = NULL;
	char *path = path_in_dir("many.chs");
	if (!CHECK(write_many(path, MANY) == 0) ||
	    !CHECK(ch_shard_open(&whole, path, &err) == 0) ||
	    !CHECK(ch_shard_open_flags(&lazy, path, NULL, CH_SHARD_LAZY,
				       &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	CHECK_EQ_U64(ch_shard_sample_count(lazy), MANY);
	CHECK(ch_shard_prepare(lazy, MANY, &err) < 0);
	struct lazy_reader lr[READERS];
	pthread_t t[READERS];
	for (int k = 0; k < READERS; k++) {
		lr[k] = (struct lazy_reader){ lazy, whole, (uint32_t)k * 977, 0 };
		pthread_create(&t[k], NULL, read_lazily, &lr[k]);
	}
	for (int k = 0; k < READERS; k++) {
		pthread_join(t[k], NULL);
		CHECK(!lr[k].bad);
	}
	/* once all is checked, lookups by key work as on a whole open */
	if (CHECK(ch_shard_load_index(lazy, &err) == 0))
		CHECK_EQ_U64(ch_shard_find(lazy, "k01234", 6), 1234);
out:
	ch_shard_close(whole);
	ch_shard_close(lazy);
	unlink(path);
	free(path);
}

/* Opens the shard and reads every block; 0 only if all of it is sound. */
static int read_everything(const char *path, unsigned flags)
{
	struct ch_error err;
	struct ch_shard *sh;
	if (ch_shard_open_flags(&sh, path, NULL, flags, &err) < 0)
		return -1;
	struct ch_block_reader *r = ch_block_reader_new();
	int rc = 0;
	/* what a stream checks of a lazy shard: the samples it reads */
	for (uint64_t i = 0; i < ch_shard_sample_count(sh); i++)
		if (ch_shard_prepare(sh, i, &err) < 0)
			rc = -1;
	for (uint32_t b = 0; b < ch_shard_block_count(sh); b++) {
		const uint8_t *data;
		size_t size;
		if (ch_block_read(r, sh, b, &data, &size, &err) < 0)
			rc = -1;
	}
	ch_block_reader_free(r);
	ch_shard_close(sh);
	return rc;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	rewind(f);
	uint8_t *p = malloc(*n);
	if (fread(p, 1, *n, f) != *n)
		*n = 0;
	fclose(f);
	return p;
}

static void spit(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	fwrite(p, 1, n, f);
	fclose(f);
}

/* Every bit of a shard is covered by a checksum: flipping any one byte
 * makes opening or reading it fail (with a message, not a crash). */
/* Flips each byte of the shard at path in turn: every flip must fail an
 * open with these flags or a read of some block or sample. */
static size_t flips_missed(const char *path, unsigned flags)
{
	char *bad = path_in_dir("bad.chs");
	size_t n, missed = 0;
	uint8_t *orig = slurp(path, &n);
	CHECK(read_everything(path, flags) == 0);
	for (size_t i = 0; i < n; i++) {
		orig[i] ^= 0x10;
		spit(bad, orig, n);
		orig[i] ^= 0x10;
		if (read_everything(bad, flags) == 0 && missed++ < 5)
			unit_note("flip at byte %zu went unnoticed", i);
	}
	free(orig);
	unlink(bad);
	free(bad);
	return missed;
}

static void every_flipped_byte_is_detected(void)
{
	char *path = path_in_dir("flip.chs"), *many = path_in_dir("pages.chs");
	if (CHECK(write_shard(path, NULL, 0) == 0))
		CHECK_EQ_U64(flips_missed(path, 0), 0);
	/* an index of several pages, opened whole and lazily */
	if (CHECK(write_many(many, 400) == 0)) {
		CHECK_EQ_U64(flips_missed(many, 0), 0);
		CHECK_EQ_U64(flips_missed(many, CH_SHARD_LAZY), 0);
	}
	unlink(path);
	unlink(many);
	free(path);
	free(many);
}

static void every_truncation_is_detected(void)
{
	char *path = path_in_dir("trunc.chs"), *bad = path_in_dir("tbad.chs");
	size_t n, missed = 0;
	if (!CHECK(write_shard(path, NULL, 0) == 0))
		goto out;
	uint8_t *orig = slurp(path, &n);
	for (size_t len = 0; len < n; len += 7) {
		spit(bad, orig, len);
		missed += read_everything(bad, 0) == 0;
	}
	CHECK_EQ_U64(missed, 0);
	free(orig);
out:
	unlink(path);
	unlink(bad);
	free(path);
	free(bad);
}

static void existing_file_is_not_overwritten(void)
{
	struct ch_error err;
	struct ch_shard_writer *w;
	char *path = path_in_dir("exists.chs");
	spit(path, (const uint8_t *)"keep", 4);
	CHECK(ch_shard_writer_open(&w, path, NULL, 0, &err) == -1);
	size_t n;
	uint8_t *p = slurp(path, &n);
	CHECK(n == 4 && memcmp(p, "keep", 4) == 0);
	free(p);
	unlink(path);
	free(path);
}

static void encoder_skips_incompressible_data(void)
{
	struct ch_error err;
	struct ch_block_encoder *e = ch_block_encoder_new(3, NULL, 0);
	uint8_t *rnd = pseudo_random(1 << 20, 7), *txt = text(1 << 20);
	const uint8_t *out;
	size_t n;
	uint32_t codec;
	CHECK(ch_block_encode(e, rnd, 1 << 20, &out, &n, &codec, &err) == 0);
	CHECK_EQ_U64(codec, CH_CODEC_RAW);
	CHECK(out == rnd && n == 1 << 20);
	CHECK(ch_block_encode(e, txt, 1 << 20, &out, &n, &codec, &err) == 0);
	CHECK_EQ_U64(codec, CH_CODEC_ZSTD);
	CHECK(n < 1 << 16);
	free(rnd);
	free(txt);
	ch_block_encoder_free(e);
}

static void keys_split_like_webdataset(void)
{
	struct ch_error err;
	char *k = NULL, *f = NULL;
	CHECK(ch_split_key("a/b/c.seg.png", &k, &f, "t", &err) == 0);
	CHECK_STR(k, "a/b/c");
	CHECK_STR(f, "seg.png");
	free(k);
	free(f);
	const char *bad[] = { "/abs/x.jpg", "../x.jpg", "a/../x.jpg", "a//x.jpg",
			      "./x.jpg", "noext", ".hidden", "x." };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		if (!CHECK(ch_split_key(bad[i], &k, &f, "t", &err) == -1))
			unit_note("accepted '%s'", bad[i]);
	}
}

static void sizes_parse_with_suffixes(void)
{
	uint64_t v;
	CHECK(ch_parse_size("123", &v) == 0 && v == 123);
	CHECK(ch_parse_size("64K", &v) == 0 && v == 65536);
	CHECK(ch_parse_size("1.5M", &v) == 0 && v == 1572864);
	CHECK(ch_parse_size("2GiB", &v) == 0 && v == 2ull << 30);
	CHECK(ch_parse_size("", &v) == -1);
	CHECK(ch_parse_size("-1", &v) == -1);
	CHECK(ch_parse_size("12Q", &v) == -1);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(round_trip),
		UNIT(lazy_open_reads_like_a_whole_one),
		UNIT(every_flipped_byte_is_detected),
		UNIT(every_truncation_is_detected),
		UNIT(existing_file_is_not_overwritten),
		UNIT(encoder_skips_incompressible_data),
		UNIT(keys_split_like_webdataset),
		UNIT(sizes_parse_with_suffixes),
	};
	if (!mkdtemp(dir))
		return 2;
	make_samples();
	int rc = unit_run(tests, UNIT_COUNT(tests));
	rmdir(dir);
	return rc;
}
