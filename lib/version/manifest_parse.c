/* version/manifest_parse.c - decoding: a manifest's JSON tree into
 * struct ch_manifest, every value checked (the rules that span values are
 * in manifest_check.c). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version/manifest_internal.h"

static int is_hex32(const char *s)
{
	for (int i = 0; i < 32; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return s[32] == '\0';
}

/* A split file's path: its name and the first 16 hex digits of its hash,
 * so that two versions of a split never share a file name. */
static void split_path(const char *name, struct ch_hash128 h, char *out,
		       size_t size)
{
	char hex[33];

	ch_hash128_hex(h, hex);
	snprintf(out, size, "splits/%s-%.16s.ids", name, hex);
}

/* Refuses keys this version does not know: a new key means a new
 * format_version, and silently dropping one would change the data's
 * meaning behind the id's back. */
static int check_keys(json_t *obj, const char *ctx,
		      const char *const *allowed, struct dec *d)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		size_t i = 0;

		while (allowed[i] && strcmp(allowed[i], key) != 0)
			i++;
		if (!allowed[i])
			return manifest_bad(d, ctx, key, "unknown key");
	}
	return 0;
}

static json_t *get_kind(json_t *obj, const char *ctx, const char *key,
			json_type type, struct dec *d)
{
	json_t *v = manifest_member(obj, ctx, key, d);

	if (v && json_typeof(v) != type) {
		manifest_bad(d, ctx, key,
			     type == JSON_OBJECT ? "expected an object"
						 : "expected an array");
		return NULL;
	}
	return v;
}

