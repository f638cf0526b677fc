/*
 * test_manifest.c - manifests: round trip, the id rule, and the checks
 * ch_manifest_parse makes (man/chute-manifest.5).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "chute.h"
#include "unit.h"

static char tmp_dir[4096];

static const char *tmp_path(const char *name)
{
	static char path[sizeof(tmp_dir) + 512];

	snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
	return path;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		abort();
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		abort();
	return p;
}

/* A small but complete manifest; its numbers are distinct so that tests
 * can edit one of them in the text. */
static void sample_manifest(struct ch_manifest *m)
{
	memset(m, 0, sizeof(*m));
	m->name = xstrdup("ds");
	m->chute_version = xstrdup(CH_VERSION);
	m->samples = 5;
	m->bytes = 1234;
	m->shard_bytes = 777 + 555;

	m->nshards = 2;
	m->shards = xcalloc(2, sizeof(*m->shards));
	m->shards[0] = (struct ch_manifest_shard){
		xstrdup("shards/ds-000000.chs"), 777,
		{ 0x0123456789abcdefULL, 0xfedcba9876543210ULL }, 3, 0,
		{ 5, 6 }, 1
	};
	m->shards[1] = (struct ch_manifest_shard){
		xstrdup("shards/ds-000001.chs"), 555, { 1, 2 }, 2, 3, { 7, 8 }, 1
	};

	m->nfields = 2;
	m->fields = xcalloc(2, sizeof(*m->fields));
	m->fields[0] = (struct ch_manifest_field){ xstrdup("cls"), 5, 10 };
	m->fields[1] = (struct ch_manifest_field){ xstrdup("jpg"), 4, 1224 };

	m->nclasses = 2;
	m->classes = xcalloc(2, sizeof(char *));
	m->classes[0] = xstrdup("cat");
	m->classes[1] = xstrdup("dog");

	m->nsources = 2;
	m->sources = xcalloc(2, sizeof(char *));
	m->sources[0] = xstrdup("photos/");
	m->sources[1] = xstrdup("-");

	m->options = (struct ch_manifest_options){
		.shard_bytes = 256 << 20, .shard_samples = 0,
		.block_size = 1 << 20,	  .level = 3,
		.dict = 0,		  .keep_order = 1,
		.label_from = xstrdup("dir"),
	};
}

/* One split of add_splits: its path follows from its name and hash. */
static struct ch_manifest_split make_split(const char *name, uint64_t samples,
					   uint64_t hash_high, double fraction)
{
	struct ch_manifest_split sp = { 0 };
	char hex[33], path[96];

	sp.name = xstrdup(name);
	sp.samples = samples;
	sp.bytes = 8 * samples;
	sp.hash = (struct ch_hash128){ hash_high, 0x1111111111111111ULL };
	sp.fraction = fraction;
	ch_hash128_hex(sp.hash, hex);
	snprintf(path, sizeof(path), "splits/%s-%.16s.ids", name, hex);
	sp.path = xstrdup(path);
	return sp;
}

/* Splits of sample_manifest's 5 samples: test 1, train 3, val 1. */
static void add_splits(struct ch_manifest *m)
{
	m->split_rule.seed = 7;
	m->split_rule.group = xstrdup("^([a-z]+)/");
	m->nsplits = 3;
	m->splits = xcalloc(3, sizeof(*m->splits));
	m->splits[0] = make_split("test", 1, 0xaaaa000000000001ULL, 0.2);
	m->splits[1] = make_split("train", 3, 0xbbbb000000000002ULL, 0.6);
	m->splits[2] = make_split("val", 1, 0xcccc000000000003ULL, 0.2);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;
	FILE *mem;

	if (!f)
		return NULL;
	mem = open_memstream(&buf, &cap);
	for (int c; mem && (c = fgetc(f)) != EOF;)
		fputc(c, mem);
	if (mem)
		fclose(mem);
	fclose(f);
	return buf;
}

/* A copy of text with the first `from` replaced by `to`; NULL if absent. */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = text ? strstr(text, from) : NULL;
	char *out;

	if (!at)
		return NULL;
	if (asprintf(&out, "%.*s%s%s", (int)(at - text), text, to,
		     at + strlen(from)) < 0)
		abort();
	return out;
}

/* The text of sample_manifest (with_splits: and add_splits) as
 * ch_manifest_write stores it. */
static char *manifest_text(int with_splits)
{
	struct ch_manifest m;
	struct ch_error err;
	const char *path = tmp_path("sample.json");
	char *text = NULL;

	sample_manifest(&m);
	if (with_splits)
		add_splits(&m);
	if (CHECK(ch_manifest_write(&m, path, &err) == 0))
		text = slurp(path);
	else
		unit_note("%s", err.msg);
	ch_manifest_release(&m);
	return text;
}

static char *sample_text(void)
{
	return manifest_text(0);
}

static int parse_text(struct ch_manifest *m, const char *text,
		      struct ch_error *err)
{
	return ch_manifest_parse(m, text, strlen(text), "mem.json", err);
}

