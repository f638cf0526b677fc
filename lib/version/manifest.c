/*
 * version/manifest.c - dataset manifests (man/chute-manifest.5).
 *
 * One JSON document per dataset version, through jansson.  A manifest goes
 * struct -> JSON tree (encode) -> text on write, and text -> JSON tree ->
 * struct (decode) on read.  Every check lives in decode, and write decodes
 * the tree it is about to store, so chute never writes a manifest it would
 * refuse to read.
 *
 * The id is XXH3-128 of the canonical form of the tree without "id"
 * (compact, keys sorted), computed from the parsed tree on read, so it
 * covers exactly the bytes' meaning, split file hashes included.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "chute/version.h"
#include "common/internal.h"
#include "common/xxh.h"

#define FORMAT_NAME "chute-manifest"
/* Version 2: the id names the content only (THE ID in chute-manifest(5))
 * and each shard has a "seal"; a manifest with a shard that has none
 * (read from version 1) is written as version 1, under version 1's id
 * rule, so that the versions that name it as parent still find it. */
#define FORMAT_VERSION 2
#define FORMAT_VERSION_MIN 1

/* Manifests are small (about 200 bytes a shard); anything bigger than this
 * is not one, and reading it whole would only exhaust memory. */
static const size_t manifest_max_size = (size_t)1 << 30;

/* jansson's integers are signed 64-bit: the largest count a manifest holds. */
#define U64_MAX_JSON ((uint64_t)LLONG_MAX)

/* Split fractions are multiples of 1/10000, written with 15 significant
 * digits: the shortest form that reads back the same ("0.05", not
 * "0.050000000000000003"), which is also what Python writes, so that the
 * id can be recomputed without chute. */
#define FRACTION_UNITS 10000
#define REAL_FLAGS JSON_REAL_PRECISION(15)

/* ------------------------------------------------------------------ */
/* Small shared helpers                                                 */

static int is_hex32(const char *s)
{
	for (int i = 0; i < 32; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
	}
	return s[32] == '\0';
}

/* A shard path is shards/NAME.chs, NAME a file name (no '/', no control
 * byte): whatever a manifest from a remote says, a shard stays inside
 * the dataset's shards/ folder and never names manifest.json, a split
 * file or chute's own files under .chute/. */
