/*
 * version/split.c - deterministic train / val / test splits (chute split), and
 * reading a split back (for chute stream --split and chute ls --split).
 *
 * A sample's split depends only on its group and the seed: the group is
 * its key, or the text the first parenthesised group of the --group regex
 * captures in the key; u = (XXH3-64(seed as 8 bytes LE, then the group)
 * >> 11) * 2^-53 is in [0, 1), and u < test gives "test", u < test + val
 * "val", anything else "train".  So adding samples never moves one that
 * was already split, and a group never straddles two splits.
 *
 * Files: each split's sample numbers, u64 LE, ascending, in
 * splits/NAME-<16 hex of its XXH3-128>.ids.  Written under a temporary
 * name, renamed to the content-named one, then the manifest is replaced,
 * then files no manifest names any more are removed: an old and a new
 * version never share a split file name, so a reader of either manifest
 * sees the files it expects until the old ones go.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chute/version.h"
#include "common/bytes.h"
#include "common/counter.h"
#include "common/internal.h"
#include "common/xxh.h"

#define FRACTION_UNITS 10000
#define OUT_BUFFER (1u << 16)
#define KEY_SHOWN 200 /* bytes of a key quoted in a message */

/* The three splits chute split makes, in the order of the thresholds. */
enum { SET_TEST, SET_VAL, SET_TRAIN, NSETS };
static const char *const set_names[NSETS] = { "test", "val", "train" };

struct set_out {
	long units;	   /* share in 1/10000; 0: not written */
	double fraction;
	struct ch_temp tmp; /* DIR/.SET.ids.tmp-PID until renamed */
	char rel[96];	   /* "splits/val-0123456789abcdef.ids" */
	char *full;	   /* ROOT/rel once renamed into place */
	int placed_new;	   /* renamed to a name the old manifest lacks */
	XXH3_state_t *hash;
	uint8_t *buf;	   /* OUT_BUFFER bytes of sample numbers */
	size_t used;
	uint64_t samples;
	struct ch_hash128 digest;
	uint64_t *classes; /* per class, with classes */
	uint64_t unlabelled;
};

struct splitter {
	const struct ch_split_opts *o;
	struct ch_split_result *res;
	struct ch_dataset ds;
	char *manifest_path;
	char *dir; /* ROOT/splits */
	regex_t re;
	int have_re;
	double test, test_val; /* the thresholds u is compared with */
	struct set_out sets[NSETS];
	struct ch_buf group; /* seed, then the group's bytes */
	struct ch_buf key;   /* the key NUL-terminated, for regexec */
	struct ch_block_reader *reader; /* with classes: to read cls */
	int manifest_written; /* in place although writing it failed */
	int made_dir;	      /* splits/ did not exist before */
	struct ch_counter progress;
};

static int cancelled(const struct splitter *sp)
{
	return sp->o->cancel && *sp->o->cancel;
}

/* A share given as a double, in units of 1/10000, or -1. */
static long share_units(double f)
{
	long k;

	if (!(f >= 0.0 && f < 1.0))
		return -1;
	k = lround(f * FRACTION_UNITS);
	if (fabs(f * FRACTION_UNITS - (double)k) > 1e-6)
		return -1;
	return k;
}

/* ------------------------------------------------------------------ */
/* Options                                                              */

static int compile_group(struct splitter *sp, struct ch_error *err)
{
	char why[256];
	int rc;

	if (!sp->o->group)
		return 0;
	if (!*sp->o->group) {
		ch_error_usage(err, "empty group regex");
		return ch_error_setting(err, "group");
	}
	rc = regcomp(&sp->re, sp->o->group, REG_EXTENDED);
	if (rc != 0) {
		regerror(rc, NULL, why, sizeof(why));
		ch_error_usage(err, "invalid group regex '%s': %s",
			       sp->o->group, why);
		return ch_error_setting(err, "group");
	}
	sp->have_re = 1;
	if (sp->re.re_nsub < 1) {
		ch_error_usage(err, "group regex '%s' has no parenthesised "
			       "group to name a sample's group", sp->o->group);
		return ch_error_setting(err, "group");
	}
	return 0;
}

