/* version/manifest_check.c - the rules a manifest keeps beyond its
 * shape: dataset, split and shard file names, the format and its
 * version, and the totals (shards, splits) adding up; and how a problem
 * found decoding is reported. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "version/manifest_internal.h"

/* A shard path is shards/NAME.chs, NAME a file name (no '/', no control
 * byte): whatever a manifest from a remote says, a shard stays inside
 * the dataset's shards/ folder and never names manifest.json, a split
 * file or chute's own files under .chute/. */
int manifest_is_shard_path(const char *p)
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
int manifest_is_split_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* A split's fraction in units of 1/10000, or -1 unless it is one of
 * 1/10000 ... 10000/10000 exactly as the double nearest to it. */
long manifest_fraction_units(double f)
{
	long k;

	if (!(f >= 0.0 && f <= 1.0))
		return -1;
	k = lround(f * FRACTION_UNITS);
	if (k < 1 || (double)k / FRACTION_UNITS != f)
		return -1;
	return k;
}

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

/* Reports a problem with the value at ctx.key (key may be NULL, ctx may
 * be "" for the top level): "shards[3].bytes: what (origin)". */
int manifest_bad(struct dec *d, const char *ctx, const char *key,
		 const char *what)
{
	const char *dot = (*ctx && key) ? "." : "";

	if (!*ctx && !key)
		ctx = "manifest";
	return ch_error_data(d->err, "%s%s%s: %s (%s)", ctx, dot,
			     key ? key : "", what, d->origin);
}

json_t *manifest_member(json_t *obj, const char *ctx, const char *key,
			struct dec *d)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		manifest_bad(d, ctx, key, "missing key");
	return v;
}

/* The name is in the shard file names: the rule of pack -n and merge -n
 * (ch_dataset_name_check), for a manifest from anywhere. */
int manifest_check_name(const char *name, struct dec *d)
{
	struct ch_error why;
	if (ch_dataset_name_check(name, &why) == 0)
		return 0;
	return manifest_bad(d, "", "name", why.msg);
}

int manifest_check_format(json_t *doc, struct dec *d)
{
	json_t *f = manifest_member(doc, "", "format", d);
	json_t *v;
	char what[128];

	if (!f)
		return -1;
	if (!json_is_string(f) || strcmp(json_string_value(f), FORMAT_NAME))
		return manifest_bad(d, "", "format", "expected \"" FORMAT_NAME
				    "\": not a chute manifest");
	v = manifest_member(doc, "", "format_version", d);
	if (!v)
		return -1;
	if (!json_is_integer(v))
		return manifest_bad(d, "", "format_version",
				    "expected an integer");
	if (json_integer_value(v) < FORMAT_VERSION_MIN ||
	    json_integer_value(v) > FORMAT_VERSION) {
		snprintf(what, sizeof(what),
			 "unsupported version %" JSON_INTEGER_FORMAT
			 " (this chute reads versions %d to %d)",
			 json_integer_value(v), FORMAT_VERSION_MIN,
			 FORMAT_VERSION);
		return manifest_bad(d, "", "format_version", what);
	}
	d->version = (int)json_integer_value(v);
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
		ret = manifest_bad(d, ctx, "path", what);
	}
	free(v);
	return ret;
}

/* Shards number the dataset's samples in order: each starts where the
 * previous one ended, and together they hold `samples` samples in
 * `shard_bytes` bytes. */
int manifest_check_shard_totals(struct ch_manifest *m, struct dec *d)
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
			return manifest_bad(d, ctx, "first_sample", what);
		}
		if (s->samples > U64_MAX_JSON - next ||
		    s->bytes > U64_MAX_JSON - bytes)
			return manifest_bad(d, ctx, NULL, "totals overflow");
		next += s->samples;
		bytes += s->bytes;
	}
	if (next != m->samples) {
		snprintf(what, sizeof(what),
			 "%" PRIu64 ", but the shards hold %" PRIu64,
			 m->samples, next);
		return manifest_bad(d, "", "samples", what);
	}
	if (bytes != m->shard_bytes) {
		snprintf(what, sizeof(what),
			 "%" PRIu64 ", but the shards add up to %" PRIu64,
			 m->shard_bytes, bytes);
		return manifest_bad(d, "", "shard_bytes", what);
	}
	return check_unique_paths(m, d);
}

/* The splits partition the samples: their counts add up to the dataset's
 * (the files themselves are chute verify's to check) and their fractions
 * to 1. */
int manifest_check_split_totals(struct ch_manifest *m, struct dec *d)
{
	uint64_t samples = 0;
	long units = 0;
	char what[128];

	for (size_t i = 0; i < m->nsplits; i++) {
		if (m->splits[i].samples > U64_MAX_JSON - samples)
			return manifest_bad(d, "splits", "sets",
					    "samples overflow");
		samples += m->splits[i].samples;
		units += manifest_fraction_units(m->splits[i].fraction);
	}
	if (samples != m->samples) {
		snprintf(what, sizeof(what), "the splits hold %" PRIu64
			 " %s, the dataset %" PRIu64, samples,
			 ch_plural(samples, "sample", "samples"), m->samples);
		return manifest_bad(d, "splits", "sets", what);
	}
	if (units != FRACTION_UNITS)
		return manifest_bad(d, "splits", "sets",
				    "the fractions do not add up to 1");
	return 0;
}