/* Files in tmp_dir, to see that no temporary one is left behind. */
static int count_files(void)
{
	DIR *d = opendir(tmp_dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static void clear_dir(void)
{
	DIR *d = opendir(tmp_dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlink(tmp_path(e->d_name));
	if (d)
		closedir(d);
}

/* ------------------------------------------------------------------ */

static void check_same(const struct ch_manifest *a, const struct ch_manifest *b)
{
	CHECK_STR(a->id, b->id);
	CHECK_STR(a->name, b->name);
	CHECK_STR(a->parent, b->parent);
	CHECK_STR(a->chute_version, b->chute_version);
	CHECK_EQ_U64(a->samples, b->samples);
	CHECK_EQ_U64(a->bytes, b->bytes);
	CHECK_EQ_U64(a->shard_bytes, b->shard_bytes);
	if (CHECK_EQ_U64(a->nshards, b->nshards))
		for (size_t i = 0; i < a->nshards; i++) {
			const struct ch_manifest_shard *x = &a->shards[i];
			const struct ch_manifest_shard *y = &b->shards[i];

			CHECK_STR(x->path, y->path);
			CHECK_EQ_U64(x->bytes, y->bytes);
			CHECK_EQ_U64(x->hash.high, y->hash.high);
			CHECK_EQ_U64(x->hash.low, y->hash.low);
			CHECK_EQ_U64(x->samples, y->samples);
			CHECK_EQ_U64(x->first_sample, y->first_sample);
			CHECK(x->has_seal == y->has_seal);
			CHECK_EQ_U64(x->seal.high, y->seal.high);
			CHECK_EQ_U64(x->seal.low, y->seal.low);
		}
	if (CHECK_EQ_U64(a->nfields, b->nfields))
		for (size_t i = 0; i < a->nfields; i++) {
			CHECK_STR(a->fields[i].name, b->fields[i].name);
			CHECK_EQ_U64(a->fields[i].count, b->fields[i].count);
			CHECK_EQ_U64(a->fields[i].bytes, b->fields[i].bytes);
		}
	if (CHECK_EQ_U64(a->nclasses, b->nclasses))
		for (size_t i = 0; i < a->nclasses; i++)
			CHECK_STR(a->classes[i], b->classes[i]);
	if (CHECK_EQ_U64(a->nsources, b->nsources))
		for (size_t i = 0; i < a->nsources; i++)
			CHECK_STR(a->sources[i], b->sources[i]);
	CHECK_EQ_U64(a->options.shard_bytes, b->options.shard_bytes);
	CHECK_EQ_U64(a->options.shard_samples, b->options.shard_samples);
	CHECK_EQ_U64(a->options.block_size, b->options.block_size);
	CHECK(a->options.level == b->options.level);
	CHECK(a->options.dict == b->options.dict);
	CHECK(a->options.keep_order == b->options.keep_order);
	CHECK_STR(a->options.label_from, b->options.label_from);
	if (!CHECK_EQ_U64(a->nsplits, b->nsplits) || a->nsplits == 0)
		return;
	CHECK_EQ_U64(a->split_rule.seed, b->split_rule.seed);
	CHECK_STR(a->split_rule.group, b->split_rule.group);
	for (size_t i = 0; i < a->nsplits; i++) {
		const struct ch_manifest_split *x = &a->splits[i];
		const struct ch_manifest_split *y = &b->splits[i];

		CHECK_STR(x->name, y->name);
		CHECK_STR(x->path, y->path);
		CHECK_EQ_U64(x->samples, y->samples);
		CHECK_EQ_U64(x->bytes, y->bytes);
		CHECK_EQ_U64(x->hash.high, y->hash.high);
		CHECK_EQ_U64(x->hash.low, y->hash.low);
		CHECK(x->fraction == y->fraction);
	}
}

static void round_trip(void)
{
	struct ch_manifest m, r;
	struct ch_error err;
	char *first, *second;

	clear_dir();
	sample_manifest(&m);
	if (!CHECK(ch_manifest_write(&m, tmp_path("a.json"), &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	if (!CHECK(ch_manifest_read(&r, tmp_path("a.json"), &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	CHECK(r.id_ok == 1);
	check_same(&m, &r);

	/* Writing what was read gives the same bytes. */
	CHECK(ch_manifest_write(&r, tmp_path("b.json"), &err) == 0);
	first = slurp(tmp_path("a.json"));
	second = slurp(tmp_path("b.json"));
	CHECK(first && second && strcmp(first, second) == 0);
	CHECK(first && strncmp(first, "{\n  \"bytes\": 1234,\n", 19) == 0);
	CHECK(first && strcmp(first + strlen(first) - 2, "}\n") == 0);
	CHECK(count_files() == 2); /* no temporary file left */
	free(first);
	free(second);
	ch_manifest_release(&r);
out:
	ch_manifest_release(&m);
}

static void empty_dataset_round_trips(void)
{
	struct ch_manifest m = { 0 }, r;
	struct ch_error err;
	char *text;

	m.name = xstrdup("empty");
	if (!CHECK(ch_manifest_write(&m, tmp_path("e.json"), &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	text = slurp(tmp_path("e.json"));
	CHECK(text && strstr(text, "\"classes\": [],"));
	CHECK(text && strstr(text, "\"splits\": {}\n}\n"));
	CHECK(text && strstr(text, "\"parent\": null,"));
	CHECK(text && strstr(text, "\"label_from\": null,"));
	CHECK(text && strstr(text, "\"chute_version\": \"" CH_VERSION "\""));
	free(text);
	if (CHECK(ch_manifest_read(&r, tmp_path("e.json"), &err) == 0)) {
		CHECK(r.id_ok == 1);
		CHECK_EQ_U64(r.nshards, 0);
		CHECK_STR(r.chute_version, CH_VERSION);
		ch_manifest_release(&r);
	}
out:
	ch_manifest_release(&m);
}

/* The id rule of the man page, applied by hand with jansson. */
static void id_is_hash_of_canonical_form(void)
{
	struct ch_manifest m;
	struct ch_error err;
	char id[33], again[33];

	sample_manifest(&m);
	if (!CHECK(ch_manifest_compute_id(&m, &err) == 0))
		goto out;
	memcpy(id, m.id, sizeof(id));
	CHECK(ch_manifest_compute_id(&m, &err) == 0);
	CHECK_STR(m.id, id); /* stable */
	if (CHECK(ch_manifest_write(&m, tmp_path("c.json"), &err) == 0)) {
		json_t *doc = json_load_file(tmp_path("c.json"), 0, NULL);
		char *canon;

		size_t i;
		json_t *v;

		CHECK_STR(json_string_value(json_object_get(doc, "id")), id);
		/* version 2: the content, not where or by what it was written */
		json_object_del(doc, "id");
		json_object_del(doc, "name");
		json_object_del(doc, "parent");
		json_object_del(doc, "chute_version");
		json_object_del(doc, "sources");
		json_array_foreach(json_object_get(doc, "shards"), i, v)
			json_object_del(v, "path");
		canon = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
		ch_hash128_hex(ch_hash128(canon, strlen(canon)), again);
		CHECK_STR(again, id);
		CHECK(strncmp(canon, "{\"bytes\":1234,\"classes\":", 24) == 0);
		free(canon);
		json_decref(doc);
	}
out:
	ch_manifest_release(&m);
}

/* A version 1 manifest (written before ids named content) is read with
 * its own rule, whole document but "id", and written again unchanged:
 * the versions that name it as parent still find it. */
static void version_1_keeps_its_rule(void)
{
	struct ch_manifest m, r;
	struct ch_error err;
	char old_id[33];

	sample_manifest(&m);
	if (!CHECK(ch_manifest_write(&m, tmp_path("v1.json"), &err) == 0))
		goto out;
	json_t *doc = json_load_file(tmp_path("v1.json"), 0, NULL);
	size_t i;
	json_t *v;
	json_object_set_new(doc, "format_version", json_integer(1));
	json_object_del(doc, "id");
	json_array_foreach(json_object_get(doc, "shards"), i, v)
		json_object_del(v, "seal"); /* version 1 had none */
	char *canon = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	ch_hash128_hex(ch_hash128(canon, strlen(canon)), old_id);
	json_object_set_new(doc, "id", json_string(old_id));
	CHECK(json_dump_file(doc, tmp_path("v1.json"), JSON_SORT_KEYS) == 0);
	free(canon);
	json_decref(doc);
	if (!CHECK(ch_manifest_read(&r, tmp_path("v1.json"), &err) == 0))
		goto out;
	CHECK(r.id_ok == 1);
	CHECK(r.format_version == 1);
	CHECK_STR(r.id, old_id);
	CHECK(ch_manifest_write(&r, tmp_path("v1again.json"), &err) == 0);
	CHECK_STR(r.id, old_id);
	ch_manifest_release(&r);
	if (CHECK(ch_manifest_read(&r, tmp_path("v1again.json"), &err) == 0)) {
		CHECK(r.id_ok == 1 && r.format_version == 1);
		CHECK_STR(r.id, old_id);
		ch_manifest_release(&r);
	}
	/* the same content as a new version: the content-only id */
	CHECK(strcmp(m.id, old_id) != 0);
out:
	ch_manifest_release(&m);
}

/* Changes sample_manifest in way `k`: returns 1 for a change of content,
 * which changes the id, 2 for one of where or by what the manifest was
 * written, which does not; 0 when there is no way k. */
static int mutate(struct ch_manifest *m, int k)
{
	switch (k) {
	case 0: free(m->name); m->name = xstrdup("dt"); return 2;
	case 1: m->parent = xstrdup("0123456789abcdef0123456789abcdef");
		return 2;
	case 2: free(m->chute_version); m->chute_version = xstrdup("0.1.1");
		return 2;
	case 3: m->samples++; return 1;
	case 4: m->bytes++; return 1;
	case 5: m->shard_bytes++; return 1;
	case 6: m->shards[1].path[0] = 'S'; return 2;
	case 7: m->shards[1].bytes++; return 1;
	case 8: m->shards[0].hash.low ^= 1; return 1;
	case 9: m->shards[0].hash.high ^= 1ULL << 63; return 1;
	case 10: m->shards[0].samples++; return 1;
	case 11: m->shards[1].first_sample++; return 1;
	case 12: m->fields[0].name[0] = 'k'; return 1;
	case 13: m->fields[1].count--; return 1;
	case 14: m->fields[1].bytes--; return 1;
	case 15: m->classes[1][0] = 'h'; return 1;
	case 16: m->nclasses = 1; free(m->classes[1]); return 1;
	case 17: m->sources[1][0] = '+'; return 2;
	case 18: m->options.shard_bytes++; return 1;
	case 19: m->options.shard_samples++; return 1;
	case 20: m->options.block_size++; return 1;
	case 21: m->options.level++; return 1;
	case 22: m->options.dict = 1; return 1;
	case 23: m->options.keep_order = 0; return 1;
	case 24: free(m->options.label_from); m->options.label_from = NULL;
		return 1;
	case 25: m->nshards = 1; free(m->shards[1].path); return 1;
	default: return 0;
	}
}

static void id_changes_with_any_field(void)
{
	struct ch_manifest m;
	struct ch_error err;
	char base[33];

	sample_manifest(&m);
	CHECK(ch_manifest_compute_id(&m, &err) == 0);
	memcpy(base, m.id, sizeof(base));
	ch_manifest_release(&m);
	for (int k = 0;; k++) {
		int more;

		sample_manifest(&m);
		more = mutate(&m, k);
		if (more && (!CHECK(ch_manifest_compute_id(&m, &err) == 0) ||
			     !CHECK((strcmp(m.id, base) != 0) == (more == 1))))
			unit_note("mutation %d", k);
		ch_manifest_release(&m);
		if (!more)
			break;
	}
}

static void expect_id_ok(const char *text, int ok, const char *what)
{
	struct ch_manifest m;
	struct ch_error err;

	if (!CHECK(text != NULL))
		return;
	if (!CHECK(parse_text(&m, text, &err) == 0)) {
		unit_note("%s: %s", what, err.msg);
		return;
	}
	if (!CHECK(m.id_ok == ok))
		unit_note("%s: id_ok is %d", what, m.id_ok);
	ch_manifest_release(&m);
}

static void edited_manifest_fails_id(void)
{
	char *text = sample_text();
	char *level = replace(text, "\"level\": 3", "\"level\": 4");
	char *hash = replace(text, "\"xxh3_128\": \"0123",
			     "\"xxh3_128\": \"1123");
	char *with = manifest_text(1);
	char *splits = replace(with, "\"seed\": 7", "\"seed\": 8");
	char *flat = replace(text, "\"samples\": 5,\n", "\"samples\":\t5, ");

	expect_id_ok(text, 1, "as written");
	expect_id_ok(level, 0, "level edited");
	expect_id_ok(hash, 0, "shard hash edited");
	expect_id_ok(with, 1, "with splits, as written");
	expect_id_ok(splits, 0, "splits edited");
	/* Layout is not content: the id survives re-indentation. */
	expect_id_ok(flat, 1, "whitespace edited");
	free(text);
	free(level);
	free(hash);
	free(with);
	free(splits);
	free(flat);
}

static void expect_error(const char *text, const char *needle,
			 const char *what)
{
	struct ch_manifest m;
	struct ch_error err = { .kind = 0 };

	if (!CHECK(text != NULL)) {
		unit_note("%s: no text to parse", what);
		return;
	}
	if (!CHECK(parse_text(&m, text, &err) == -1)) {
		unit_note("%s: accepted", what);
		ch_manifest_release(&m);
		return;
	}
	if (!CHECK(strstr(err.msg, needle) != NULL))
		unit_note("%s: message \"%s\" lacks \"%s\"", what, err.msg,
			  needle);
	CHECK(m.name == NULL && m.shards == NULL); /* released */
}

static void malformed_json_names_line_and_column(void)
{
	expect_error("{\n  \"format\": \"chute-manifest\",\n  oops\n}\n",
		     "(mem.json:3:", "bare word on line 3");
	expect_error("{\n  \"format\": \"chute-manifest\",\n  oops\n}\n",
		     "invalid JSON: ", "bare word on line 3");
	expect_error("", "(mem.json:", "empty input");
	expect_error("{\"format\": \"chute-manifest\"} x", "(mem.json:1:",
		     "trailing garbage");
	expect_error("[]", "manifest: expected a JSON object (mem.json)",
		     "an array");
}

/* Each row: what to find in the sample text, what to put instead, and a
 * part of the message that must come out. */
static const struct edit {
	const char *from, *to, *needle;
} bad_edits[] = {
	{ "\"shards/ds-000000.chs\"", "\"../x\"",
	  "shards[0].path: '../x' is not shards/NAME.chs" },
	{ "\"shards/ds-000000.chs\"", "\"/abs\"",
	  "shards[0].path: '/abs' is not shards/NAME.chs" },
	/* names a remote could use to overwrite a dataset's own files */
	{ "\"shards/ds-000000.chs\"", "\"manifest.json\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\".chute/stat\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"splits/x.ids\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"shards/a/b.chs\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"shards/.chs\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"shards/a\\u001bb.chs\"",
	  "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"shards/x.bin\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"shards/../../x\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"shards/..\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"shards//x\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"./x\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"x/\"", "shards[0].path" },
	{ "\"shards/ds-000000.chs\"", "\"\"", "shards[0].path" },
	{ "\"shards/ds-000001.chs\"", "\"shards/ds-000000.chs\"",
	  "shards[1].path: same path as shards[0]" },
};

static const struct edit type_edits[] = {
	{ "\"samples\": 5,", "\"samples\": \"5\",",
	  "samples: expected a non-negative integer (mem.json)" },
	{ "\"samples\": 5,", "\"samples\": -5,",
	  "samples: expected a non-negative integer" },
	{ "\"samples\": 5,", "\"samples\": 5.0,",
	  "samples: expected a non-negative integer" },
	{ "\"samples\": 5,", "\"samples\": 18446744073709551616,",
	  "invalid JSON: " },
	{ "\"bytes\": 555", "\"bytes\": true",
	  "shards[1].bytes: expected a non-negative integer" },
	{ "\"bytes\": 555", "\"bytes\": 556", "shard_bytes: 1332, but" },
	{ "\"first_sample\": 3", "\"first_sample\": 4",
	  "shards[1].first_sample: expected 3" },
	{ "\"samples\": 2", "\"samples\": 3", "samples: 5, but" },
	{ "\"dict\": false", "\"dict\": 0",
	  "options.dict: expected true or false" },
	{ "\"level\": 3", "\"level\": 3000000000", "options.level" },
	{ "\"label_from\": \"dir\"", "\"label_from\": \"file\"",
	  "options.label_from" },
	{ "\"cat\"", "7", "classes[0]: expected a string" },
	{ "\"cat\"", "\"eel\"", "classes[1]: not after" },
	{ "\"cat\"", "\"dog\"", "classes[1]: not after" },
	{ "\"classes\": [", "\"classes\": {\"a\": [", "invalid JSON" },
	{ "\"sources\": [\n    \"photos/\",\n    \"-\"\n  ]",
	  "\"sources\": \"photos/\"", "sources: expected an array" },
	{ "\"format_version\": 2", "\"format_version\": 3",
	  "format_version: unsupported version 3" },
	{ "\"format_version\": 2", "\"format_version\": 0",
	  "format_version: unsupported version 0" },
	{ "\"format\": \"chute-manifest\"", "\"format\": \"other\"",
	  "format: expected \"chute-manifest\"" },
	{ "\"name\": \"ds\",", "", "name: missing key" },
	{ "\"name\": \"ds\"", "\"name\": \"\"", "name: expected a non-empty" },
	/* RFC 8259 allows it; chute-manifest(5) does not: strings are C
	 * strings, which it would cut short */
	{ "\"name\": \"ds\"", "\"name\": \"d\\u0000s\"",
	  "U+0000 in a string is not allowed (mem.json:" },
	{ "\"shards/ds-000000.chs\"", "\"shards/a\\u0000b.chs\"",
	  "U+0000 in a string is not allowed (mem.json:" },
	{ "\"name\": \"ds\",", "\"name\": \"ds\", \"nmae\": 1,",
	  "nmae: unknown key" },
	{ "\"name\": \"ds\",", "\"name\": \"ds\", \"name\": \"ds\",",
	  "duplicate" },
	{ "\"parent\": null", "\"parent\": \"abc\"",
	  "parent: expected null or 32" },
	{ "\"id\": \"", "\"id\": \"X", "id: expected 32 lowercase hex" },
	{ "\"xxh3_128\": \"0123", "\"xxh3_128\": \"0A23",
	  "shards[0].xxh3_128: expected 32" },
	{ "\"splits\": {}", "\"splits\": []", "splits: expected an object" },
	{ "\"count\": 5", "\"count\": 6",
	  "schema.fields.cls.count: more than" },
	{ "\"count\": 5", "\"count\": 5, \"kind\": 1",
	  "schema.fields.cls.kind: unknown key" },
	{ "\"bytes\": 10", "\"bytes\": 11", "bytes: 1234, but the fields" },
	{ "\"shard_samples\": 0", "\"shard_samples\": null",
	  "options.shard_samples: expected" },
	{ "\"block_size\": 1048576,", "", "options.block_size: missing key" },
};

static void run_edits(const struct edit *e, size_t n)
{
	char *text = sample_text();

	for (size_t i = 0; i < n; i++) {
		char *edited = replace(text, e[i].from, e[i].to);

		expect_error(edited, e[i].needle, e[i].to);
		free(edited);
	}
	free(text);
}

static void bad_shard_paths_refused(void)
{
	run_edits(bad_edits, UNIT_COUNT(bad_edits));
}

static void wrong_types_refused(void)
{
	run_edits(type_edits, UNIT_COUNT(type_edits));
}

/* Edits of manifest_text(1), the manifest with splits. */
static const struct edit split_edits[] = {
	{ "\"test\": {", "\"Test\": {", "splits.sets.Test: not a split name" },
	{ "\"test\": {", "\"a-split-name-longer-than-32-bytes\": {",
	  "not a split name" },
	{ "\"path\": \"splits/test-aaaa000000000001.ids\"",
	  "\"path\": \"splits/test.ids\"",
	  "splits.sets.test.path: expected "
	  "\"splits/test-aaaa000000000001.ids\"" },
	{ "\"path\": \"splits/test-aaaa000000000001.ids\"",
	  "\"path\": \"../test-aaaa000000000001.ids\"",
	  "splits.sets.test.path: expected" },
	{ "\"bytes\": 8,", "\"bytes\": 9,",
	  "splits.sets.test.bytes: expected 8 bytes a sample" },
	{ "\"hash\": \"aaaa", "\"hash\": \"AAAA",
	  "splits.sets.test.hash: expected 32 lowercase" },
	{ "\"fraction\": 0.2,", "\"fraction\": 0.25,",
	  "splits.sets: the fractions do not add up to 1" },
	{ "\"fraction\": 0.2,", "\"fraction\": 0.20001,",
	  "splits.sets.test.fraction: expected a multiple of 0.0001" },
	{ "\"fraction\": 0.2,", "\"fraction\": 0,",
	  "splits.sets.test.fraction: expected" },
	{ "\"fraction\": 0.2,", "\"fraction\": 1.5,",
	  "splits.sets.test.fraction: expected" },
	{ "\"fraction\": 0.2,", "\"fraction\": \"0.2\",",
	  "splits.sets.test.fraction: expected" },
	{ "\"samples\": 1\n", "\"samples\": 1, \"size\": 2\n",
	  "splits.sets.test.size: unknown key" },
	{ "\"samples\": 1\n", "\"samples\": -1\n",
	  "splits.sets.test.samples: expected a non-negative" },
	{ "\"method\": \"key-hash\"", "\"method\": \"random\"",
	  "splits.rule.method: expected \"key-hash\"" },
	{ "\"seed\": 7", "\"seed\": -7",
	  "splits.rule.seed: expected a non-negative integer" },
	{ "\"seed\": 7", "\"seed\": 7, \"sede\": 1",
	  "splits.rule.sede: unknown key" },
	{ "\"group\": \"^([a-z]+)/\"", "\"group\": \"\"",
	  "splits.rule.group: expected a non-empty string" },
	{ "\"group\": \"^([a-z]+)/\"", "\"group\": 3",
	  "splits.rule.group: expected a string or null" },
	{ "\"rule\": {", "\"rules\": {", "splits.rules: unknown key" },
	{ "\"sets\": {", "\"sets\": [", "invalid JSON" },
};

/* Edits of sample_text(), whose splits are {}. */
static const struct edit empty_split_edits[] = {
	{ "\"splits\": {}", "\"splits\": {\"a\": 1}", "splits.a: unknown key" },
	{ "\"splits\": {}", "\"splits\": {\"sets\": {}}",
	  "splits.rule: missing key" },
	{ "\"splits\": {}",
	  "\"splits\": {\"rule\": {\"method\": \"key-hash\", \"seed\": 0, "
	  "\"group\": null}, \"sets\": {}}",
	  "splits.sets: expected at least one split" },
	{ "\"splits\": {}",
	  "\"splits\": {\"rule\": {\"method\": \"key-hash\", \"seed\": 0, "
	  "\"group\": null}, \"sets\": []}",
	  "splits.sets: expected an object" },
};

static void bad_splits_refused(void)
{
	char *text = manifest_text(1);
	char *more = replace(text, "\"bytes\": 8,", "\"bytes\": 16,");
	char *both = replace(more, "\"samples\": 1\n", "\"samples\": 2\n");

	for (size_t i = 0; i < UNIT_COUNT(split_edits); i++) {
		char *edited = replace(text, split_edits[i].from,
				       split_edits[i].to);

		expect_error(edited, split_edits[i].needle, split_edits[i].to);
		free(edited);
	}
	expect_error(both, "splits.sets: the splits hold 6 samples, the "
		     "dataset 5", "a split one sample too big");
	free(text);
	free(more);
	free(both);
	run_edits(empty_split_edits, UNIT_COUNT(empty_split_edits));
}

static void splits_round_trip(void)
{
	struct ch_manifest m, r;
	struct ch_error err;
	char *first = NULL, *second = NULL;

	clear_dir();
	sample_manifest(&m);
	add_splits(&m);
	if (!CHECK(ch_manifest_write(&m, tmp_path("s.json"), &err) == 0) ||
	    !CHECK(ch_manifest_read(&r, tmp_path("s.json"), &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	CHECK(r.id_ok == 1);
	check_same(&m, &r);
	CHECK(ch_manifest_write(&r, tmp_path("t.json"), &err) == 0);
	first = slurp(tmp_path("s.json"));
	second = slurp(tmp_path("t.json"));
	CHECK(first && second && strcmp(first, second) == 0);
	/* fractions in their shortest form, as Python writes them */
	CHECK(first && strstr(first, "\"fraction\": 0.6,\n"));
	CHECK(first && strstr(first, "\"method\": \"key-hash\""));
	CHECK(first && strstr(first, "\"path\": "
			      "\"splits/train-bbbb000000000002.ids\""));
	ch_manifest_release(&r);

	/* no group: null */
	free(m.split_rule.group);
	m.split_rule.group = NULL;
	if (CHECK(ch_manifest_write(&m, tmp_path("s.json"), &err) == 0) &&
	    CHECK(ch_manifest_read(&r, tmp_path("s.json"), &err) == 0)) {
		CHECK(r.split_rule.group == NULL);
		CHECK_EQ_U64(r.split_rule.seed, 7);
		ch_manifest_release(&r);
	}
out:
	free(first);
	free(second);
	ch_manifest_release(&m);
}

/* Whatever order the sets come in, the struct has them by name. */
static void splits_sorted_by_name(void)
{
	char *text = manifest_text(1);
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	json_t *sets = json_object_get(json_object_get(doc, "splits"), "sets");
	json_t *shuffled = json_object();
	static const char *const order[] = { "val", "test", "train" };
	struct ch_manifest m;
	struct ch_error err;
	char *again = NULL;

	if (!CHECK(sets != NULL))
		goto out;
	for (int i = 0; i < 3; i++)
		json_object_set(shuffled, order[i],
				json_object_get(sets, order[i]));
	json_object_set(json_object_get(doc, "splits"), "sets", shuffled);
	again = json_dumps(doc, 0);
	if (!CHECK(again && parse_text(&m, again, &err) == 0)) {
		unit_note("%s", err.msg);
		goto out;
	}
	CHECK(m.id_ok == 1); /* order is layout, not content */
	if (CHECK_EQ_U64(m.nsplits, 3)) {
		CHECK_STR(m.splits[0].name, "test");
		CHECK_STR(m.splits[1].name, "train");
		CHECK_STR(m.splits[2].name, "val");
		CHECK_EQ_U64(m.splits[1].samples, 3);
	}
	ch_manifest_release(&m);
out:
	free(again);
	json_decref(shuffled);
	json_decref(doc);
	free(text);
}

static void id_changes_with_any_split_field(void)
{
	struct ch_manifest m;
	struct ch_error err;
	char base[33];

	sample_manifest(&m);
	add_splits(&m);
	CHECK(ch_manifest_compute_id(&m, &err) == 0);
	memcpy(base, m.id, sizeof(base));
	ch_manifest_release(&m);
	for (int k = 0; k < 9; k++) {
		struct ch_manifest_split *sp;

		sample_manifest(&m);
		add_splits(&m);
		sp = &m.splits[1];
		switch (k) {
		case 0: m.split_rule.seed++; break;
		case 1: m.split_rule.group[0] = 'x'; break;
		case 2: free(m.split_rule.group); m.split_rule.group = NULL;
			break;
		case 3: sp->path[7] = 'T'; break;
		case 4: sp->samples++; break;
		case 5: sp->bytes++; break;
		case 6: sp->hash.low ^= 1; break;
		case 7: sp->fraction = 0.5; break;
		case 8: sp->name[0] = 's'; break;
		}
		/* a split file's path says where, not what */
		if (!CHECK(ch_manifest_compute_id(&m, &err) == 0) ||
		    !CHECK((strcmp(m.id, base) != 0) == (k != 3)))
			unit_note("split mutation %d", k);
		ch_manifest_release(&m);
	}
	/* no splits at all differs from splits */
	sample_manifest(&m);
	CHECK(ch_manifest_compute_id(&m, &err) == 0);
	CHECK(strcmp(m.id, base) != 0);
	ch_manifest_release(&m);
}

static void write_refuses_invalid_manifest(void)
{
	struct ch_manifest m;
	struct ch_error err = { .kind = 0 };

	clear_dir();
	sample_manifest(&m);
	strcpy(m.shards[1].path, "../../etc");
	CHECK(ch_manifest_write(&m, tmp_path("bad.json"), &err) == -1);
	CHECK(strstr(err.msg, "refusing to write") != NULL);
	CHECK(strstr(err.msg, "shards[1].path") != NULL);
	ch_manifest_release(&m);

	sample_manifest(&m);
	m.samples = (uint64_t)1 << 63;
	CHECK(ch_manifest_write(&m, tmp_path("bad.json"), &err) == -1);
	CHECK(strstr(err.msg, "samples: 9223372036854775808 is too large"));
	ch_manifest_release(&m);

	sample_manifest(&m);
	m.shards[1].bytes = UINT64_MAX;
	CHECK(ch_manifest_compute_id(&m, &err) == -1);
	CHECK(strstr(err.msg, "shards[1].bytes: 18446744073709551615 is too"));
	ch_manifest_release(&m);

	/* File names need not be UTF-8; JSON strings must. */
	sample_manifest(&m);
	m.classes[1][1] = (char)0xff;
	CHECK(ch_manifest_write(&m, tmp_path("bad.json"), &err) == -1);
	CHECK(strstr(err.msg, "classes[1]: not valid UTF-8") != NULL);
	ch_manifest_release(&m);

	sample_manifest(&m);
	m.shards[1].first_sample = 2;
	CHECK(ch_manifest_write(&m, tmp_path("bad.json"), &err) == -1);
	CHECK(strstr(err.msg, "shards[1].first_sample: expected 3") != NULL);
	ch_manifest_release(&m);

	/* a split path that does not follow from its hash */
	sample_manifest(&m);
	add_splits(&m);
	m.splits[2].hash.high++;
	CHECK(ch_manifest_write(&m, tmp_path("bad.json"), &err) == -1);
	CHECK(strstr(err.msg, "refusing to write") != NULL);
	CHECK(strstr(err.msg, "splits.sets.val.path: expected") != NULL);
	ch_manifest_release(&m);

	/* two splits of one name */
	sample_manifest(&m);
	add_splits(&m);
	free(m.splits[2].name);
	m.splits[2].name = xstrdup("test");
	CHECK(ch_manifest_compute_id(&m, &err) == -1);
	CHECK(strstr(err.msg, "duplicated split name 'test'") != NULL);
	ch_manifest_release(&m);

	CHECK(count_files() == 0);
}

static void read_errors_name_the_file(void)
{
	struct ch_manifest m;
	struct ch_error err = { .kind = 0 };

	CHECK(ch_manifest_read(&m, tmp_path("absent.json"), &err) == -1);
	CHECK(strstr(err.msg, "absent.json") != NULL);
	CHECK(strstr(err.msg, strerror(ENOENT)) != NULL);
	CHECK(ch_manifest_read(&m, tmp_dir, &err) == -1);
}

/* Sealed shards make a manifest of version 2; one shard without a seal
 * (as read from version 1) makes the whole manifest version 1, and each
 * version refuses the other's shape. */
static void seals_round_trip_as_version_2(void)
{
	struct ch_manifest m, r;
	struct ch_error err;
	char *text = NULL;
	size_t len;

	sample_manifest(&m);
	m.shards[0].seal = (struct ch_hash128){ 7, 8 };
	m.shards[0].has_seal = 1;
	m.shards[1].has_seal = 0;
	CHECK(ch_manifest_format(&m, &text, &len, &err) == 0);
	CHECK(text && strstr(text, "\"format_version\": 1,"));
	CHECK(text && !strstr(text, "\"seal\""));
	free(text);
	m.shards[1].seal = (struct ch_hash128){ 9, 10 };
	m.shards[1].has_seal = 1;
	CHECK(ch_manifest_format(&m, &text, &len, &err) == 0);
	CHECK(text && strstr(text, "\"format_version\": 2,"));
	CHECK(text && strstr(text, "\"seal\": "
			     "\"00000000000000070000000000000008\""));
	if (text && CHECK(ch_manifest_parse(&r, text, len, "t", &err) == 0)) {
		CHECK(r.id_ok == 1);
		check_same(&m, &r);
		ch_manifest_release(&r);
	}
	/* version 2 without a seal, version 1 with one */
	if (text) {
		char *seal = strstr(text, "\"seal\"");
		memcpy(seal, "\"saal\"", 6);
		CHECK(ch_manifest_parse(&r, text, len, "t", &err) < 0);
		CHECK(strstr(err.msg, "shards[0]: unknown key 'saal'") ||
		      strstr(err.msg, "saal: unknown key"));
		memcpy(seal, "\"seal\"", 6);
		memcpy(strstr(text, "\"format_version\": 2"),
		       "\"format_version\": 1", 19);
		CHECK(ch_manifest_parse(&r, text, len, "t", &err) < 0);
		CHECK(strstr(err.msg, "shards[0].seal: unknown key") != NULL);
	}
	free(text);
	ch_manifest_release(&m);
}

/* The piecewise reader (shards parsed one at a time, the id hashed
 * around them) must read any layout the whole-tree reader reads: keys in
 * any order, no whitespace, an escaped key, shards first or last. */
static void any_layout_reads_the_same(void)
{
	struct ch_manifest m, r;
	struct ch_error err;
	char *text = NULL, *other;
	size_t len;

	sample_manifest(&m);
	m.shards[0].has_seal = m.shards[1].has_seal = 1;
	if (!CHECK(ch_manifest_format(&m, &text, &len, &err) == 0))
		goto out;
	json_t *doc = json_loads(text, 0, NULL);
	for (int layout = 0; doc && layout < 4; layout++) {
		size_t flags = layout == 0 ? JSON_COMPACT
			     : layout == 1 ? JSON_INDENT(7)
					   : JSON_COMPACT | JSON_SORT_KEYS;
		json_t *copy = json_deep_copy(doc);
		json_t *shards = json_object_get(copy, "shards");
		json_incref(shards);
		json_object_del(copy, "shards");
		other = json_dumps(copy, flags | JSON_REAL_PRECISION(15));
		char *sh = json_dumps(shards, JSON_COMPACT);
		char *full = NULL;
		/* shards first, last, or under an escaped name */
		if (layout == 2)
			CHECK(asprintf(&full, "{\"shards\":%s,%s", sh,
				       other + 1) > 0);
		else
			CHECK(asprintf(&full, "%.*s,\"%s\" : %s }",
				       (int)strlen(other) - 1, other,
				       layout == 3 ? "sh\\u0061rds" : "shards",
				       sh) > 0);
		if (full && CHECK(ch_manifest_parse(&r, full, strlen(full), "t",
						    &err) == 0)) {
			CHECK(r.id_ok == 1);
			check_same(&m, &r);
			ch_manifest_release(&r);
		} else {
			unit_note("layout %d: %s", layout, err.msg);
		}
		free(full);
		free(sh);
		free(other);
		json_decref(shards);
		json_decref(copy);
	}
	/* a shard that is not valid JSON: the whole-tree reader's message */
	char *at = strstr(text, "\"samples\": 2");
	if (CHECK(at != NULL)) {
		memcpy(at, "\"samples\": x", 12);
		CHECK(ch_manifest_parse(&r, text, len, "t", &err) < 0);
		CHECK(strstr(err.msg, "invalid JSON: ") && strstr(err.msg, "(t:"));
	}
	json_decref(doc);
out:
	free(text);
	ch_manifest_release(&m);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(round_trip),
		UNIT(empty_dataset_round_trips),
		UNIT(id_is_hash_of_canonical_form),
		UNIT(id_changes_with_any_field),
		UNIT(edited_manifest_fails_id),
		UNIT(malformed_json_names_line_and_column),
		UNIT(bad_shard_paths_refused),
		UNIT(wrong_types_refused),
		UNIT(splits_round_trip),
		UNIT(splits_sorted_by_name),
		UNIT(id_changes_with_any_split_field),
		UNIT(version_1_keeps_its_rule),
		UNIT(bad_splits_refused),
		UNIT(write_refuses_invalid_manifest),
		UNIT(read_errors_name_the_file),
		UNIT(seals_round_trip_as_version_2),
		UNIT(any_layout_reads_the_same),
	};
	const char *base = getenv("TMPDIR");
	int status;

	snprintf(tmp_dir, sizeof(tmp_dir), "%s/test_manifest-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(tmp_dir)) {
		perror("test_manifest: cannot create a temporary folder");
		return 2;
	}
	status = unit_run(tests, UNIT_COUNT(tests));
	clear_dir();
	rmdir(tmp_dir);
	return status;
}