/* Shares as exact multiples of 1/10000 (the manifest records them so),
 * and the thresholds from the recorded values. */
static int check_opts(struct splitter *sp, struct ch_error *err)
{
	const struct ch_split_opts *o = sp->o;
	long test = share_units(o->test), val = share_units(o->val);

	if (test < 0 || val < 0) {
		ch_error_usage(err, "%s share %g: expected a fraction from 0 "
			       "to below 1 in steps of 0.0001",
			       test < 0 ? "test" : "val",
			       test < 0 ? o->test : o->val);
		return ch_error_setting(err, test < 0 ? "test" : "val");
	}
	if (test + val >= FRACTION_UNITS) {
		ch_error_usage(err, "val %g and test %g leave nothing for "
			       "train: together they must stay below 1",
			       o->val, o->test);
		return ch_error_setting(err, "val test");
	}
	if (o->seed > (uint64_t)INT64_MAX) {
		ch_error_usage(err, "seed %" PRIu64 ": at most 2^63-1",
			       o->seed);
		return ch_error_setting(err, "seed");
	}
	sp->sets[SET_TEST].units = test;
	sp->sets[SET_VAL].units = val;
	sp->sets[SET_TRAIN].units = FRACTION_UNITS - test - val;
	for (int s = 0; s < NSETS; s++)
		sp->sets[s].fraction =
			(double)sp->sets[s].units / FRACTION_UNITS;
	sp->test = sp->sets[SET_TEST].fraction;
	sp->test_val = sp->test + sp->sets[SET_VAL].fraction;
	return compile_group(sp, err);
}

/* ------------------------------------------------------------------ */
/* Assignment                                                           */

/* The group of a key: the key itself, or what the regex's first group
 * captures in it. */
static int group_of(struct splitter *sp, const char *key, size_t len,
		    const char **g, size_t *glen, struct ch_error *err)
{
	regmatch_t mt[2];
	const char *k;

	*g = key;
	*glen = len;
	if (!sp->have_re)
		return 0;
	sp->key.len = 0;
	if (ch_buf_append(&sp->key, key, len, err) < 0 ||
	    ch_buf_append(&sp->key, "", 1, err) < 0)
		return -1;
	k = (const char *)sp->key.data;
	if (regexec(&sp->re, k, 2, mt, 0) != 0 || mt[1].rm_so < 0) {
		ch_error_data(err, "key '%.*s%s' does not match the group "
			      "regex '%s' (or its first group takes no part "
			      "in the match)",
			      (int)(len > KEY_SHOWN ? KEY_SHOWN : len), key,
			      len > KEY_SHOWN ? "..." : "", sp->o->group);
		return ch_error_setting(err, "group");
	}
	*g = k + mt[1].rm_so;
	*glen = (size_t)(mt[1].rm_eo - mt[1].rm_so);
	return 0;
}

