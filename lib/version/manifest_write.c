/* version/manifest_write.c - encoding: struct ch_manifest into a JSON
 * tree, its id, and the stored text, checked by decoding it before it is
 * written. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version/manifest_internal.h"

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

		if (!sp->name || !manifest_is_split_name(sp->name) ||
		    json_object_get(sets, sp->name)) {
			ch_error_set(err, "splits.sets: %s split name '%s'",
				     sp->name &&
				     manifest_is_split_name(sp->name)
					     ? "duplicated" : "invalid",
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

int ch_manifest_compute_id(struct ch_manifest *m, struct ch_error *err)
{
	json_t *doc = encode(m, err);
	int ret;

	if (!doc)
		return -1;
	ret = manifest_canonical_id(doc, m->id, err);
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
	int ret = manifest_decode(doc, &scratch, &d);

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
	if (doc && manifest_canonical_id(doc, m->id, err) == 0 &&
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