static int is_shard_path(const char *p)
{
	static const char prefix[] = "shards/", suffix[] = ".chs";
	size_t n = strlen(p), np = sizeof(prefix) - 1, ns = sizeof(suffix) - 1;

	if (n <= np + ns || strncmp(p, prefix, np) != 0 ||
	    strcmp(p + n - ns, suffix) != 0)
		return 0;
	for (const char *c = p + np; *c; c++)
		if (*c == '/' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return 0;
	return 1;
}

/* Split names become file names: [a-z0-9_-]{1,32}. */
static int is_split_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* A split's fraction in units of 1/10000, or -1 unless it is one of
 * 1/10000 ... 10000/10000 exactly as the double nearest to it. */
static long fraction_units(double f)
{
	long k;

	if (!(f >= 0.0 && f <= 1.0))
		return -1;
	k = lround(f * FRACTION_UNITS);
	if (k < 1 || (double)k / FRACTION_UNITS != f)
		return -1;
	return k;
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

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* From version 2 the id leaves out where and by what a version was
 * written: its name (the output folder's, by default), the shard and
 * split file paths (which carry the name), the sources as given, the
 * parent and the chute version.  The same inputs and options give the
 * same id on every machine. */
static void strip_locations(json_t *copy)
{
	static const char *const top[] = { "name", "parent", "chute_version",
					   "sources", NULL };
	for (size_t i = 0; top[i]; i++)
		json_object_del(copy, top[i]);
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(copy, "shards"), i, v)
		json_object_del(v, "path");
	const char *name;
	json_t *sets = json_object_get(json_object_get(copy, "splits"), "sets");
	json_object_foreach(sets, name, v)
		json_object_del(v, "path");
}

/* XXH3-128 of the canonical form: the document without "id", compact and
 * with sorted keys; from version 2 without the locations too. */
static int canonical_id(json_t *doc, char out[33], struct ch_error *err)
{
	json_t *version = json_object_get(doc, "format_version");
	int content_only = !json_is_integer(version) ||
			   json_integer_value(version) >= 2;
	/* json_copy is shallow (members shared): enough to drop "id" */
	json_t *copy = content_only ? json_deep_copy(doc) : json_copy(doc);
	char *text = NULL;
	int ret = -1;

	if (!copy) {
		ch_error_set(err, "out of memory computing the manifest id");
		goto out;
	}
	json_object_del(copy, "id"); /* absent is fine */
	if (content_only)
		strip_locations(copy);
	text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS | REAL_FLAGS);
	if (!text) {
		ch_error_set(err, "out of memory computing the manifest id");
		goto out;
	}
	ch_hash128_hex(ch_hash128(text, strlen(text)), out);
	ret = 0;
out:
	free(text);
	json_decref(copy);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Encoding: struct -> JSON tree                                        */

/* Takes the reference to v, which is NULL if its constructor failed. */
static int set_new(json_t *obj, const char *key, json_t *v,
		   struct ch_error *err)
{
	if (!v || json_object_set_new(obj, key, v) < 0)
		return ch_error_set(err, "out of memory building the manifest");
	return 0;
}

static int append_new(json_t *arr, json_t *v, struct ch_error *err)
{
	if (!v || json_array_append_new(arr, v) < 0)
		return ch_error_set(err, "out of memory building the manifest");
	return 0;
}

/* A string value; `where` names it in messages. */
static json_t *str_value(const char *s, const char *where,
			 struct ch_error *err)
{
	json_t *v;

	if (!s) {
		ch_error_set(err, "%s: not set", where);
		return NULL;
	}
	v = json_string(s);
	if (!v)
		ch_error_set(err, "%s: not valid UTF-8, which JSON cannot hold",
			     where);
	return v;
}

static json_t *str_or_null(const char *s, const char *where,
			   struct ch_error *err)
{
	return s ? str_value(s, where, err) : json_null();
}

static json_t *u64_value(uint64_t n, const char *where, struct ch_error *err)
{
	json_t *v;

	if (n > U64_MAX_JSON) {
		ch_error_set(err, "%s: %" PRIu64 " is too large for a manifest "
			     "(at most 2^63-1)", where, n);
		return NULL;
	}
	v = json_integer((json_int_t)n);
	if (!v)
		ch_error_set(err, "out of memory building the manifest");
	return v;
}

/* set_new for values whose constructor has already reported its error. */
static int put(json_t *obj, const char *key, json_t *v, struct ch_error *err)
{
	if (!v)
		return -1;
	return set_new(obj, key, v, err);
}

/* Names ctx.key in messages ("shards[3].path"; ctx "" is the top). */
static const char *key_path(char *buf, size_t size, const char *ctx,
			    const char *key)
{
	snprintf(buf, size, "%s%s%s", ctx, *ctx ? "." : "", key);
	return buf;
}

static int put_str(json_t *obj, const char *ctx, const char *key,
		   const char *s, struct ch_error *err)
{
	char where[192];

	key_path(where, sizeof(where), ctx, key);
	return put(obj, key, str_value(s, where, err), err);
}

static int put_u64(json_t *obj, const char *ctx, const char *key,
		   uint64_t n, struct ch_error *err)
{
	char where[192];

	key_path(where, sizeof(where), ctx, key);
	return put(obj, key, u64_value(n, where, err), err);
}

static int all_sealed(const struct ch_manifest *m)
{
	for (size_t i = 0; i < m->nshards; i++)
		if (!m->shards[i].has_seal)
			return 0;
	return 1;
}

static json_t *encode_shard(const struct ch_manifest_shard *s, size_t i,
			    int sealed, struct ch_error *err)
{
	json_t *o = json_object();
	char ctx[48], hex[33], seal[33];

	if (!o) {
		ch_error_set(err, "out of memory building the manifest");
		return NULL;
	}
	ch_hash128_hex(s->hash, hex);
	ch_hash128_hex(s->seal, seal);
	snprintf(ctx, sizeof(ctx), "shards[%zu]", i);
	if ((sealed && set_new(o, "seal", json_string(seal), err) < 0) ||
	    put_str(o, ctx, "path", s->path, err) < 0 ||
	    put_u64(o, ctx, "bytes", s->bytes, err) < 0 ||
	    set_new(o, "xxh3_128", json_string(hex), err) < 0 ||
	    put_u64(o, ctx, "samples", s->samples, err) < 0 ||
	    put_u64(o, ctx, "first_sample", s->first_sample, err) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *encode_shards(const struct ch_manifest *m, struct ch_error *err)
{
	json_t *arr = json_array();
	int sealed = all_sealed(m);

	if (!arr) {
		ch_error_set(err, "out of memory building the manifest");
		return NULL;
	}
	for (size_t i = 0; i < m->nshards; i++) {
		json_t *o = encode_shard(&m->shards[i], i, sealed, err);

		if (!o || append_new(arr, o, err) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *encode_schema(const struct ch_manifest *m,
			     struct ch_error *err)
{
	json_t *schema = json_object(), *fields = json_object();

	if (set_new(schema, "fields", fields, err) < 0)
		goto fail;
	for (size_t i = 0; i < m->nfields; i++) {
		const struct ch_manifest_field *f = &m->fields[i];
		json_t *o;
		char ctx[160];

		if (!f->name || json_object_get(fields, f->name)) {
			ch_error_set(err, "schema.fields: %s field name %s",
				     f->name ? "duplicated" : "missing",
				     f->name ? f->name : "");
			goto fail;
		}
		key_path(ctx, sizeof(ctx), "schema.fields", f->name);
		o = json_object();
		if (set_new(fields, f->name, o, err) < 0 ||
		    put_u64(o, ctx, "count", f->count, err) < 0 ||
		    put_u64(o, ctx, "bytes", f->bytes, err) < 0)
			goto fail;
	}
	return schema;
fail:
	json_decref(schema);
	return NULL;
}

static json_t *encode_strings(char *const *v, size_t n, const char *name,
			      struct ch_error *err)
{
	json_t *arr = json_array();

	if (!arr) {
		ch_error_set(err, "out of memory building the manifest");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		char where[64];
		json_t *s;

		snprintf(where, sizeof(where), "%s[%zu]", name, i);
		s = str_value(v[i], where, err);
		if (!s || append_new(arr, s, err) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* Only a part has one: a whole dataset's options have no "part" key. */
static json_t *encode_part(const struct ch_manifest_options *o,
			   struct ch_error *err)
{
	json_t *obj = json_object();

	if (put_u64(obj, "options.part", "index", o->part, err) < 0 ||
	    put_u64(obj, "options.part", "count", o->parts, err) < 0) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

static json_t *encode_options(const struct ch_manifest_options *o,
			      struct ch_error *err)
{
	json_t *obj = json_object();

	if (put(obj, "label_from",
		str_or_null(o->label_from, "options.label_from", err),
		err) < 0 ||
	    put_u64(obj, "options", "shard_bytes", o->shard_bytes, err) < 0 ||
	    put_u64(obj, "options", "shard_samples", o->shard_samples,
		    err) < 0 ||
	    put_u64(obj, "options", "block_size", o->block_size, err) < 0 ||
	    set_new(obj, "level", json_integer(o->level), err) < 0 ||
	    set_new(obj, "dict", json_boolean(o->dict), err) < 0 ||
	    set_new(obj, "keep_order", json_boolean(o->keep_order), err) < 0 ||
	    (o->parts && put(obj, "part", encode_part(o, err), err) < 0)) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

static json_t *encode_split_rule(const struct ch_manifest *m,
				 struct ch_error *err)
{
	json_t *o = json_object();

	if (set_new(o, "method", json_string("key-hash"), err) < 0 ||
	    put_u64(o, "splits.rule", "seed", m->split_rule.seed, err) < 0 ||
	    put(o, "group", str_or_null(m->split_rule.group,
					"splits.rule.group", err), err) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *encode_split(const struct ch_manifest_split *sp,
			    struct ch_error *err)
{
	json_t *o = json_object();
	char ctx[64], hex[33];

	ch_hash128_hex(sp->hash, hex);
	snprintf(ctx, sizeof(ctx), "splits.sets.%s", sp->name);
	if (put_str(o, ctx, "path", sp->path, err) < 0 ||
	    put_u64(o, ctx, "samples", sp->samples, err) < 0 ||
	    put_u64(o, ctx, "bytes", sp->bytes, err) < 0 ||
	    set_new(o, "hash", json_string(hex), err) < 0 ||
	    set_new(o, "fraction", json_real(sp->fraction), err) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* {} without splits; otherwise the rule and one object per split. */
static json_t *encode_splits(const struct ch_manifest *m,
			     struct ch_error *err)
{
	json_t *splits = json_object(), *sets = json_object();

	if (!splits) {
		json_decref(sets);
		ch_error_set(err, "out of memory building the manifest");
		return NULL;
	}
	if (m->nsplits == 0) {
		json_decref(sets);
		return splits;
	}
	if (set_new(splits, "sets", sets, err) < 0 ||
	    put(splits, "rule", encode_split_rule(m, err), err) < 0)
		goto fail;
	for (size_t i = 0; i < m->nsplits; i++) {
		const struct ch_manifest_split *sp = &m->splits[i];

		if (!sp->name || !is_split_name(sp->name) ||
		    json_object_get(sets, sp->name)) {
			ch_error_set(err, "splits.sets: %s split name '%s'",
				     sp->name && is_split_name(sp->name) ?
				     "duplicated" : "invalid",
				     sp->name ? sp->name : "");
			goto fail;
		}
		if (put(sets, sp->name, encode_split(sp, err), err) < 0)
			goto fail;
	}
	return splits;
fail:
	json_decref(splits);
	return NULL;
}

/* The whole document except "id".  A NULL chute_version means "this
 * chute", so that callers need not fill it. */
static json_t *encode(const struct ch_manifest *m, struct ch_error *err)
{
	json_t *doc = json_object();
	const char *version = m->chute_version ? m->chute_version : CH_VERSION;

	if (set_new(doc, "format", json_string(FORMAT_NAME), err) < 0 ||
	    set_new(doc, "format_version",
		    json_integer(m->format_version ? m->format_version
				 : all_sealed(m) ? FORMAT_VERSION
						 : FORMAT_VERSION_MIN),
		    err) < 0 ||
	    put_str(doc, "", "name", m->name, err) < 0 ||
	    put(doc, "parent", str_or_null(m->parent, "parent", err),
		err) < 0 ||
	    put_str(doc, "", "chute_version", version, err) < 0 ||
	    put_u64(doc, "", "samples", m->samples, err) < 0 ||
	    put_u64(doc, "", "bytes", m->bytes, err) < 0 ||
	    put_u64(doc, "", "shard_bytes", m->shard_bytes, err) < 0 ||
	    put(doc, "shards", encode_shards(m, err), err) < 0 ||
	    put(doc, "schema", encode_schema(m, err), err) < 0 ||
	    put(doc, "classes",
		encode_strings(m->classes, m->nclasses, "classes", err),
		err) < 0 ||
	    put(doc, "splits", encode_splits(m, err), err) < 0 ||
	    put(doc, "sources",
		encode_strings(m->sources, m->nsources, "sources", err),
		err) < 0 ||
	    put(doc, "options", encode_options(&m->options, err), err) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* ------------------------------------------------------------------ */
/* Decoding: JSON tree -> struct, checking everything                   */

/* Pages of text given back at a time: few calls, a small window. */
static const size_t drop_chunk = (size_t)1 << 20;

/* Where one element of the "shards" array lies in the text. */
struct span {
	size_t at, len;
};

struct dec {
	const char *origin; /* file name, for messages */
	struct ch_error *err;
	int version;	    /* format_version, once checked */
	/* Read piecewise (see read_piecewise): the shards come from these
	 * spans of text, not from the tree, each hashed into id_state. */
	const char *text;
	struct ch_file_text *file; /* the text, when given back as read */
	const struct span *spans;
	size_t nspans;
	XXH3_state_t *id_state;
	int content_only; /* version 2's id: no locations (strip_locations) */
};

/* Reports a problem with the value at ctx.key (key may be NULL, ctx may
 * be "" for the top level): "shards[3].bytes: what (origin)". */
static int bad(struct dec *d, const char *ctx, const char *key,
	       const char *what)
{
	const char *dot = (*ctx && key) ? "." : "";

	if (!*ctx && !key)
		ctx = "manifest";
	return ch_error_data(d->err, "%s%s%s: %s (%s)", ctx, dot,
			     key ? key : "", what, d->origin);
}

static json_t *member(json_t *obj, const char *ctx, const char *key,
		      struct dec *d)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		bad(d, ctx, key, "missing key");
	return v;
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
			return bad(d, ctx, key, "unknown key");
	}
	return 0;
}

static json_t *get_kind(json_t *obj, const char *ctx, const char *key,
			json_type type, struct dec *d)
{
	json_t *v = member(obj, ctx, key, d);

	if (v && json_typeof(v) != type) {
		bad(d, ctx, key, type == JSON_OBJECT ? "expected an object"
							: "expected an array");
		return NULL;
	}
	return v;
}

static int get_u64(json_t *obj, const char *ctx, const char *key,
		   uint64_t *out, struct dec *d)
{
	json_t *v = member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return bad(d, ctx, key, "expected a non-negative integer");
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_bool(json_t *obj, const char *ctx, const char *key, int *out,
		    struct dec *d)
{
	json_t *v = member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (!json_is_boolean(v))
		return bad(d, ctx, key, "expected true or false");
	*out = json_is_true(v);
	return 0;
}

/* A non-empty string, copied into *out (left NULL when allow_null and the
 * value is null). */
static int get_str(json_t *obj, const char *ctx, const char *key,
		   int allow_null, char **out, struct dec *d)
{
	json_t *v = member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (allow_null && json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(d, ctx, key, allow_null ? "expected a string or null"
						   : "expected a string");
	if (json_string_length(v) == 0)
		return bad(d, ctx, key, "expected a non-empty string");
	*out = strdup(json_string_value(v));
	if (!*out)
		return ch_error_set(d->err, "out of memory reading a manifest");
	return 0;
}

/* The name is in the shard file names: the rule of pack -n and merge -n
 * (ch_dataset_name_check), for a manifest from anywhere. */
static int check_name(const char *name, struct dec *d)
{
	struct ch_error why;
	if (ch_dataset_name_check(name, &why) == 0)
		return 0;
	return bad(d, "", "name", why.msg);
}

static int get_hex(json_t *obj, const char *ctx, const char *key,
		   char out[33], struct dec *d)
{
	json_t *v = member(obj, ctx, key, d);

	if (!v)
		return -1;
	if (!json_is_string(v) || !is_hex32(json_string_value(v)))
		return bad(d, ctx, key, "expected 32 lowercase hex digits");
	memcpy(out, json_string_value(v), 33);
	return 0;
}

static int check_format(json_t *doc, struct dec *d)
{
	json_t *f = member(doc, "", "format", d);
	json_t *v;
	char what[128];

	if (!f)
		return -1;
	if (!json_is_string(f) || strcmp(json_string_value(f), FORMAT_NAME))
		return bad(d, "", "format", "expected \"" FORMAT_NAME
			   "\": not a chute manifest");
	v = member(doc, "", "format_version", d);
	if (!v)
		return -1;
	if (!json_is_integer(v))
		return bad(d, "", "format_version", "expected an integer");
	if (json_integer_value(v) < FORMAT_VERSION_MIN ||
	    json_integer_value(v) > FORMAT_VERSION) {
		snprintf(what, sizeof(what),
			 "unsupported version %" JSON_INTEGER_FORMAT
			 " (this chute reads versions %d to %d)",
			 json_integer_value(v), FORMAT_VERSION_MIN,
			 FORMAT_VERSION);
		return bad(d, "", "format_version", what);
	}
	d->version = (int)json_integer_value(v);
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
		return bad(d, ctx, NULL, "expected an object");
	if (check_keys(o, ctx, d->version > 1 ? keys : keys_v1, d) < 0 ||
	    get_str(o, ctx, "path", 0, &s->path, d) < 0)
		return -1;
	if (!is_shard_path(s->path)) {
		snprintf(what, sizeof(what), "'%.200s' is not shards/NAME.chs "
			 "(NAME a file name: no '/', no control character)",
			 s->path);
		return bad(d, ctx, "path", what);
	}
	if (get_u64(o, ctx, "bytes", &s->bytes, d) < 0 ||
	    get_hex(o, ctx, "xxh3_128", hex, d) < 0 ||
	    get_u64(o, ctx, "samples", &s->samples, d) < 0 ||
	    get_u64(o, ctx, "first_sample", &s->first_sample, d) < 0)
		return -1;
	if (ch_hash128_parse(hex, &s->hash) < 0)
		return bad(d, ctx, "xxh3_128",
			   "expected 32 lowercase hex digits");
	if (d->version < 2)
		return 0;
	if (get_hex(o, ctx, "seal", hex, d) < 0 ||
	    ch_hash128_parse(hex, &s->seal) < 0)
		return -1;
	s->has_seal = 1;
	return 0;
}

static int cmp_shard_path(const void *a, const void *b)
{
	const struct ch_manifest_shard *x = *(const void *const *)a;
	const struct ch_manifest_shard *y = *(const void *const *)b;

	return strcmp(x->path, y->path);
}

/* Two entries for one file would count its samples twice. */
static int check_unique_paths(struct ch_manifest *m, struct dec *d)
{
	const struct ch_manifest_shard **v;
	int ret = 0;

	if (m->nshards < 2)
		return 0;
	v = malloc(m->nshards * sizeof(*v));
	if (!v)
		return ch_error_set(d->err, "out of memory reading a manifest");
	for (size_t i = 0; i < m->nshards; i++)
		v[i] = &m->shards[i];
	qsort(v, m->nshards, sizeof(*v), cmp_shard_path);
	for (size_t i = 1; i < m->nshards && ret == 0; i++) {
		size_t a = (size_t)(v[i - 1] - m->shards);
		size_t b = (size_t)(v[i] - m->shards);
		char ctx[48], what[64];

		if (strcmp(v[i - 1]->path, v[i]->path) != 0)
			continue;
		snprintf(ctx, sizeof(ctx), "shards[%zu]", a > b ? a : b);
		snprintf(what, sizeof(what), "same path as shards[%zu]",
			 a < b ? a : b);
		ret = bad(d, ctx, "path", what);
	}
	free(v);
	return ret;
}

/* Shards number the dataset's samples in order: each starts where the
 * previous one ended, and together they hold `samples` samples in
 * `shard_bytes` bytes. */
static int check_shard_totals(struct ch_manifest *m, struct dec *d)
{
	uint64_t next = 0, bytes = 0;
	char ctx[48], what[96];

	for (size_t i = 0; i < m->nshards; i++) {
		const struct ch_manifest_shard *s = &m->shards[i];

		snprintf(ctx, sizeof(ctx), "shards[%zu]", i);
		if (s->first_sample != next) {
			snprintf(what, sizeof(what),
				 "expected %" PRIu64 ", where the previous "
				 "shard ends", next);
			return bad(d, ctx, "first_sample", what);
		}
		if (s->samples > U64_MAX_JSON - next ||
		    s->bytes > U64_MAX_JSON - bytes)
			return bad(d, ctx, NULL, "totals overflow");
		next += s->samples;
		bytes += s->bytes;
	}
	if (next != m->samples) {
		snprintf(what, sizeof(what),
			 "%" PRIu64 ", but the shards hold %" PRIu64,
			 m->samples, next);
		return bad(d, "", "samples", what);
	}
	if (bytes != m->shard_bytes) {
		snprintf(what, sizeof(what),
			 "%" PRIu64 ", but the shards add up to %" PRIu64,
			 m->shard_bytes, bytes);
		return bad(d, "", "shard_bytes", what);
	}
	return check_unique_paths(m, d);
}

/* The compact, sorted text of one shard object, as it stands in the
 * canonical form, hashed after a comma for every shard but the first. */
static int hash_shard(json_t *o, size_t i, struct dec *d)
{
	json_t *content = d->content_only ? json_copy(o) : json_incref(o);
	if (content && d->content_only)
		json_object_del(content, "path");
	char *text = content ? json_dumps(content, JSON_COMPACT |
						   JSON_SORT_KEYS | REAL_FLAGS)
			     : NULL;
	json_decref(content);
	if (!text)
		return ch_error_set(d->err, "out of memory computing the "
				    "manifest id");
	if (i)
		XXH3_128bits_update(d->id_state, ",", 1);
	XXH3_128bits_update(d->id_state, text, strlen(text));
	free(text);
	return 0;
}

/* Why the text is no manifest, where (with at, its line and column).
 * RFC 8259 allows \u0000 in a string; chute-manifest(5) does not, since
 * every string of a manifest is kept as a C string, which it would cut
 * short. */
static int json_error(struct ch_error *err, const json_error_t *jerr,
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
		json_error(d->err, &jerr, d->origin, 0);
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
			rc = d->id_state ? hash_shard(o, i, d) : 0;
		if (owned)
			json_decref(o);
		if (rc < 0)
			return -1;
	}
	return check_shard_totals(m, d);
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
		return bad(d, "schema.fields", NULL, "empty field name");
	if (!json_is_object(o))
		return bad(d, ctx, NULL, "expected an object");
	if (check_keys(o, ctx, keys, d) < 0 ||
	    get_u64(o, ctx, "count", &f->count, d) < 0 ||
	    get_u64(o, ctx, "bytes", &f->bytes, d) < 0)
		return -1;
	if (f->count > m->samples)
		return bad(d, ctx, "count", "more than the dataset's samples");
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
			return bad(d, "schema", "fields", "bytes overflow");
		total += m->fields[i - 1].bytes;
	}
	if (total != m->bytes) {
		snprintf(what, sizeof(what),
			 "%" PRIu64 ", but the fields add up to %" PRIu64,
			 m->bytes, total);
		return bad(d, "", "bytes", what);
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
			return bad(d, ctx, NULL, "expected a string");
		if (sorted && json_string_length(v) == 0)
			return bad(d, ctx, NULL, "expected a non-empty string");
		(*out)[i] = strdup(json_string_value(v));
		if (!(*out)[i])
			return ch_error_set(d->err,
					    "out of memory reading a manifest");
		if (sorted && i > 0 && strcmp((*out)[i - 1], (*out)[i]) >= 0)
			return bad(d, ctx, NULL,
				   "not after the previous one in byte order "
				   "(classes are sorted and unique)");
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
		return bad(d, "options.part", "index",
			   "expected a part below the count, and a count "
			   "above 0");
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
		return bad(d, "options", "label_from",
			   "expected null or \"dir\"");
	/* zstd levels may be negative (fast modes); any int is stored. */
	level = member(obj, "options", "level", d);
	if (!level)
		return -1;
	if (!json_is_integer(level) || json_integer_value(level) < INT_MIN ||
	    json_integer_value(level) > INT_MAX)
		return bad(d, "options", "level", "expected an integer");
	o->level = (int)json_integer_value(level);
	return json_object_get(obj, "part") ? decode_part(obj, o, d) : 0;
}

static int decode_parent(json_t *doc, struct ch_manifest *m, struct dec *d)
{
	json_t *v = member(doc, "", "parent", d);

	if (!v)
		return -1;
	if (json_is_null(v))
		return 0;
	if (!json_is_string(v) || !is_hex32(json_string_value(v)))
		return bad(d, "", "parent",
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
	method = member(rule, "splits.rule", "method", d);
	if (!method)
		return -1;
	if (!json_is_string(method) ||
	    strcmp(json_string_value(method), "key-hash") != 0)
		return bad(d, "splits.rule", "method",
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
	json_t *v = member(o, ctx, "fraction", d);

	if (!v)
		return -1;
	if (!json_is_number(v) || fraction_units(json_number_value(v)) < 0)
		return bad(d, ctx, "fraction",
			   "expected a multiple of 0.0001 from 0.0001 to 1");
	*out = json_number_value(v);
	return 0;
}

static int decode_split(json_t *o, const char *name,
			struct ch_manifest_split *sp, struct dec *d)
{
	static const char *const keys[] = { "path", "samples", "bytes",
					    "hash", "fraction", NULL };
	char ctx[64], hex[33], want[96], what[160];

	if (!is_split_name(name))
		return bad(d, "splits.sets", name, "not a split name (1 to 32 "
			   "of a-z, 0-9, '_' and '-')");
	snprintf(ctx, sizeof(ctx), "splits.sets.%s", name);
	if (!json_is_object(o))
		return bad(d, ctx, NULL, "expected an object");
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
		return bad(d, ctx, "hash", "expected 32 lowercase hex digits");
	if (sp->samples > U64_MAX_JSON / 8 || sp->bytes != 8 * sp->samples)
		return bad(d, ctx, "bytes", "expected 8 bytes a sample");
	split_path(name, sp->hash, want, sizeof(want));
	if (strcmp(sp->path, want) != 0) {
		snprintf(what, sizeof(what), "expected \"%s\" (the name and "
			 "the hash's first 16 digits)", want);
		return bad(d, ctx, "path", what);
	}
	return 0;
}

static int cmp_split(const void *a, const void *b)
{
	const struct ch_manifest_split *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* The splits partition the samples: their counts add up to the dataset's
 * (the files themselves are chute verify's to check) and their fractions
 * to 1. */
static int check_split_totals(struct ch_manifest *m, struct dec *d)
{
	uint64_t samples = 0;
	long units = 0;
	char what[128];

	for (size_t i = 0; i < m->nsplits; i++) {
		if (m->splits[i].samples > U64_MAX_JSON - samples)
			return bad(d, "splits", "sets", "samples overflow");
		samples += m->splits[i].samples;
		units += fraction_units(m->splits[i].fraction);
	}
	if (samples != m->samples) {
		snprintf(what, sizeof(what), "the splits hold %" PRIu64
			 " %s, the dataset %" PRIu64, samples,
			 ch_plural(samples, "sample", "samples"), m->samples);
		return bad(d, "splits", "sets", what);
	}
	if (units != FRACTION_UNITS)
		return bad(d, "splits", "sets",
			   "the fractions do not add up to 1");
	return 0;
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
		return bad(d, "splits", "sets", "expected at least one split "
			   "(no splits at all is \"splits\": {})");
	m->splits = calloc(n, sizeof(*m->splits));
	if (!m->splits)
		return ch_error_set(d->err, "out of memory reading a manifest");
	json_object_foreach(sets, name, v) {
		if (decode_split(v, name, &m->splits[m->nsplits++], d) < 0)
			return -1;
	}
	qsort(m->splits, m->nsplits, sizeof(*m->splits), cmp_split);
	return check_split_totals(m, d);
}

static int decode(json_t *doc, struct ch_manifest *m, struct dec *d)
{
	static const char *const keys[] = {
		"format", "format_version", "id", "name", "parent",
		"chute_version", "samples", "bytes", "shard_bytes", "shards",
		"schema", "classes", "splits", "sources", "options", NULL
	};

	if (!json_is_object(doc))
		return bad(d, "", NULL, "expected a JSON object");
	/* The version first: a newer manifest fails on that, not on the
	 * first key it added. */
	if (check_format(doc, d) < 0)
		return -1;
	m->format_version =
		(int)json_integer_value(json_object_get(doc, "format_version"));
	if (check_keys(doc, "", keys, d) < 0 ||
	    get_hex(doc, "", "id", m->id, d) < 0 ||
	    get_str(doc, "", "name", 0, &m->name, d) < 0 ||
	    check_name(m->name, d) < 0 ||
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

/* ------------------------------------------------------------------ */
/* Public API                                                           */

int ch_dataset_name_check(const char *name, struct ch_error *err)
{
	if (!*name)
		return ch_error_usage(err, "the dataset name is empty");
	for (const char *c = name; *c; c++)
		if (*c == '/' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return ch_error_usage(err, "the dataset name '%s' names "
					      "the shard files: it cannot hold "
					      "'/' or a control character",
					      name);
	return 0;
}

int ch_manifest_compute_id(struct ch_manifest *m, struct ch_error *err)
{
	json_t *doc = encode(m, err);
	int ret;

	if (!doc)
		return -1;
	ret = canonical_id(doc, m->id, err);
	json_decref(doc);
	return ret;
}

/* Decodes the tree about to be written, so that a manifest read refuses
 * never reaches the disk. */
static int check_before_write(json_t *doc, const char *path,
			      struct ch_error *err)
{
	struct ch_manifest scratch = { 0 };
	struct ch_error why;
	struct dec d = { path, &why, 0, NULL, NULL, NULL, 0, NULL, 0 };
	int ret = decode(doc, &scratch, &d);

	ch_manifest_release(&scratch);
	if (ret < 0)
		return ch_error_set(err, "refusing to write an invalid "
				    "manifest: %s", why.msg);
	return 0;
}

/* The stored form: 2-space indent, sorted keys, a final newline. */
static char *dump_pretty(json_t *doc, const char *path, struct ch_error *err)
{
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS |
					     REAL_FLAGS);
	char *full = NULL;

	if (!text || asprintf(&full, "%s\n", text) < 0) {
		full = NULL;
		ch_error_set(err, "out of memory writing '%s'", path);
	}
	free(text);
	return full;
}

/* The canonical text of m, its id computed first; origin names it in
 * messages. */
static char *format(struct ch_manifest *m, const char *origin,
		    struct ch_error *err)
{
	json_t *doc = encode(m, err);
	char *text = NULL;
	if (doc && canonical_id(doc, m->id, err) == 0 &&
	    set_new(doc, "id", json_string(m->id), err) == 0 &&
	    check_before_write(doc, origin, err) == 0)
		text = dump_pretty(doc, origin, err);
	json_decref(doc);
	return text;
}

int ch_manifest_format(struct ch_manifest *m, char **text, size_t *len,
		       struct ch_error *err)
{
	if (!(*text = format(m, "manifest", err)))
		return -1;
	*len = strlen(*text);
	return 0;
}

int ch_manifest_write(struct ch_manifest *m, const char *path,
		      struct ch_error *err)
{
	char *text = format(m, path, err);
	int ret = text ? ch_write_file_atomic(path, text, strlen(text), err)
		       : -1;
	free(text);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Reading piecewise                                                    */

/* A whole tree costs about a kilobyte a shard; read piecewise, a manifest
 * costs its structs, and its text too unless the text is a mapped file
 * (ch_manifest_read), whose pages go back as the scan and then the shards'
 * decoding leave them behind.  The top level is cut into values
 * without checking them (jansson checks each value it is given), every
 * value but "shards" goes into one small tree, and each shard object is
 * parsed, decoded, hashed into the id and dropped in turn.  Anything out
 * of the ordinary (an error, a syntax this scan does not expect) sends
 * the caller to the whole-tree parse, which gives the exact message. */

struct scan {
	const char *text;
	size_t len, pos;
	struct ch_file_text *file; /* NULL: text is not given back */
};

static void skip_space(struct scan *s)
{
	while (s->pos < s->len &&
	       (s->text[s->pos] == ' ' || s->text[s->pos] == '\t' ||
		s->text[s->pos] == '\n' || s->text[s->pos] == '\r'))
		s->pos++;
}

static int at(struct scan *s, char c)
{
	return s->pos < s->len && s->text[s->pos] == c;
}

/* Past the string that starts at pos; -1 if it does not end. */
static int skip_string(struct scan *s)
{
	for (s->pos++; s->pos < s->len; s->pos++) {
		if (s->text[s->pos] == '\\')
			s->pos++;
		else if (s->text[s->pos] == '"')
			return s->pos++, 0;
	}
	return -1;
}

/* Past one value: a string, an object or array (brackets counted outside
 * strings: jansson finds any mismatch), or a scalar up to a delimiter. */
static int skip_value(struct scan *s)
{
	size_t depth = 0;

	if (at(s, '"'))
		return skip_string(s);
	if (!at(s, '{') && !at(s, '[')) {
		while (s->pos < s->len && !strchr(",]} \t\r\n", s->text[s->pos]))
			s->pos++;
		return 0;
	}
	while (s->pos < s->len) {
		char c = s->text[s->pos];
		if (c == '"') {
			if (skip_string(s) < 0)
				return -1;
			continue;
		}
		s->pos++;
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return 0;
	}
	return -1;
}

/* The JSON value in text[from, s->pos). */
static json_t *value_since(struct scan *s, size_t from)
{
	json_error_t jerr;
	return json_loadb(s->text + from, s->pos - from,
			  JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
}

/* The elements of the array at pos, as spans. */
static int scan_shards(struct scan *s, struct span **spans, size_t *n)
{
	size_t cap = 0;

	if (!at(s, '['))
		return -1;
	s->pos++;
	skip_space(s);
	if (at(s, ']'))
		return s->pos++, 0;
	for (;;) {
		size_t from = s->pos;
		if (skip_value(s) < 0)
			return -1;
		if (*n == cap) {
			struct span *v;
			cap = cap ? 2 * cap : 1024;
			if (!(v = realloc(*spans, cap * sizeof(*v))))
				return -1;
			*spans = v;
		}
		(*spans)[(*n)++] = (struct span){ from, s->pos - from };
		if (s->file)
			ch_file_text_drop(s->file, from, drop_chunk);
		skip_space(s);
		if (at(s, ']'))
			return s->pos++, 0;
		if (!at(s, ','))
			return -1;
		s->pos++;
		skip_space(s);
	}
}

/* One "key": value of the top level into rest (shards as spans). */
static int scan_member(struct scan *s, json_t *rest, struct span **spans,
		       size_t *n)
{
	size_t from = s->pos;
	json_t *key, *v;
	int rc = -1;

	if (!at(s, '"') || skip_string(s) < 0 || !(key = value_since(s, from)))
		return -1;
	skip_space(s);
	if (!json_is_string(key) || !at(s, ':') ||
	    json_object_get(rest, json_string_value(key)))
		goto out;
	s->pos++;
	skip_space(s);
	from = s->pos;
	if (strcmp(json_string_value(key), "shards") == 0)
		v = scan_shards(s, spans, n) == 0 ? json_array() : NULL;
	else
		v = skip_value(s) == 0 ? value_since(s, from) : NULL;
	if (v && json_object_set_new(rest, json_string_value(key), v) == 0)
		rc = 0;
out:
	json_decref(key);
	return rc;
}

/* rest: the top-level object, its "shards" an empty array; the shard
 * objects as spans.  -1 for the whole-tree parse to take over. */
static json_t *scan_top(const char *text, size_t len,
			struct ch_file_text *file, struct span **spans,
			size_t *n)
{
	struct scan s = { text, len, 0, file };
	json_t *rest = json_object();

	skip_space(&s);
	if (!rest || !at(&s, '{'))
		goto fail;
	s.pos++;
	for (;;) {
		skip_space(&s);
		if (scan_member(&s, rest, spans, n) < 0)
			goto fail;
		skip_space(&s);
		if (at(&s, '}'))
			break;
		if (!at(&s, ','))
			goto fail;
		s.pos++;
	}
	s.pos++;
	skip_space(&s);
	if (s.pos == s.len && json_object_get(rest, "shards"))
		return rest;
fail:
	json_decref(rest);
	return NULL;
}

/* The canonical text of the members of rest on one side of "shards"
 * (before: below 0), without "id" (and with content_only, without the
 * locations): "{...}" as jansson writes it. */
static char *dump_side(json_t *rest, int before, int content_only)
{
	json_t *side = json_object();
	const char *key;
	json_t *v;
	char *text = NULL;

	if (!side)
		return NULL;
	json_object_foreach(rest, key, v) {
		int c = strcmp(key, "shards");
		if (c == 0 || strcmp(key, "id") == 0 || (c < 0) != before)
			continue;
		/* strip_locations edits nested objects: those of a copy */
		if (json_object_set_new(side, key, content_only
							   ? json_deep_copy(v)
							   : json_incref(v)) < 0)
			goto out;
	}
	if (content_only)
		strip_locations(side);
	text = json_dumps(side, JSON_COMPACT | JSON_SORT_KEYS | REAL_FLAGS);
out:
	json_decref(side);
	return text;
}

/* Hashes the canonical form around the shards, which decode hashes:
 * {LOW,"shards":[SHARDS],HIGH} where LOW and HIGH are the members whose
 * keys sort before and after "shards". */
static int decode_hashed(json_t *rest, struct ch_manifest *m, struct dec *d,
			 char id[33])
{
	json_t *version = json_object_get(rest, "format_version");
	d->content_only = !json_is_integer(version) ||
			  json_integer_value(version) >= 2;
	char *low = dump_side(rest, 1, d->content_only);
	char *high = dump_side(rest, 0, d->content_only);
	size_t nlow = low ? strlen(low) - 1 : 0; /* without its '}' */
	int rc = -1;

	if (!low || !high)
		goto out;
	XXH3_128bits_reset(d->id_state);
	XXH3_128bits_update(d->id_state, low, nlow);
	if (nlow > 1)
		XXH3_128bits_update(d->id_state, ",", 1);
	XXH3_128bits_update(d->id_state, "\"shards\":[", 10);
	if (decode(rest, m, d) < 0)
		goto out;
	XXH3_128bits_update(d->id_state, "]", 1);
	if (strlen(high) > 2)
		XXH3_128bits_update(d->id_state, ",", 1);
	XXH3_128bits_update(d->id_state, high + 1, strlen(high) - 1);
	XXH128_hash_t h = XXH3_128bits_digest(d->id_state);
	ch_hash128_hex((struct ch_hash128){ h.high64, h.low64 }, id);
	rc = 0;
out:
	free(low);
	free(high);
	return rc;
}

/* 0 with m read and id computed; -1 when the whole-tree parse must say
 * what is wrong. */
static int read_piecewise(struct ch_manifest *m, const char *text,
			  size_t len, struct dec *d, char id[33])
{
	struct span *spans = NULL;
	size_t n = 0;
	json_t *rest = scan_top(text, len, d->file, &spans, &n);
	int rc = -1;

	if (d->file)
		d->file->dropped = 0; /* the shards read their text again */
	d->text = text;
	d->spans = spans;
	d->nspans = n;
	d->id_state = XXH3_createState();
	if (rest && d->id_state)
		rc = decode_hashed(rest, m, d, id);
	XXH3_freeState(d->id_state);
	d->id_state = NULL;
	d->spans = NULL;
	free(spans);
	json_decref(rest);
	return rc;
}

/* file: where text comes from, to give back as it is read; or NULL. */
static int parse(struct ch_manifest *m, const char *text, size_t len,
		 struct ch_file_text *file, const char *origin,
		 struct ch_error *err)
{
	struct dec d = { origin ? origin : "manifest", err, 0, NULL, file,
			 NULL, 0, NULL, 0 };
	json_error_t jerr;
	json_t *doc;
	char id[33];
	int ret = -1;

	memset(m, 0, sizeof(*m));
	if (read_piecewise(m, text, len, &d, id) == 0) {
		m->id_ok = strcmp(id, m->id) == 0;
		return 0;
	}
	ch_manifest_release(m);
	d.version = 0;
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		json_error(err, &jerr, d.origin, 1);
		goto out;
	}
	if (decode(doc, m, &d) < 0 || canonical_id(doc, id, err) < 0)
		goto out;
	/* A mismatch is not a parse error: verify reports it. */
	m->id_ok = strcmp(id, m->id) == 0;
	ret = 0;
out:
	json_decref(doc);
	if (ret < 0)
		ch_manifest_release(m);
	return ret;
}

int ch_manifest_parse(struct ch_manifest *m, const char *text, size_t len,
		      const char *origin, struct ch_error *err)
{
	return parse(m, text, len, NULL, origin, err);
}

int ch_manifest_read(struct ch_manifest *m, const char *path,
		     struct ch_error *err)
{
	struct ch_file_text file;
	int ret;

	memset(m, 0, sizeof(*m));
	if (ch_file_text_open(&file, path, manifest_max_size, err) < 0)
		return -1;
	ret = parse(m, file.data, file.len, &file, path, err);
	ch_file_text_close(&file);
	return ret;
}

void ch_manifest_release(struct ch_manifest *m)
{
	if (!m)
		return;
	free(m->name);
	free(m->parent);
	free(m->chute_version);
	for (size_t i = 0; i < m->nshards; i++)
		free(m->shards[i].path);
	free(m->shards);
	for (size_t i = 0; i < m->nfields; i++)
		free(m->fields[i].name);
	free(m->fields);
	free_strings(m->classes, m->nclasses);
	free_strings(m->sources, m->nsources);
	free(m->options.label_from);
	for (size_t i = 0; i < m->nsplits; i++) {
		free(m->splits[i].name);
		free(m->splits[i].path);
	}
	free(m->splits);
	free(m->split_rule.group);
	memset(m, 0, sizeof(*m));
}
