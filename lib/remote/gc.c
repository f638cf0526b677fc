/* remote/gc.c - removing from a remote what no kept version needs: the
 * manifests of the versions no tag names, and the cas/ objects no kept
 * manifest names, past a grace period that spares a push in progress. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chute/remote.h"
#include "remote/lease.h"

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return 0;
	return 1;
}

/* 1 for a key as ch_remote_cas_key makes them: cas/XX/HASH[.EXT]. */
static int cas_key_ok(const char *key)
{
	const char *h = key + strlen("cas/XX/");
	if (strlen(key) < strlen("cas/XX/") + 32 || strncmp(key, "cas/", 4) ||
	    key[6] != '/' || !is_hex(h, 32) || strncmp(key + 4, h, 2))
		return 0;
	return h[32] == '\0' || (h[32] == '.' && !strchr(h + 33, '/'));
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int listed(const struct ch_gc_opts *o, const char *name)
{
	for (size_t i = 0; i < o->ndrop; i++)
		if (!strcmp(o->drop[i], name))
			return 1;
	return 0;
}

static void keep(const struct ch_remote_inventory *inv, int *kept,
		 const char *id)
{
	const struct ch_remote_version *v = ch_remote_inventory_find(inv, id);
	if (v)
		kept[v - inv->versions] = 1;
}

/* Marks kept[] the versions that stay; refuses a damaged remote and
 * names that name nothing. */
static int mark_kept(struct ch_store *st, const struct ch_remote_inventory *inv,
		     const struct ch_gc_opts *o, int64_t cutoff, int *kept,
		     struct ch_error *err)
{
	char id[33];
	for (size_t i = 0; i < o->ndrop; i++) {
		if (!ch_remote_tag_ok(o->drop[i]))
			return ch_error_usage(err, "'%s' is not a tag name",
					      o->drop[i]);
		if (ch_remote_resolve(st, o->drop[i], id, err) != 0)
			return -1; /* no such tag: the message lists them */
	}
	for (size_t i = 0; i < inv->ntags; i++) {
		const struct ch_remote_tag *t = &inv->tags[i];
		if (listed(o, t->name))
			continue;
		if (t->missing)
			return ch_error_set(err,
					    "tag '%s' on %s names version %s, "
					    "whose manifest versions/%s.json is "
					    "not there: the remote is damaged; "
					    "nothing was removed",
					    t->name, ch_store_url(st), t->id,
					    t->id);
		keep(inv, kept, t->id);
	}
	for (size_t i = 0; i < o->nkeep; i++) {
		if (ch_remote_resolve(st, o->keep[i], id, err) != 0)
			return -1;
		if (!ch_remote_inventory_find(inv, id)) {
			ch_error_usage(err, "no version %s on %s (kept as "
				       "'%s')", id, ch_store_url(st),
				       o->keep[i]);
			return ch_error_setting(err, "keep");
		}
		keep(inv, kept, id);
	}
	/* a manifest just written may be a push's whose tags are on the way */
	for (size_t i = 0; i < inv->nversions; i++)
		if (inv->versions[i].mtime > cutoff)
			kept[i] = 1;
	return 0;
}

/* The cas/ keys of the kept versions, sorted (they share their strings
 * with inv). */
static const char **kept_keys(const struct ch_remote_inventory *inv,
			      const int *kept, size_t *n,
			      struct ch_error *err)
{
	size_t total = 0, k = 0;
	for (size_t i = 0; i < inv->nversions; i++)
		total += kept[i] ? inv->versions[i].nkeys : 0;
	const char **keys = calloc(total + 1, sizeof(*keys));
	if (!keys) {
		ch_error_nomem(err);
		return NULL;
	}
	for (size_t i = 0; i < inv->nversions; i++)
		for (size_t j = 0; kept[i] && j < inv->versions[i].nkeys; j++)
			keys[k++] = inv->versions[i].keys[j];
	qsort(keys, k, sizeof(*keys), by_string);
	*n = k;
	return keys;
}

static int add_removed(struct ch_gc_report *r, const char *key,
		       uint64_t size, int64_t mtime, struct ch_error *err)
{
	r->removed_bytes += size;
	return ch_store_list_add(&r->removed, key, strlen(key), size, mtime,
				 err);
}

/* Fills r: the kept versions, then what goes, manifests first. */
static int plan(struct ch_store *st, const struct ch_remote_inventory *inv,
		const int *kept, int64_t cutoff, struct ch_gc_report *r,
		struct ch_error *err)
{
	struct ch_store_list cas = {0};
	const char **keys = NULL;
	size_t nkeys = 0;
	char key[48];
	int rc = -1;
	if (!(r->kept = calloc(inv->nversions + 1, sizeof(*r->kept)))) {
		ch_error_nomem(err);
		goto out;
	}
	for (size_t i = 0; i < inv->nversions; i++) {
		const struct ch_remote_version *v = &inv->versions[i];
		if (kept[i]) {
			memcpy(r->kept[r->nkept++], v->id, 33);
			continue;
		}
		snprintf(key, sizeof(key), "versions/%s.json", v->id);
		if (add_removed(r, key, v->manifest_bytes, v->mtime, err) < 0)
			goto out;
	}
	/* listed after the manifests: an object a push sends meanwhile is
	 * either not listed or new */
	if (!(keys = kept_keys(inv, kept, &nkeys, err)) ||
	    ch_store_list(st, "cas", &cas, err) < 0)
		goto out;
	for (size_t i = 0; i < cas.n; i++) {
		const struct ch_store_object *ob = &cas.objects[i];
		if (!cas_key_ok(ob->key))
			continue; /* not chute's */
		if (bsearch(&ob->key, keys, nkeys, sizeof(*keys), by_string)) {
			r->referenced++;
			r->referenced_bytes += ob->size;
		} else if (ob->mtime > cutoff) {
			r->fresh++;
			r->fresh_bytes += ob->size;
		} else if (add_removed(r, ob->key, ob->size, ob->mtime,
				       err) < 0) {
			goto out;
		}
	}
	rc = 0;
out:
	free(keys);
	ch_store_list_release(&cas);
	return rc;
}

/* Dropped tags first, so that none names a version being removed; the
 * lease renewed as it goes. */
static int delete_all(struct ch_store *st, const struct ch_gc_opts *o,
		      const struct ch_gc_report *r, struct ch_lease *l,
		      struct ch_error *err)
{
	char key[160];
	for (size_t i = 0; i < o->ndrop; i++) {
		snprintf(key, sizeof(key), "tags/%s", o->drop[i]);
		if (ch_lease_renew(st, l, err) < 0 ||
		    ch_store_delete(st, key, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < r->removed.n; i++)
		if (ch_lease_renew(st, l, err) < 0 ||
		    ch_store_delete(st, r->removed.objects[i].key, err) < 0)
			return -1;
	return 0;
}

static void at_point(const struct ch_gc_opts *o, const char *name)
{
	if (o->point)
		o->point(o->point_arg, name);
}

int ch_remote_gc(struct ch_store *st, const struct ch_gc_opts *o,
		 struct ch_gc_report *r, struct ch_error *err)
{
	struct ch_remote_inventory inv = {0};
	struct ch_lease lease = {0};
	int *kept = NULL, rc = -1;
	memset(r, 0, sizeof(*r));
	/* the lease before any listing: a push that finds none wrote its
	 * manifest before gc lists the versions, and the grace period keeps
	 * it; one that finds it waits, then sends what gc removed */
	if (o->yes && ch_lease_take(st, &lease, err) < 0)
		return -1;
	if (o->yes)
		at_point(o, "gc:after-lease");
	int64_t now = o->now ? o->now : (int64_t)time(NULL);
	int64_t cutoff = now - (o->grace_s > 0 ? o->grace_s : 0);
	if (ch_remote_inventory(st, &inv, err) < 0)
		goto out;
	if (!(kept = calloc(inv.nversions + 1, sizeof(*kept)))) {
		ch_error_nomem(err);
		goto out;
	}
	if (mark_kept(st, &inv, o, cutoff, kept, err) < 0 ||
	    plan(st, &inv, kept, cutoff, r, err) < 0)
		goto out;
	if (o->yes) {
		at_point(o, "gc:after-plan");
		if (delete_all(st, o, r, &lease, err) < 0)
			goto out;
		at_point(o, "gc:after-delete");
	}
	rc = 0;
out:
	ch_lease_release(st, &lease);
	free(kept);
	ch_remote_inventory_release(&inv);
	if (rc < 0)
		ch_gc_report_release(r);
	return rc;
}

void ch_gc_report_release(struct ch_gc_report *r)
{
	free(r->kept);
	ch_store_list_release(&r->removed);
	memset(r, 0, sizeof(*r));
}
