/* remote/merge.c - parts already pushed to a remote, merged there: the
 * plan of pack/merge.c makes the merged manifest from the parts'
 * manifests and shard indexes (read by range requests), and the version
 * is written as push writes one.  No object is sent, fetched or copied:
 * the merged manifest names each shard by the hash it has in its part,
 * so its cas/ object is already the merged dataset's. */
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "chute/pack.h"
#include "chute/remote.h"
#include "pack/output.h"
#include "remote/lease.h"
#include "remote/publish.h"

/* "file:///x/" and "file:///x" are one remote. */
static int same_remote(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	while (na > 1 && a[na - 1] == '/')
		na--;
	while (nb > 1 && b[nb - 1] == '/')
		nb--;
	return na == nb && !memcmp(a, b, na);
}

struct parts {
	struct ch_ref *refs;
	struct ch_dataset *ds;
	struct ch_merge_part *p;
	size_t n, opened;
};

/* A part is a version on the remote the merge writes to: anywhere else,
 * its objects would not be the merged version's. */
static int open_part(struct parts *ps, size_t i, const char *text,
		     const char *remote, const char *cache_dir,
		     struct ch_error *err)
{
	struct ch_ref *ref = &ps->refs[i];
	if (ch_ref_parse(text, ref, err) < 0)
		return -1;
	if (!ref->remote)
		return ch_error_usage(err, "'%s' is not on %s: push each part "
				      "there first, tagged, and name it "
				      "REMOTE@TAG",
				      text, remote);
	if (!same_remote(ref->remote, remote))
		return ch_error_usage(err, "'%s' is on another remote than %s: "
				      "a merge on a remote takes versions "
				      "already there", text, remote);
	if (ch_ref_open_dataset(ref, cache_dir, 0, &ps->ds[i], err) < 0)
		return -1;
	ps->opened++;
	/* no order: shard indexes are read by range requests, never whole */
	ch_dataset_plan(&ps->ds[i], NULL, 0, 0);
	ps->p[i] = (struct ch_merge_part){text, &ps->ds[i]};
	return 0;
}

static void close_parts(struct parts *ps)
{
	for (size_t i = 0; i < ps->opened; i++)
		ch_dataset_release(&ps->ds[i]);
	for (size_t i = 0; ps->refs && i < ps->n; i++)
		ch_ref_release(&ps->refs[i]);
	free(ps->refs);
	free(ps->ds);
	free(ps->p);
}

static int open_parts(struct parts *ps, const char *const *texts, size_t n,
		      const struct ch_remote_merge_opts *o,
		      struct ch_error *err)
{
	ps->n = n;
	ps->refs = calloc(n ? n : 1, sizeof(*ps->refs));
	ps->ds = calloc(n ? n : 1, sizeof(*ps->ds));
	ps->p = calloc(n ? n : 1, sizeof(*ps->p));
	if (!ps->refs || !ps->ds || !ps->p)
		return ch_error_nomem(err);
	for (size_t i = 0; i < n; i++)
		if (open_part(ps, i, texts[i], o->remote, o->cache_dir,
			      err) < 0)
			return -1;
	return 0;
}

/* After the manifest, before the tags: waits while a gc holds its lease,
 * then checks that every object the merged version names is still there
 * (a gc that listed the versions before the manifest landed may have
 * removed a part's objects); a merge has nothing to send again. */
static int settle(struct ch_store *st, const struct ch_manifest *m,
		  struct ch_error *err)
{
	size_t n = m->nshards + m->nsplits;
	struct ch_store_job *jobs = calloc(n + 1, sizeof(*jobs));
	struct ch_transfer_opts xo = {0};
	int waited, rc = -1;
	if (!jobs)
		return ch_error_nomem(err);
	for (size_t i = 0; i < n; i++) {
		int sh = i < m->nshards;
		const struct ch_manifest_split *sp =
			&m->splits[sh ? 0 : i - m->nshards];
		jobs[i].key = ch_remote_cas_key(
			sh ? m->shards[i].hash : sp->hash,
			sh ? m->shards[i].path : sp->path);
		if (!jobs[i].key) {
			ch_error_nomem(err);
			goto out;
		}
	}
	if (ch_lease_wait(st, "merge:waiting-for-gc", NULL, NULL, &waited,
			  err) < 0 ||
	    ch_store_stat_many(st, jobs, n, &xo, err) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (!jobs[i].exists) {
			ch_error_set(err, "%s, which the merged version names, "
				     "was removed meanwhile (by chute gc?): "
				     "no tag moved; push the part that holds "
				     "it again, then merge", jobs[i].key);
			goto out;
		}
	rc = 0;
out:
	for (size_t i = 0; i < n; i++)
		free((char *)jobs[i].key);
	free(jobs);
	return rc;
}

/* What the merged version m replaces as the remote's latest: the version
 * tags/latest names now, and what m changes against it; nothing when the
 * remote has no latest.  Read before anything is written. */
static int read_latest(struct ch_store *st, const struct ch_manifest *m,
		       struct ch_remote_merge_report *r, struct ch_error *err)
{
	struct ch_manifest old = {0};
	struct ch_buf raw = {0};
	char id[33];
	int rc = ch_remote_resolve(st, "latest", id, err);
	if (rc == 1)
		return 0;
	if (rc == 0)
		rc = ch_remote_get_version(st, id, &old, &raw, err);
	if (rc == 0) {
		memcpy(r->replaced, id, sizeof(r->replaced));
		ch_pack_changes(m, &old, r->changes);
	}
	ch_manifest_release(&old);
	ch_buf_release(&raw);
	return rc == 0 ? 0 : -1;
}

int ch_remote_merge(struct ch_store *st, const char *const *parts, size_t n,
		    const struct ch_remote_merge_opts *o,
		    struct ch_remote_merge_report *r, struct ch_error *err)
{
	struct parts ps = {0};
	struct ch_manifest m = {0};
	char *text = NULL;
	size_t len;
	int rc = -1;
	memset(r, 0, sizeof(*r));
	if (ch_remote_check_tags(o->tags, o->ntags, err) < 0)
		return -1;
	if ((rc = open_parts(&ps, parts, n, o, err)) < 0 ||
	    (rc = ch_merge_plan(ps.p, n, o->name, o->cancel, o->progress,
				o->progress_arg, &m, err)) < 0)
		goto out;
	rc = -1;
	/* a merge starts a history: no parent, the id a local merge has */
	if (ch_manifest_format(&m, &text, &len, err) < 0 ||
	    read_latest(st, &m, r, err) < 0 ||
	    (o->cancel && *o->cancel && ch_error_interrupted(err) < 0) ||
	    ch_remote_put_version(st, m.id, text, len, err) < 0 ||
	    settle(st, &m, err) < 0 ||
	    ch_remote_put_tags(st, m.id, o->tags, o->ntags, 1, err) < 0)
		goto out;
	memcpy(r->id, m.id, sizeof(r->id));
	r->parts = n;
	r->shards = m.nshards;
	r->samples = m.samples;
	r->bytes = m.bytes;
	rc = 0;
out:
	free(text);
	ch_manifest_release(&m);
	close_parts(&ps);
	return rc;
}