static int get_u64(json_t *obj, const char *ctx, const char *key,
		   uint64_t *out, struct dec *d)
{
	json_t *v = manifest_member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return manifest_bad(d, ctx, key,
				    "expected a non-negative integer");
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_bool(json_t *obj, const char *ctx, const char *key, int *out,
		    struct dec *d)
{
	json_t *v = manifest_member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (!json_is_boolean(v))
		return manifest_bad(d, ctx, key, "expected true or false");
	*out = json_is_true(v);
	return 0;
}

/* A non-empty string, copied into *out (left NULL when allow_null and the
 * value is null). */
static int get_str(json_t *obj, const char *ctx, const char *key,
		   int allow_null, char **out, struct dec *d)
{
	json_t *v = manifest_member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (allow_null && json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return manifest_bad(d, ctx, key,
				    allow_null ? "expected a string or null"
					       : "expected a string");
	if (json_string_length(v) == 0)
		return manifest_bad(d, ctx, key, "expected a non-empty string");
	*out = strdup(json_string_value(v));
	if (!*out)
		return ch_error_set(d->err, "out of memory reading a manifest");
	return 0;
}

static int get_hex(json_t *obj, const char *ctx, const char *key,
		   char out[33], struct dec *d)
{
	json_t *v = manifest_member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (!json_is_string(v) || !is_hex32(json_string_value(v)))
		return manifest_bad(d, ctx, key,
				    "expected 32 lowercase hex digits");
	memcpy(out, json_string_value(v), 33);
	return 0;
}

static int decode_shard(json_t *o, const char *ctx,
			struct ch_manifest_shard *s, struct dec *d)
{
	static const char *const keys_v1[] = { "path", "bytes", "xxh3_128",
					       "samples", "first_sample",
					       NULL };
	static const char *const keys[] = { "path", "bytes", "xxh3_128",
					    "samples", "first_sample", "seal",
					    NULL };
	char hex[33], what[320];

	if (!json_is_object(o))
		return manifest_bad(d, ctx, NULL, "expected an object");
	if (check_keys(o, ctx, d->version > 1 ? keys : keys_v1, d) < 0 ||
	    get_str(o, ctx, "path", 0, &s->path, d) < 0)
		return -1;
	if (!manifest_is_shard_path(s->path)) {
		snprintf(what, sizeof(what), "'%.200s' is not shards/NAME.chs "
			 "(NAME a file name: no '/', no control character)",
			 s->path);
		return manifest_bad(d, ctx, "path", what);
	}
	if (get_u64(o, ctx, "bytes", &s->bytes, d) < 0 ||
	    get_hex(o, ctx, "xxh3_128", hex, d) < 0 ||
	    get_u64(o, ctx, "samples", &s->samples, d) < 0 ||
	    get_u64(o, ctx, "first_sample", &s->first_sample, d) < 0)
		return -1;
	if (ch_hash128_parse(hex, &s->hash) < 0)
		return manifest_bad(d, ctx, "xxh3_128",
				    "expected 32 lowercase hex digits");
	if (d->version < 2)
		return 0;
	if (get_hex(o, ctx, "seal", hex, d) < 0 ||
	    ch_hash128_parse(hex, &s->seal) < 0)
		return -1;
	s->has_seal = 1;
	return 0;
}

/* Why the text is no manifest, where (with at, its line and column).
 * RFC 8259 allows \u0000 in a string; chute-manifest(5) does not, since
 * every string of a manifest is kept as a C string, which it would cut
 * short. */
int manifest_json_error(struct ch_error *err, const json_error_t *jerr,
			const char *origin, int at)
{
	char where[64] = "";
	if (at)
		snprintf(where, sizeof(where), ":%d:%d", jerr->line,
			 jerr->column);
	if (json_error_code(jerr) == json_error_null_character)
		return ch_error_data(err, "U+0000 in a string is not allowed "
				    "(%s%s)", origin, where);
	return ch_error_data(err, "invalid JSON: %s (%s%s)", jerr->text, origin,
			    where);
}

/* Shard i: from the tree, or parsed from its span of text (a new
 * reference, which *owned says to drop). */
static json_t *shard_object(json_t *arr, size_t i, struct dec *d, int *owned)
{
	json_error_t jerr;
	json_t *o;
	*owned = d->spans != NULL;
	if (!d->spans)
		return json_array_get(arr, i);
	if (d->file)
		ch_file_text_drop(d->file, d->spans[i].at, drop_chunk);
	o = json_loadb(d->text + d->spans[i].at, d->spans[i].len,
		       JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		manifest_json_error(d->err, &jerr, d->origin, 0);
	return o;
}

static int decode_shards(json_t *doc, struct ch_manifest *m, struct dec *d)
{
	json_t *arr = get_kind(doc, "", "shards", JSON_ARRAY, d);
	size_t n;

	if (!arr)
		return -1;
	n = d->spans ? d->nspans : json_array_size(arr);
	if (n) {
		m->shards = calloc(n, sizeof(*m->shards));
		if (!m->shards)
			return ch_error_set(d->err,
					    "out of memory reading a manifest");
	}
	m->nshards = n;
	for (size_t i = 0; i < n; i++) {
		char ctx[48];
		int owned, rc = -1;
		json_t *o = shard_object(arr, i, d, &owned);

		snprintf(ctx, sizeof(ctx), "shards[%zu]", i);
		if (o && decode_shard(o, ctx, &m->shards[i], d) == 0)
			rc = d->id_state ? manifest_hash_shard(o, i, d) : 0;
		if (owned)
			json_decref(o);
		if (rc < 0)
			return -1;
	}
	return manifest_check_shard_totals(m, d);
}

static int cmp_field(const void *a, const void *b)
{
	const struct ch_manifest_field *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static int decode_field(json_t *o, const char *name, struct ch_manifest *m,
			struct ch_manifest_field *f, struct dec *d)
{
	static const char *const keys[] = { "count", "bytes", NULL };
	char ctx[160];

	snprintf(ctx, sizeof(ctx), "schema.fields.%s", name);
	if (!*name)
		return manifest_bad(d, "schema.fields", NULL,
				    "empty field name");
	if (!json_is_object(o))
		return manifest_bad(d, ctx, NULL, "expected an object");
	if (check_keys(o, ctx, keys, d) < 0 ||
	    get_u64(o, ctx, "count", &f->count, d) < 0 ||
	    get_u64(o, ctx, "bytes", &f->bytes, d) < 0)
		return -1;
	if (f->count > m->samples)
		return manifest_bad(d, ctx, "count",
				    "more than the dataset's samples");
	f->name = strdup(name);
	if (!f->name)
		return ch_error_set(d->err, "out of memory reading a manifest");
	return 0;
}

/* Fields sorted by name; their bytes add up to the dataset's bytes. */
static int decode_schema(json_t *doc, struct ch_manifest *m, struct dec *d)
{
	static const char *const keys[] = { "fields", NULL };
	json_t *schema = get_kind(doc, "", "schema", JSON_OBJECT, d);
	json_t *fields, *v;
	const char *name;
	uint64_t total = 0;
	size_t n, i = 0;
	char what[96];

	if (!schema || check_keys(schema, "schema", keys, d) < 0)
		return -1;
	fields = get_kind(schema, "schema", "fields", JSON_OBJECT, d);
	if (!fields)
		return -1;
	n = json_object_size(fields);
	if (n) {
		m->fields = calloc(n, sizeof(*m->fields));
		if (!m->fields)
			return ch_error_set(d->err,
					    "out of memory reading a manifest");
	}
	json_object_foreach(fields, name, v) {
		if (decode_field(v, name, m, &m->fields[i], d) < 0)
			return -1;
		m->nfields = ++i;
		if (m->fields[i - 1].bytes > U64_MAX_JSON - total)
			return manifest_bad(d, "schema", "fields",
					    "bytes overflow");
		total += m->fields[i - 1].bytes;
	}
	if (total != m->bytes) {
		snprintf(what, sizeof(what),
			 "%" PRIu64 ", but the fields add up to %" PRIu64,
			 m->bytes, total);
		return manifest_bad(d, "", "bytes", what);
	}
	if (m->nfields > 1)
		qsort(m->fields, m->nfields, sizeof(*m->fields), cmp_field);
	return 0;
}

/* An array of strings into *out.  With `sorted`, names must be non-empty
 * and strictly increasing in byte order (so also unique). */
static int decode_strings(json_t *doc, const char *key, int sorted,
			  char ***out, size_t *nout, struct dec *d)
{
	json_t *arr = get_kind(doc, "", key, JSON_ARRAY, d);
	size_t n;

	if (!arr)
		return -1;
	n = json_array_size(arr);
	if (n) {
		*out = calloc(n, sizeof(**out));
		if (!*out)
			return ch_error_set(d->err,
					    "out of memory reading a manifest");
	}
	*nout = n;
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(arr, i);
		char ctx[48];

		snprintf(ctx, sizeof(ctx), "%s[%zu]", key, i);
		if (!json_is_string(v))
			return manifest_bad(d, ctx, NULL, "expected a string");
		if (sorted && json_string_length(v) == 0)
			return manifest_bad(d, ctx, NULL,
					    "expected a non-empty string");
		(*out)[i] = strdup(json_string_value(v));
		if (!(*out)[i])
			return ch_error_set(d->err,
					    "out of memory reading a manifest");
		if (sorted && i > 0 && strcmp((*out)[i - 1], (*out)[i]) >= 0)
			return manifest_bad(d, ctx, NULL,
					    "not after the previous one in "
					    "byte order (classes are sorted "
					    "and unique)");
	}
	return 0;
}

/* "part": {"index": I, "count": N}, I below N. */
static int decode_part(json_t *options, struct ch_manifest_options *o,
		       struct dec *d)
{
	static const char *const keys[] = { "index", "count", NULL };
	json_t *obj = get_kind(options, "options", "part", JSON_OBJECT, d);

	if (!obj || check_keys(obj, "options.part", keys, d) < 0 ||
	    get_u64(obj, "options.part", "index", &o->part, d) < 0 ||
	    get_u64(obj, "options.part", "count", &o->parts, d) < 0)
		return -1;
	if (o->parts == 0 || o->part >= o->parts)
		return manifest_bad(d, "options.part", "index",
				    "expected a part below the count, and a "
				    "count above 0");
	return 0;
}

static int decode_options(json_t *doc, struct ch_manifest_options *o,
			  struct dec *d)
{
	static const char *const keys[] = {
		"shard_bytes", "shard_samples", "block_size", "level",
		"dict", "keep_order", "label_from", "part", NULL
	};
	json_t *obj = get_kind(doc, "", "options", JSON_OBJECT, d);
	json_t *level;

	if (!obj || check_keys(obj, "options", keys, d) < 0 ||
	    get_u64(obj, "options", "shard_bytes", &o->shard_bytes, d) < 0 ||
	    get_u64(obj, "options", "shard_samples", &o->shard_samples,
		    d) < 0 ||
	    get_u64(obj, "options", "block_size", &o->block_size, d) < 0 ||
	    get_bool(obj, "options", "dict", &o->dict, d) < 0 ||
	    get_bool(obj, "options", "keep_order", &o->keep_order, d) < 0 ||
	    get_str(obj, "options", "label_from", 1, &o->label_from, d) < 0)
		return -1;
	if (o->label_from && strcmp(o->label_from, "dir") != 0)
		return manifest_bad(d, "options", "label_from",
				    "expected null or \"dir\"");
	/* zstd levels may be negative (fast modes); any int is stored. */
	level = manifest_member(obj, "options", "level", d);
	if (!level)
		return -1;
	if (!json_is_integer(level) || json_integer_value(level) < INT_MIN ||
	    json_integer_value(level) > INT_MAX)
		return manifest_bad(d, "options", "level",
				    "expected an integer");
	o->level = (int)json_integer_value(level);
	return json_object_get(obj, "part") ? decode_part(obj, o, d) : 0;
}

static int decode_parent(json_t *doc, struct ch_manifest *m, struct dec *d)
{
	json_t *v = manifest_member(doc, "", "parent", d);

	if (!v)
		return -1;
	if (json_is_null(v))
		return 0;
	if (!json_is_string(v) || !is_hex32(json_string_value(v)))
		return manifest_bad(d, "", "parent",
				    "expected null or 32 lowercase hex digits");
	m->parent = strdup(json_string_value(v));
	if (!m->parent)
		return ch_error_set(d->err, "out of memory reading a manifest");
	return 0;
}

static int decode_split_rule(json_t *splits, struct ch_manifest *m,
			     struct dec *d)
{
	static const char *const keys[] = { "method", "seed", "group", NULL };
	json_t *rule = get_kind(splits, "splits", "rule", JSON_OBJECT, d);
	json_t *method;

	if (!rule || check_keys(rule, "splits.rule", keys, d) < 0)
		return -1;
	method = manifest_member(rule, "splits.rule", "method", d);
	if (!method)
		return -1;
	if (!json_is_string(method) ||
	    strcmp(json_string_value(method), "key-hash") != 0)
		return manifest_bad(d, "splits.rule", "method",
				    "expected \"key-hash\"");
	if (get_u64(rule, "splits.rule", "seed", &m->split_rule.seed, d) < 0 ||
	    get_str(rule, "splits.rule", "group", 1, &m->split_rule.group,
		    d) < 0)
		return -1;
	return 0;
}

static int decode_fraction(json_t *o, const char *ctx, double *out,
			   struct dec *d)
{
	json_t *v = manifest_member(o, ctx, "fraction", d);

	if (!v)
		return -1;
	if (!json_is_number(v) ||
	    manifest_fraction_units(json_number_value(v)) < 0)
		return manifest_bad(d, ctx, "fraction",
				    "expected a multiple of 0.0001 from 0.0001 "
				    "to 1");
	*out = json_number_value(v);
	return 0;
}

static int decode_split(json_t *o, const char *name,
			struct ch_manifest_split *sp, struct dec *d)
{
	static const char *const keys[] = { "path", "samples", "bytes",
					    "hash", "fraction", NULL };
	char ctx[64], hex[33], want[96], what[160];

	if (!manifest_is_split_name(name))
		return manifest_bad(d, "splits.sets", name,
				    "not a split name (1 to 32 of a-z, 0-9, "
				    "'_' and '-')");
	snprintf(ctx, sizeof(ctx), "splits.sets.%s", name);
	if (!json_is_object(o))
		return manifest_bad(d, ctx, NULL, "expected an object");
	if (!(sp->name = strdup(name)))
		return ch_error_set(d->err, "out of memory reading a manifest");
	if (check_keys(o, ctx, keys, d) < 0 ||
	    get_str(o, ctx, "path", 0, &sp->path, d) < 0 ||
	    get_u64(o, ctx, "samples", &sp->samples, d) < 0 ||
	    get_u64(o, ctx, "bytes", &sp->bytes, d) < 0 ||
	    get_hex(o, ctx, "hash", hex, d) < 0 ||
	    decode_fraction(o, ctx, &sp->fraction, d) < 0)
		return -1;
	if (ch_hash128_parse(hex, &sp->hash) < 0)
		return manifest_bad(d, ctx, "hash",
				    "expected 32 lowercase hex digits");
	if (sp->samples > U64_MAX_JSON / 8 || sp->bytes != 8 * sp->samples)
		return manifest_bad(d, ctx, "bytes",
				    "expected 8 bytes a sample");
	split_path(name, sp->hash, want, sizeof(want));
	if (strcmp(sp->path, want) != 0) {
		snprintf(what, sizeof(what), "expected \"%s\" (the name and "
			 "the hash's first 16 digits)", want);
		return manifest_bad(d, ctx, "path", what);
	}
	return 0;
}

static int cmp_split(const void *a, const void *b)
{
	const struct ch_manifest_split *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* {} or {"rule": ..., "sets": {NAME: ...}}, sets sorted by name. */
static int decode_splits(json_t *doc, struct ch_manifest *m, struct dec *d)
{
	static const char *const keys[] = { "rule", "sets", NULL };
	json_t *splits = get_kind(doc, "", "splits", JSON_OBJECT, d);
	json_t *sets, *v;
	const char *name;
	size_t n;

	if (!splits || check_keys(splits, "splits", keys, d) < 0)
		return -1;
	if (json_object_size(splits) == 0)
		return 0;
	if (decode_split_rule(splits, m, d) < 0 ||
	    !(sets = get_kind(splits, "splits", "sets", JSON_OBJECT, d)))
		return -1;
	n = json_object_size(sets);
	if (n == 0)
		return manifest_bad(d, "splits", "sets",
				    "expected at least one split (no splits "
				    "at all is \"splits\": {})");
	m->splits = calloc(n, sizeof(*m->splits));
	if (!m->splits)
		return ch_error_set(d->err, "out of memory reading a manifest");
	json_object_foreach(sets, name, v) {
		if (decode_split(v, name, &m->splits[m->nsplits++], d) < 0)
			return -1;
	}
	qsort(m->splits, m->nsplits, sizeof(*m->splits), cmp_split);
	return manifest_check_split_totals(m, d);
}

int manifest_decode(json_t *doc, struct ch_manifest *m, struct dec *d)
{
	static const char *const keys[] = {
		"format", "format_version", "id", "name", "parent",
		"chute_version", "samples", "bytes", "shard_bytes", "shards",
		"schema", "classes", "splits", "sources", "options", NULL
	};

	if (!json_is_object(doc))
		return manifest_bad(d, "", NULL, "expected a JSON object");
	/* The version first: a newer manifest fails on that, not on the
	 * first key it added. */
	if (manifest_check_format(doc, d) < 0)
		return -1;
	m->format_version =
		(int)json_integer_value(json_object_get(doc, "format_version"));
	if (check_keys(doc, "", keys, d) < 0 ||
	    get_hex(doc, "", "id", m->id, d) < 0 ||
	    get_str(doc, "", "name", 0, &m->name, d) < 0 ||
	    manifest_check_name(m->name, d) < 0 ||
	    get_str(doc, "", "chute_version", 0, &m->chute_version, d) < 0 ||
	    get_u64(doc, "", "samples", &m->samples, d) < 0 ||
	    get_u64(doc, "", "bytes", &m->bytes, d) < 0 ||
	    get_u64(doc, "", "shard_bytes", &m->shard_bytes, d) < 0)
		return -1;
	if (decode_parent(doc, m, d) < 0 || decode_shards(doc, m, d) < 0 ||
	    decode_schema(doc, m, d) < 0 ||
	    decode_strings(doc, "classes", 1, &m->classes, &m->nclasses,
			   d) < 0 ||
	    decode_strings(doc, "sources", 0, &m->sources, &m->nsources,
			   d) < 0 ||
	    decode_splits(doc, m, d) < 0 ||
	    decode_options(doc, &m->options, d) < 0)
		return -1;
	return 0;
}
