/* version/dataset.c - a dataset folder, a manifest file, or a lone shard,
 * opened the same way for ls, cat, export and verify. */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chute/version.h"
#include "common/internal.h"
#include "shard/format.h"


/* A file named *.chs is a shard whatever its bytes (a damaged magic is
 * then reported as such, not as a manifest that is not JSON); any other
 * file is one when it starts with the magic. */
int ch_dataset_is_lone_shard(const char *path)
{
	size_t n = strlen(path);
	if (n > 4 && strcmp(path + n - 4, ".chs") == 0)
		return 1;
	int fd = ch_open_regular(path, NULL);
	char magic[8];
	int yes = fd >= 0 && read(fd, magic, 8) == 8 &&
		  memcmp(magic, CHS_MAGIC, 8) == 0;
	if (fd >= 0)
		close(fd);
	return yes;
}

/* A lone shard gets a one-shard manifest so that callers see one shape. */
static int open_lone_shard(struct ch_dataset *ds, const char *path,
			   struct ch_error *err)
{
	char *a = strdup(path), *b = strdup(path);
	struct ch_manifest *m = &ds->manifest;
	int rc = -1;
	ds->lone_shard = 1;
	if (!a || !b || !(ds->root = strdup(dirname(a))) ||
	    !(m->shards = calloc(1, sizeof(*m->shards))) ||
	    !(m->shards[0].path = strdup(basename(b))) ||
	    !(ds->shards = calloc(1, sizeof(*ds->shards)))) {
		ch_error_nomem(err);
		goto out;
	}
	m->nshards = 1;
	if ((rc = ch_shard_open(&ds->shards[0], path, err)) < 0 ||
	    (rc = ch_shard_content_id(ds->shards[0], m->id, err)) < 0)
		goto out;
	m->samples = m->shards[0].samples = ch_shard_sample_count(ds->shards[0]);
	m->shard_bytes = m->shards[0].bytes = ch_shard_file_size(ds->shards[0]);
	rc = 0;
out:
	free(a);
	free(b);
	return rc;
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *ch_manifest_path(const char *path)
{
	return is_dir(path) ? ch_path_join(path, "manifest.json")
			    : strdup(path);
}

char *ch_dataset_dir(const char *path)
{
	if (is_dir(path))
		return strdup(path);
	char *a = strdup(path), *d = a ? strdup(dirname(a)) : NULL;
	free(a);
	return d;
}

int ch_dataset_open(struct ch_dataset *ds, const char *path,
		    struct ch_error *err)
{
	struct stat st;
	char *man = NULL;
	int rc = -1;
	memset(ds, 0, sizeof(*ds));
	if (stat(path, &st) < 0)
		return ch_error_errno(err, errno, "cannot open '%s'", path);
	if (!S_ISDIR(st.st_mode) && ch_dataset_is_lone_shard(path)) {
		if ((rc = open_lone_shard(ds, path, err)) < 0)
			goto fail;
		return 0;
	}
	ds->root = ch_dataset_dir(path);
	man = ch_manifest_path(path);
	if (!ds->root || !man) {
		ch_error_nomem(err);
		goto fail;
	}
	if (ch_manifest_read(&ds->manifest, man, err) < 0)
		goto fail;
	ds->shards = calloc(ds->manifest.nshards ? ds->manifest.nshards : 1,
			    sizeof(*ds->shards));
	if (!ds->shards) {
		ch_error_nomem(err);
		goto fail;
	}
	free(man);
	return 0;
fail:
	free(man);
	ch_dataset_release(ds);
	return rc;
}

int ch_dataset_open_folder(struct ch_dataset *ds, const char *path,
			   struct ch_error *err)
{
	if (ch_dataset_open(ds, path, err) == 0)
		return 0;
	/* a shard is the wrong argument, damaged or not: say that */
	if (err && err->kind == CH_ERR_DATA && !is_dir(path) &&
	    ch_dataset_is_lone_shard(path))
		ch_error_usage(err, "'%s' is a shard, not a dataset folder: "
			       "give the folder that holds its manifest",
			       path);
	return -1;
}

void ch_dataset_release(struct ch_dataset *ds)
{
	if (ds->shards)
		for (size_t i = 0; i < ds->manifest.nshards; i++)
			ch_shard_close(ds->shards[i]);
	if (ds->source && ds->source->release)
		ds->source->release(ds->source_arg);
	free(ds->shards);
	free(ds->root);
	ch_manifest_release(&ds->manifest);
	memset(ds, 0, sizeof(*ds));
}

char *ch_dataset_shard_path(const struct ch_dataset *ds, size_t s)
{
	return ch_path_join(ds->root, ds->manifest.shards[s].path);
}

int ch_dataset_file(const struct ch_dataset *ds, const char *rel,
		    uint64_t bytes, struct ch_hash128 hash, char **path,
		    struct ch_error *err)
{
	if (ds->source)
		return ds->source->local(ds->source_arg, rel, bytes, hash,
					 path, err);
	if (!(*path = ch_path_join(ds->root, rel)))
		return ch_error_nomem(err);
	return 0;
}

void ch_dataset_fetch_stats(const struct ch_dataset *ds,
			    struct ch_fetch_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (ds->source && ds->source->stats)
		ds->source->stats(ds->source_arg, out);
}

void ch_dataset_file_done(const struct ch_dataset *ds, const char *rel,
			  struct ch_hash128 hash)
{
	if (ds->source && ds->source->done)
		ds->source->done(ds->source_arg, rel, hash);
}

void ch_dataset_plan(const struct ch_dataset *ds, const size_t *order,
		     size_t n, size_t ahead)
{
	if (ds->source && ds->source->plan)
		ds->source->plan(ds->source_arg, order, n, ahead);
}

/* 1 and *src when shard s is to be read by ranges, 0 if from a file. */
static int ranged(const struct ch_dataset *ds, size_t s,
		  struct ch_byte_source *src, struct ch_error *err)
{
	if (!ds->source || !ds->source->ranged)
		return 0;
	return ds->source->ranged(ds->source_arg, s, src, err);
}

int ch_dataset_shard_memory(const struct ch_dataset *ds, size_t s,
			    uint64_t *bytes, struct ch_error *err)
{
	const struct ch_manifest_shard *ms = &ds->manifest.shards[s];
	struct ch_byte_source src;
	char *path;
	int rc = ranged(ds, s, &src, err);
	if (rc == 1) {
		rc = ch_shard_open_memory_source(ms->path, &src, bytes, err);
		if (src.release)
			src.release(src.arg);
		return rc;
	}
	if (rc < 0 ||
	    ch_dataset_file(ds, ms->path, ms->bytes, ms->hash, &path, err) < 0)
		return -1;
	if ((rc = ch_shard_open_memory(path, bytes, err)) < 0)
		ch_error_if_missing(err, path);
	ch_dataset_file_done(ds, ms->path, ms->hash);
	free(path);
	return rc;
}

static int cmp_field_name(const void *key, const void *field)
{
	return strcmp(key, ((const struct ch_manifest_field *)field)->name);
}

const char *ch_dataset_unlisted_field(const struct ch_manifest *m,
				      const struct ch_shard *sh)
{
	for (uint32_t i = 0; i < ch_shard_name_count(sh); i++) {
		const char *name = ch_shard_name(sh, i);
		if (!m->nfields ||
		    !bsearch(name, m->fields, m->nfields, sizeof(*m->fields),
			     cmp_field_name))
			return name;
	}
	return NULL;
}

static int not_bound(const struct ch_manifest_shard *ms, const char *what,
		     uint64_t has, uint64_t says, struct ch_error *err)
{
	return ch_error_data(err, "'%s' is not the shard the manifest names: "
			     "it has %s %llu, the manifest says %llu (run "
			     "chute verify)", ms->path, what,
			     (unsigned long long)has,
			     (unsigned long long)says);
}

int ch_dataset_check_shard(const struct ch_dataset *ds, size_t s,
			   const struct ch_shard *sh, struct ch_error *err)
{
	const struct ch_manifest_shard *ms = &ds->manifest.shards[s];
	if (ds->lone_shard)
		return 0; /* its manifest was made from it */
	if (ch_shard_file_size(sh) != ms->bytes)
		return not_bound(ms, "size", ch_shard_file_size(sh), ms->bytes,
				 err);
	if (ch_shard_sample_count(sh) != ms->samples)
		return not_bound(ms, "sample count", ch_shard_sample_count(sh),
				 ms->samples, err);
	struct ch_hash128 seal = ch_shard_seal(sh);
	if (ms->has_seal && (seal.high != ms->seal.high ||
			     seal.low != ms->seal.low)) {
		char a[33], b[33];
		ch_hash128_hex(seal, a);
		ch_hash128_hex(ms->seal, b);
		return ch_error_data(err, "'%s' is not the shard the manifest "
				     "names: its seal is %s, the manifest "
				     "says %s (run chute verify)", ms->path,
				     a, b);
	}
	const char *field = ch_dataset_unlisted_field(&ds->manifest, sh);
	if (field)
		return ch_error_data(err, "'%s' holds field '%s', which the "
				     "manifest's schema does not list (run "
				     "chute verify)", ms->path, field);
	return 0;
}

int ch_dataset_open_shard(const struct ch_dataset *ds, size_t s,
			  unsigned flags, struct ch_shard **out,
			  struct ch_error *err)
{
	if (s >= ds->manifest.nshards)
		return ch_error_set(err, "no shard %zu", s);
	const struct ch_manifest_shard *ms = &ds->manifest.shards[s];
	struct ch_byte_source src;
	struct ch_shard *sh;
	char *path;
	int rc = ranged(ds, s, &src, err);
	if (rc == 1) {
		rc = ch_shard_open_flags(&sh, ms->path, &src, flags, err);
	} else if (rc == 0) {
		if (ch_dataset_file(ds, ms->path, ms->bytes, ms->hash, &path,
				    err) < 0)
			return -1;
		rc = ch_shard_open_flags(&sh, path, NULL, flags, err);
		if (rc < 0) /* a shard the manifest names: missing is data */
			ch_error_if_missing(err, path);
		ch_dataset_file_done(ds, ms->path, ms->hash);
		free(path);
	}
	if (rc < 0)
		return rc;
	if (ch_dataset_check_shard(ds, s, sh, err) < 0) {
		ch_shard_close(sh);
		return -1;
	}
	*out = sh;
	return 0;
}

int ch_dataset_shard(struct ch_dataset *ds, size_t s, struct ch_shard **out,
		     struct ch_error *err)
{
	if (s >= ds->manifest.nshards)
		return ch_error_set(err, "no shard %zu", s);
	int rc;
	if (!ds->shards[s] &&
	    (rc = ch_dataset_open_shard(ds, s, 0, &ds->shards[s], err)) < 0)
		return rc;
	*out = ds->shards[s];
	return 0;
}

int ch_dataset_find(struct ch_dataset *ds, const char *key, size_t *shard,
		    uint64_t *sample, struct ch_error *err)
{
	for (size_t s = 0; s < ds->manifest.nshards; s++) {
		struct ch_shard *sh;
		int rc = ch_dataset_shard(ds, s, &sh, err);
		if (rc < 0)
			return rc;
		int64_t i = ch_shard_find(sh, key, strlen(key));
		if (i >= 0) {
			*shard = s;
			*sample = (uint64_t)i;
			return 0;
		}
	}
	return ch_error_set(err, "no sample with key '%s'", key);
}

int ch_dataset_locate(struct ch_dataset *ds, uint64_t n, size_t *shard,
		      uint64_t *sample, struct ch_error *err)
{
	const struct ch_manifest *m = &ds->manifest;
	size_t lo = 0, hi = m->nshards;
	if (n >= m->samples)
		return ch_error_set(err, "no sample #%llu: the dataset has %llu",
				    (unsigned long long)n,
				    (unsigned long long)m->samples);
	while (hi - lo > 1) { /* last shard whose first_sample <= n */
		size_t mid = lo + (hi - lo) / 2;
		if (m->shards[mid].first_sample <= n)
			lo = mid;
		else
			hi = mid;
	}
	*shard = lo;
	*sample = n - m->shards[lo].first_sample;
	return 0;
}
