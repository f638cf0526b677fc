/* version/manifest_id.c - the id: XXH3-128 of the canonical form of the
 * tree without "id" (from version 2 without the locations either), of a
 * whole tree, or of its parts as manifest_read.c reads them piecewise. */
#include <stdlib.h>
#include <string.h>

#include "version/manifest_internal.h"

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
int manifest_canonical_id(json_t *doc, char out[33], struct ch_error *err)
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

/* The compact, sorted text of one shard object, as it stands in the
 * canonical form, hashed after a comma for every shard but the first. */
int manifest_hash_shard(json_t *o, size_t i, struct dec *d)
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

/* The canonical text of the members of rest on one side of "shards"
 * (before: below 0), without "id" (and with content_only, without the
 * locations): "{...}" as jansson writes it. */
char *manifest_dump_side(json_t *rest, int before, int content_only)
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
