/* remote/inventory.c - what a remote holds: its tags and its versions,
 * each with its manifest's figures and the cas/ keys of its files, read
 * from listings of tags/ and versions/ (store/list.c). */
#include <stdlib.h>
#include <string.h>

#include "chute/remote.h"

static int is_hex_id(const char *s, size_t n)
{
	return n == 32 && strspn(s, "0123456789abcdef") >= 32;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void version_release(struct ch_remote_version *v)
{
	for (size_t i = 0; i < v->nkeys; i++)
		free(v->keys[i]);
	free(v->keys);
}

/* The figures and cas/ keys of manifest m, into v. */
static int version_fill(struct ch_remote_version *v,
			const struct ch_manifest *m, struct ch_error *err)
{
	size_t n = m->nshards + m->nsplits;
	if (!(v->keys = calloc(n + 1, sizeof(*v->keys))))
		return ch_error_nomem(err);
	v->samples = m->samples;
	v->files = n;
	for (size_t i = 0; i < n; i++) {
		int shard = i < m->nshards;
		const struct ch_manifest_shard *sh = &m->shards[i];
		const struct ch_manifest_split *sp =
			&m->splits[shard ? 0 : i - m->nshards];
		v->bytes += shard ? sh->bytes : sp->bytes;
		v->keys[i] = ch_remote_cas_key(shard ? sh->hash : sp->hash,
					       shard ? sh->path : sp->path);
		if (!v->keys[i])
			return ch_error_nomem(err);
		v->nkeys++;
	}
	qsort(v->keys, v->nkeys, sizeof(*v->keys), by_string);
	return 0;
}

/* versions/ID.json as a version: its manifest read and checked. */
static int load_version(struct ch_store *st, const struct ch_store_object *o,
			struct ch_remote_version *v, struct ch_error *err)
{
	struct ch_manifest m = {0};
	struct ch_buf raw = {0};
	memcpy(v->id, o->key + strlen("versions/"), 32);
	v->id[32] = '\0';
	v->mtime = o->mtime;
	v->manifest_bytes = o->size;
	int rc = ch_remote_get_version(st, v->id, &m, &raw, err);
	if (rc == 1) /* removed since the listing: not there */
		rc = 0, v->id[0] = '\0';
	else if (rc == 0)
		rc = version_fill(v, &m, err);
	ch_manifest_release(&m);
	ch_buf_release(&raw);
	return rc < 0 ? -1 : 0;
}

static int load_versions(struct ch_store *st, struct ch_remote_inventory *inv,
			 struct ch_error *err)
{
	struct ch_store_list l;
	if (ch_store_list(st, "versions", &l, err) < 0)
		return -1;
	int rc = 0;
	if (!(inv->versions = calloc(l.n + 1, sizeof(*inv->versions))))
		rc = ch_error_nomem(err);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		const char *name = l.objects[i].key + strlen("versions/");
		size_t len = strlen(name);
		if (len != 37 || strcmp(name + 32, ".json") ||
		    !is_hex_id(name, 32))
			continue; /* not a manifest chute wrote */
		struct ch_remote_version *v = &inv->versions[inv->nversions];
		rc = load_version(st, &l.objects[i], v, err);
		if (rc == 0 && v->id[0])
			inv->nversions++;
		else
			version_release(v);
	}
	ch_store_list_release(&l);
	return rc;
}

static int load_tags(struct ch_store *st, struct ch_remote_inventory *inv,
		     struct ch_error *err)
{
	struct ch_store_list l;
	if (ch_store_list(st, "tags", &l, err) < 0)
		return -1;
	int rc = 0;
	if (!(inv->tags = calloc(l.n + 1, sizeof(*inv->tags))))
		rc = ch_error_nomem(err);
	for (size_t i = 0; rc == 0 && i < l.n; i++) {
		const char *name = l.objects[i].key + strlen("tags/");
		if (!ch_remote_tag_ok(name))
			continue; /* not a tag chute wrote */
		struct ch_remote_tag *t = &inv->tags[inv->ntags];
		rc = ch_remote_resolve(st, name, t->id, err);
		if (rc == 1) { /* removed since the listing */
			rc = 0;
			continue;
		}
		if (rc == 0 && !(t->name = strdup(name)))
			rc = ch_error_nomem(err);
		if (rc == 0)
			inv->ntags++;
	}
	ch_store_list_release(&l);
	return rc < 0 ? -1 : 0;
}

static int newest_first(const void *a, const void *b)
{
	const struct ch_remote_version *x = a, *y = b;
	if (x->mtime != y->mtime)
		return x->mtime > y->mtime ? -1 : 1;
	return strcmp(x->id, y->id);
}

const struct ch_remote_version *
ch_remote_inventory_find(const struct ch_remote_inventory *inv,
			 const char *id)
{
	for (size_t i = 0; i < inv->nversions; i++)
		if (!strcmp(inv->versions[i].id, id))
			return &inv->versions[i];
	return NULL;
}

int ch_remote_inventory(struct ch_store *st, struct ch_remote_inventory *inv,
			struct ch_error *err)
{
	memset(inv, 0, sizeof(*inv));
	/* tags before the versions they name: a push writes them after */
	if (load_tags(st, inv, err) < 0 || load_versions(st, inv, err) < 0) {
		ch_remote_inventory_release(inv);
		return -1;
	}
	qsort(inv->versions, inv->nversions, sizeof(*inv->versions),
	      newest_first);
	for (size_t i = 0; i < inv->ntags; i++) {
		struct ch_remote_version *v = (struct ch_remote_version *)
			ch_remote_inventory_find(inv, inv->tags[i].id);
		inv->tags[i].missing = !v;
		if (v)
			v->ntags++;
	}
	return 0;
}

void ch_remote_inventory_release(struct ch_remote_inventory *inv)
{
	for (size_t i = 0; i < inv->ntags; i++)
		free(inv->tags[i].name);
	for (size_t i = 0; i < inv->nversions; i++)
		version_release(&inv->versions[i]);
	free(inv->tags);
	free(inv->versions);
	memset(inv, 0, sizeof(*inv));
}