static int assign(struct splitter *sp, const char *key, size_t len,
		  int *set, struct ch_error *err)
{
	const char *g;
	size_t glen;
	uint8_t seed[8];
	uint64_t h;
	double u;

	if (group_of(sp, key, len, &g, &glen, err) < 0)
		return -1;
	st64(seed, sp->o->seed);
	sp->group.len = 0;
	if (ch_buf_append(&sp->group, seed, 8, err) < 0 ||
	    ch_buf_append(&sp->group, g, glen, err) < 0)
		return -1;
	h = ch_hash64(sp->group.data, sp->group.len);
	u = ldexp((double)(h >> 11), -53);
	*set = u < sp->test ? SET_TEST : u < sp->test_val ? SET_VAL
							 : SET_TRAIN;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Split files                                                          */

static int flush_set(struct set_out *so, struct ch_error *err)
{
	size_t off = 0;

	XXH3_128bits_update(so->hash, so->buf, so->used);
	while (off < so->used) {
		ssize_t n = write(so->tmp.fd, so->buf + off, so->used - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ch_error_errno(err, errno, "cannot write '%s'",
					      so->tmp.path);
		off += (size_t)n;
	}
	so->used = 0;
	return 0;
}

static int add_sample(struct set_out *so, uint64_t n, struct ch_error *err)
{
	if (so->used == OUT_BUFFER && flush_set(so, err) < 0)
		return -1;
	st64(so->buf + so->used, n);
	so->used += 8;
	so->samples++;
	return 0;
}

static int open_sets(struct splitter *sp, size_t nclasses,
		     struct ch_error *err)
{
	for (int s = 0; s < NSETS; s++) {
		struct set_out *so = &sp->sets[s];

		if (so->units == 0)
			continue;
		char ids[16];
		snprintf(ids, sizeof(ids), "%s.ids", set_names[s]);
		if (ch_temp_create(&so->tmp, sp->dir, ids, 0, err) < 0)
			return -1;
		so->buf = malloc(OUT_BUFFER);
		so->hash = XXH3_createState();
		if (nclasses)
			so->classes = calloc(nclasses, sizeof(*so->classes));
		if (!so->buf || !so->hash || (nclasses && !so->classes))
			return ch_error_nomem(err);
		XXH3_128bits_reset(so->hash);
	}
	return 0;
}

static int old_manifest_names(const struct splitter *sp, const char *rel)
{
	const struct ch_manifest *m = &sp->ds.manifest;

	for (size_t i = 0; i < m->nsplits; i++)
		if (strcmp(m->splits[i].path, rel) == 0)
			return 1;
	return 0;
}

/* Flushes and syncs a split file, then renames it to its content's name
 * (an existing file of that name holds the same bytes). */
static int place_set(struct splitter *sp, int s, struct ch_error *err)
{
	struct set_out *so = &sp->sets[s];
	XXH128_hash_t h;
	char hex[33];
	int rc;

	if (flush_set(so, err) < 0)
		return -1;
	rc = fsync(so->tmp.fd);
	if (rc < 0)
		return ch_error_errno(err, errno, "cannot write '%s'",
				      so->tmp.path);
	h = XXH3_128bits_digest(so->hash);
	so->digest = (struct ch_hash128){ h.high64, h.low64 };
	ch_hash128_hex(so->digest, hex);
	snprintf(so->rel, sizeof(so->rel), "splits/%s-%.16s.ids",
		 set_names[s], hex);
	so->full = ch_path_join(sp->ds.root, so->rel);
	if (!so->full)
		return ch_error_nomem(err);
	if (rename(so->tmp.path, so->full) < 0)
		return ch_error_errno(err, errno, "cannot rename '%s' to '%s'",
				      so->tmp.path, so->full);
	ch_temp_release(&so->tmp, 0); /* renamed before it is unlocked */
	so->placed_new = !old_manifest_names(sp, so->rel);
	return 0;
}

/* On failure: temporary files, and the placed files the old manifest
 * does not name, go. */
static void discard_sets(struct splitter *sp)
{
	for (int s = 0; s < NSETS; s++) {
		struct set_out *so = &sp->sets[s];

		ch_temp_release(&so->tmp, 1);
		if (so->placed_new && !sp->manifest_written)
			unlink(so->full);
	}
	if (sp->made_dir && !sp->manifest_written)
		rmdir(sp->dir); /* only if empty: nothing else of ours */
}

/* ------------------------------------------------------------------ */
/* Walking the samples                                                  */

/* The class of sample i from its cls field (decimal text), or -1. */
static int64_t class_of(struct splitter *sp, const struct ch_shard *sh,
			uint64_t i, const struct ch_sample_info *si,
			struct ch_error *err, int *failed)
{
	struct ch_field_info f;
	const uint8_t *data;
	uint64_t v = 0;

	*failed = 0;
	for (uint32_t k = 0; k < si->nfields; k++) {
		ch_shard_field(sh, i, k, &f);
		if (strcmp(f.name, "cls") != 0)
			continue;
		if (ch_sample_fetch(sp->reader, sh, i, &data, err) < 0) {
			*failed = 1;
			return -1;
		}
		if (f.size == 0 || f.size > 18)
			return -1;
		for (uint64_t b = 0; b < f.size; b++) {
			uint8_t c = data[f.offset + b];
			if (c < '0' || c > '9')
				return -1;
			v = v * 10 + (uint64_t)(c - '0');
		}
		return v < sp->ds.manifest.nclasses ? (int64_t)v : -1;
	}
	return -1;
}

static int tally(struct splitter *sp, struct set_out *so,
		 const struct ch_shard *sh, uint64_t i,
		 const struct ch_sample_info *si, struct ch_error *err)
{
	int failed;
	int64_t c;

	if (!so->classes)
		return 0;
	c = class_of(sp, sh, i, si, err, &failed);
	if (failed) {
		err->kind = CH_ERR_DATA; /* its shard cannot be read */
		return -1;
	}
	if (c < 0)
		so->unlabelled++;
	else
		so->classes[c]++;
	return 0;
}

static int split_shard_samples(struct splitter *sp, const struct ch_shard *sh,
			       uint64_t first, struct ch_error *err)
{
	uint64_t n = ch_shard_sample_count(sh);

	for (uint64_t i = 0; i < n; i++) {
		struct ch_sample_info si;
		int set;

		if ((i & 0xffff) == 0 && cancelled(sp))
			return ch_error_interrupted(err);
		ch_shard_sample(sh, i, &si);
		if (assign(sp, si.key, si.key_len, &set, err) < 0 ||
		    add_sample(&sp->sets[set], first + i, err) < 0 ||
		    tally(sp, &sp->sets[set], sh, i, &si, err) < 0)
			return -1;
		ch_counter_add(&sp->progress, 1, 0);
	}
	return 0;
}

/* One shard at a time, opened and closed here: memory stays that of one
 * index, whatever the dataset's size. */
static int split_shards(struct splitter *sp, struct ch_error *err)
{
	const struct ch_manifest *m = &sp->ds.manifest;

	ch_counter_init(&sp->progress, sp->o->progress, sp->o->progress_arg);
	ch_counter_phase(&sp->progress, "assigning", "samples", m->samples, 0);
	for (size_t s = 0; s < m->nshards; s++) {
		const struct ch_manifest_shard *ms = &m->shards[s];
		char *path = ch_dataset_shard_path(&sp->ds, s);
		struct ch_shard *sh = NULL;
		int rc;

		if (!path)
			return ch_error_nomem(err);
		rc = ch_shard_open(&sh, path, err);
		free(path);
		if (rc == 0)
			rc = ch_dataset_check_shard(&sp->ds, s, sh, err);
		if (rc < 0) {
			err->kind = CH_ERR_DATA; /* even a missing file */
			ch_shard_close(sh);
			return -1;
		}
		rc = split_shard_samples(sp, sh, ms->first_sample, err);
		ch_shard_close(sh);
		if (rc < 0)
			return -1;
	}
	ch_counter_end(&sp->progress);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The new manifest                                                     */

static void free_splits(struct ch_manifest *m)
{
	for (size_t i = 0; i < m->nsplits; i++) {
		free(m->splits[i].name);
		free(m->splits[i].path);
	}
	free(m->splits);
	m->splits = NULL;
	m->nsplits = 0;
	free(m->split_rule.group);
	m->split_rule.group = NULL;
}

/* The splits made, in name order ("test" < "train" < "val"), with their
 * tallies beside them. */
static int record_splits(struct splitter *sp, struct ch_manifest *m,
			 struct ch_error *err)
{
	static const int by_name[NSETS] = { SET_TEST, SET_TRAIN, SET_VAL };
	struct ch_split_result *res = sp->res;

	free_splits(m);
	m->splits = calloc(NSETS, sizeof(*m->splits));
	res->tallies = calloc(NSETS, sizeof(*res->tallies));
	if (!m->splits || !res->tallies)
		return ch_error_nomem(err);
	m->split_rule.seed = sp->o->seed;
	if (sp->o->group && !(m->split_rule.group = strdup(sp->o->group)))
		return ch_error_nomem(err);
	for (int k = 0; k < NSETS; k++) {
		struct set_out *so = &sp->sets[by_name[k]];
		struct ch_manifest_split *out = &m->splits[m->nsplits];

		if (so->units == 0)
			continue;
		out->name = strdup(set_names[by_name[k]]);
		out->path = strdup(so->rel);
		if (!out->name || !out->path)
			return ch_error_nomem(err);
		out->samples = so->samples;
		out->bytes = 8 * so->samples;
		out->hash = so->digest;
		out->fraction = so->fraction;
		res->tallies[m->nsplits].classes = so->classes;
		res->tallies[m->nsplits].unlabelled = so->unlabelled;
		so->classes = NULL;
		m->nsplits++;
	}
	return 0;
}

/* Whether the new manifest is in place after all: ch_manifest_write may
 * fail after its rename (syncing the folder), and then the split files
 * it names must stay. */
static int manifest_in_place(const struct splitter *sp)
{
	struct ch_manifest now;
	struct ch_error ignored;
	int same;

	if (ch_manifest_read(&now, sp->manifest_path, &ignored) < 0)
		return 0;
	same = strcmp(now.id, sp->res->manifest.id) == 0;
	ch_manifest_release(&now);
	return same;
}

/* Reads the manifest again (the copy that becomes the new version) and
 * makes sure it is still the one split: a pack or split that replaced it
 * meanwhile must not be overwritten with stale content. */
static int write_manifest(struct splitter *sp, struct ch_error *err)
{
	struct ch_manifest *m = &sp->res->manifest;

	if (ch_manifest_read(m, sp->manifest_path, err) < 0)
		return -1;
	if (strcmp(m->id, sp->ds.manifest.id) != 0)
		return ch_error_set(err, "'%s' changed while it was being "
				    "split: nothing written",
				    sp->manifest_path);
	free(m->chute_version);
	m->chute_version = strdup(CH_VERSION);
	m->format_version = 0; /* a new version: the current format */
	if (!m->chute_version)
		return ch_error_nomem(err);
	if (record_splits(sp, m, err) < 0 ||
	    ch_history_set_parent(sp->ds.root, &sp->ds.manifest, m, err) < 0)
		return -1;
	/* History first (the old version too, for folders packed before
	 * there was any), so that a failure leaves the old manifest. */
	if (ch_history_save(sp->ds.root, &sp->ds.manifest, err) < 0 ||
	    ch_history_save(sp->ds.root, m, err) < 0 ||
	    ch_statcache_record_files(sp->ds.root, m, CH_STAT_SPLITS, err) < 0)
		return -1;
	if (ch_manifest_write(m, sp->manifest_path, err) == 0)
		return 0;
	sp->manifest_written = manifest_in_place(sp);
	return -1;
}

/* "val-0123456789abcdef.ids": a name chute split gives. */
static int is_split_file(const char *f)
{
	size_t n = strlen(f), name;

	if (n < 1 + 1 + 16 + 4 || strcmp(f + n - 4, ".ids") != 0)
		return 0;
	name = n - 4 - 16 - 1;
	if (f[name] != '-' || name > 32 ||
	    strspn(f + name + 1, "0123456789abcdef") < 16)
		return 0;
	return strspn(f, "abcdefghijklmnopqrstuvwxyz0123456789_-") >= name;
}

/* After the new manifest is in place: split files it does not name (the
 * old version's, or those of a run that was killed) go.  Failing to
 * remove one is no failure of the split. */
static void remove_stale(struct splitter *sp)
{
	const struct ch_manifest *m = &sp->res->manifest;
	DIR *d = opendir(sp->dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		int named = 0;

		if (!is_split_file(de->d_name))
			continue;
		for (size_t i = 0; i < m->nsplits && !named; i++)
			named = strcmp(m->splits[i].path + 7, de->d_name) == 0;
		if (!named)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	if (d)
		closedir(d);
}

/* ------------------------------------------------------------------ */
/* ch_split                                                             */

static int open_dataset(struct splitter *sp, const char *path,
			struct ch_error *err)
{
	if (ch_dataset_open_folder(&sp->ds, path, err) < 0)
		return -1;
	if (sp->ds.lone_shard)
		return ch_error_usage(err, "'%s' is a lone shard: splits are "
				      "recorded in a dataset's manifest, give "
				      "the dataset folder", path);
	if (!sp->ds.manifest.id_ok)
		return ch_error_data(err, "the id of '%s' does not match its "
				     "content (was it edited?): run chute "
				     "verify", path);
	sp->manifest_path = ch_manifest_path(path);
	sp->dir = ch_path_join(sp->ds.root, "splits");
	if (!sp->manifest_path || !sp->dir)
		return ch_error_nomem(err);
	return 0;
}

static int run_split(struct splitter *sp, const char *path,
		     struct ch_error *err)
{
	size_t nclasses;

	if (check_opts(sp, err) < 0 || open_dataset(sp, path, err) < 0)
		return -1;
	nclasses = sp->ds.manifest.nclasses;
	if (nclasses && !(sp->reader = ch_block_reader_new()))
		return ch_error_nomem(err);
	sp->made_dir = access(sp->dir, F_OK) < 0;
	if (ch_mkdir_p(sp->dir, err) < 0 || open_sets(sp, nclasses, err) < 0 ||
	    split_shards(sp, err) < 0)
		return -1;
	for (int s = 0; s < NSETS; s++)
		if (sp->sets[s].units && place_set(sp, s, err) < 0)
			return -1;
	if (cancelled(sp))
		return ch_error_interrupted(err);
	if (ch_fsync_dir(sp->dir, err) < 0 || write_manifest(sp, err) < 0)
		return -1;
	remove_stale(sp);
	return 0;
}

int ch_split(const char *path, const struct ch_split_opts *o,
	     struct ch_split_result *res, struct ch_error *err)
{
	struct splitter sp = { .o = o, .res = res };
	int rc;

	memset(res, 0, sizeof(*res));
	for (int s = 0; s < NSETS; s++)
		sp.sets[s].tmp.fd = -1;
	rc = run_split(&sp, path, err);
	if (rc == 0)
		memcpy(res->replaced, sp.ds.manifest.id, sizeof(res->replaced));
	if (rc < 0) {
		discard_sets(&sp);
		ch_split_result_release(res);
	}
	for (int s = 0; s < NSETS; s++) {
		struct set_out *so = &sp.sets[s];
		ch_temp_release(&so->tmp, 0);
		free(so->full);
		free(so->buf);
		free(so->classes);
		XXH3_freeState(so->hash);
	}
	if (sp.have_re)
		regfree(&sp.re);
	ch_block_reader_free(sp.reader);
	ch_buf_release(&sp.group);
	ch_buf_release(&sp.key);
	free(sp.manifest_path);
	free(sp.dir);
	ch_dataset_release(&sp.ds);
	return rc;
}

void ch_split_result_release(struct ch_split_result *res)
{
	if (!res)
		return;
	if (res->tallies)
		for (size_t i = 0; i < res->manifest.nsplits; i++)
			free(res->tallies[i].classes);
	free(res->tallies);
	ch_manifest_release(&res->manifest);
	memset(res, 0, sizeof(*res));
}

/* ------------------------------------------------------------------ */
/* ch_split_load                                                        */

static const struct ch_manifest_split *find_split(const struct ch_dataset *ds,
						  const char *name,
						  struct ch_error *err)
{
	const struct ch_manifest *m = &ds->manifest;
	const char *root = ds->lone_shard ? m->shards[0].path : ds->root;
	int lone = ds->lone_shard;
	char names[512] = "";
	size_t used = 0;

	for (size_t i = 0; i < m->nsplits; i++)
		if (strcmp(m->splits[i].name, name) == 0)
			return &m->splits[i];
	if (m->nsplits == 0) {
		ch_error_usage(err, "'%s' has no splits: %s", root, lone ?
			       "a lone shard has no manifest to record them" :
			       "make them with chute split");
		return NULL;
	}
	for (size_t i = 0; i < m->nsplits && used < sizeof(names); i++) {
		int n = snprintf(names + used, sizeof(names) - used, "%s%s",
				 i ? ", " : "", m->splits[i].name);
		if (n > 0)
			used += (size_t)n;
	}
	ch_error_usage(err, "'%s' has no split '%s'; its splits: %s", root,
		       name, names);
	return NULL;
}

static int read_exact(const char *path, uint8_t *buf, uint64_t size,
		      struct ch_error *err)
{
	int fd = ch_open_regular(path, err);
	struct stat st;
	uint64_t off = 0;
	int rc = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		ch_error_errno(err, errno, "cannot read '%s'", path);
		goto out;
	}
	if ((uint64_t)st.st_size != size) {
		ch_error_data(err, "'%s' has %llu %s, the manifest says "
			      "%" PRIu64 ": run chute verify", path,
			      (unsigned long long)st.st_size,
			      ch_plural((uint64_t)st.st_size, "byte", "bytes"),
			      size);
		goto out;
	}
	while (off < size) {
		ssize_t n = read(fd, buf + off, size - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ch_error_errno(err, n < 0 ? errno : EIO,
				       "cannot read '%s' at byte %" PRIu64,
				       path, off);
			goto out;
		}
		off += (uint64_t)n;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Hash, then order and range, as chute verify checks them. */
static int check_ids(const struct ch_manifest_split *sp, const char *path,
		     const uint8_t *buf, uint64_t *ids, uint64_t samples,
		     struct ch_error *err)
{
	struct ch_hash128 h = ch_hash128(buf, sp->bytes);

	if (h.high != sp->hash.high || h.low != sp->hash.low)
		return ch_error_data(err, "'%s' does not match the manifest's "
				     "hash: run chute verify", path);
	for (uint64_t i = 0; i < sp->samples; i++) {
		uint64_t v = 0;
		for (int b = 7; b >= 0; b--)
			v = v << 8 | buf[8 * i + (unsigned)b];
		if (v >= samples || (i > 0 && v <= ids[i - 1]))
			return ch_error_data(err, "'%s' at byte %" PRIu64 ": "
					     "sample number %" PRIu64 " is %s",
					     path, 8 * i, v, v >= samples ?
					     "past the dataset's end" :
					     "not above the previous one");
		ids[i] = v;
	}
	return 0;
}

int ch_split_load(const struct ch_dataset *ds, const char *name,
		  uint64_t **ids, uint64_t *count, struct ch_error *err)
{
	const struct ch_manifest_split *sp =
		find_split(ds, name, err);
	uint8_t *buf = NULL;
	uint64_t *out = NULL;
	char *path = NULL;
	int rc = -1;

	if (!sp)
		return -1;
	buf = malloc(sp->bytes ? sp->bytes : 1);
	out = malloc(sp->samples ? sp->samples * sizeof(*out) : 1);
	if (!buf || !out) {
		ch_error_set(err, "out of memory reading split '%s'", name);
		goto out;
	}
	if (ch_dataset_file(ds, sp->path, sp->bytes, sp->hash, &path, err) < 0)
		goto out;
	if ((rc = read_exact(path, buf, sp->bytes, err)) < 0)
		ch_error_if_missing(err, path); /* the manifest names it */
	ch_dataset_file_done(ds, sp->path, sp->hash);
	if (rc < 0 ||
	    check_ids(sp, path, buf, out, ds->manifest.samples, err) < 0) {
		rc = -1;
		goto out;
	}
	*ids = out;
	*count = sp->samples;
	out = NULL;
	rc = 0;
out:
	free(out);
	free(buf);
	free(path);
	return rc;
}
