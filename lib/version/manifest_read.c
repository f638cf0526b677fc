/* version/manifest_read.c - reading a manifest's text: piecewise, a
 * shard at a time, or as a whole tree where that fails; and freeing it.
 *
 * A whole tree costs about a kilobyte a shard; read piecewise, a manifest
 * costs its structs, and its text too unless the text is a mapped file
 * (ch_manifest_read), whose pages go back as the scan and then the shards'
 * decoding leave them behind.  The top level is cut into values
 * without checking them (jansson checks each value it is given), every
 * value but "shards" goes into one small tree, and each shard object is
 * parsed, decoded, hashed into the id and dropped in turn.  Anything out
 * of the ordinary (an error, a syntax this scan does not expect) sends
 * the caller to the whole-tree parse, which gives the exact message. */
#include <stdlib.h>
#include <string.h>

#include "version/manifest_internal.h"

/* Manifests are small (about 200 bytes a shard); anything bigger than this
 * is not one, and reading it whole would only exhaust memory. */
static const size_t manifest_max_size = (size_t)1 << 30;

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

/* Hashes the canonical form around the shards, which decode hashes:
 * {LOW,"shards":[SHARDS],HIGH} where LOW and HIGH are the members whose
 * keys sort before and after "shards". */
static int decode_hashed(json_t *rest, struct ch_manifest *m, struct dec *d,
			 char id[33])
{
	json_t *version = json_object_get(rest, "format_version");
	d->content_only = !json_is_integer(version) ||
			  json_integer_value(version) >= 2;
	char *low = manifest_dump_side(rest, 1, d->content_only);
	char *high = manifest_dump_side(rest, 0, d->content_only);
	size_t nlow = low ? strlen(low) - 1 : 0; /* without its '}' */
	int rc = -1;

	if (!low || !high)
		goto out;
	XXH3_128bits_reset(d->id_state);
	XXH3_128bits_update(d->id_state, low, nlow);
	if (nlow > 1)
		XXH3_128bits_update(d->id_state, ",", 1);
	XXH3_128bits_update(d->id_state, "\"shards\":[", 10);
	if (manifest_decode(rest, m, d) < 0)
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
		manifest_json_error(err, &jerr, d.origin, 1);
		goto out;
	}
	if (manifest_decode(doc, m, &d) < 0 ||
	    manifest_canonical_id(doc, id, err) < 0)
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

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
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
