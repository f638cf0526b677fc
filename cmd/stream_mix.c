/*
 * stream_mix.c - chute stream DATASET... --mix 'A=W,B=W': the sources of
 * a mix, from the command line or a run record, opened as one dataset.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chute/stream.h"
#include "chute/remote.h"
#include "cmd.h"
#include "stream_mix.h"
#include "stream_record.h"

/* "DATASET:SPLIT" names a split of DATASET, unless the whole text is a
 * path that exists or what follows the last ':' holds a '/' (a url). */
static int take_split(struct stream_mix_source *s, struct ch_error *err)
{
	struct stat st;
	const char *colon = strrchr(s->name, ':');
	if (stat(s->name, &st) != 0 && colon && colon > s->name &&
	    colon[1] && !strchr(colon + 1, '/')) {
		s->ref = strndup(s->name, (size_t)(colon - s->name));
		s->split = strdup(colon + 1);
		return s->ref && s->split ? 0 : ch_error_nomem(err);
	}
	s->ref = strdup(s->name);
	return s->ref ? 0 : ch_error_nomem(err);
}

static int check_epoch(const struct stream_mix *m, struct ch_error *err)
{
	const char *e = m->epoch;
	if (!e || !strcmp(e, "shortest"))
		return 0;
	if (strspn(e, "0123456789") == strlen(e) && strspn(e, "0") < strlen(e))
		return 0;
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(e, m->src[i].name))
			return 0;
	return ch_error_usage(err, "--mix-epoch '%s' is not shortest, a "
			      "number of samples above 0, or one of the "
			      "datasets given", e);
}

/* One "NAME=WEIGHT" of --mix into its source's weight. */
static int take_weight(struct stream_mix *m, const char *item,
		       struct ch_error *err)
{
	const char *eq = strrchr(item, '=');
	char name[4096];
	uint64_t w;
	size_t i = 0, len = eq ? (size_t)(eq - item) : 0;
	if (!eq || len == 0 || len >= sizeof name)
		return ch_error_usage(err, "--mix: '%s' is not NAME=WEIGHT",
				      item);
	memcpy(name, item, len);
	name[len] = '\0';
	while (i < m->n && strcmp(m->src[i].name, name))
		i++;
	if (i == m->n)
		return ch_error_usage(err, "--mix names '%s', which is not one "
				      "of the datasets given", name);
	if (m->src[i].weight)
		return ch_error_usage(err, "--mix gives '%s' twice", name);
	if (eq[1] == '-')
		return ch_error_usage(err, "--mix: the weight of '%s' is "
				      "negative (%s): weights are above 0",
				      name, eq + 1);
	if (ch_weight_parse(eq + 1, &w) < 0)
		return ch_error_usage(err, "--mix: the weight of '%s' is '%s', "
				      "not a number (at most 6 decimals)", name,
				      eq + 1);
	if (w == 0)
		return ch_error_usage(err, "--mix: the weight of '%s' is 0: "
				      "leave the source out instead", name);
	m->src[i].weight = w;
	return 0;
}

int stream_mix_parse(struct stream_mix *m, const char *const *names,
		     size_t n, struct ch_error *err)
{
	if (n == 1)
		return ch_error_usage(err, "--mix with one dataset, '%s': a "
				      "mix takes two or more (stream one alone "
				      "without --mix)", names[0]);
	if (n > CH_MIX_MAX)
		return ch_error_usage(err, "a mix of %zu datasets: at most %d",
				      n, CH_MIX_MAX);
	if (!(m->src = calloc(n, sizeof(*m->src))))
		return ch_error_nomem(err);
	m->n = n;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < i; k++)
			if (!strcmp(names[k], names[i]))
				return ch_error_usage(err, "'%s' is given "
						      "twice: each source once",
						      names[i]);
		m->src[i].name = names[i];
		if (take_split(&m->src[i], err) < 0)
			return -1;
	}
	char *text = strdup(m->text), *save = NULL;
	int rc = text ? 0 : ch_error_nomem(err);
	for (char *it = text ? strtok_r(text, ",", &save) : NULL;
	     it && rc == 0; it = strtok_r(NULL, ",", &save))
		rc = take_weight(m, it, err);
	free(text);
	for (size_t i = 0; i < n && rc == 0; i++)
		if (!m->src[i].weight)
			rc = ch_error_usage(err, "--mix gives no weight to "
					    "'%s'", m->src[i].name);
	return rc < 0 ? -1 : check_epoch(m, err);
}

/* ------------------------------------------------------------------ */
/* A run record's mix                                                   */

static int bad(const char *path, size_t i, const char *key, const char *want,
	       struct ch_error *err)
{
	return ch_error_usage(err, "cannot replay '%s': \"dataset\".\"mix\""
			      "[%zu].\"%s\" is missing or not %s", path, i,
			      key, want);
}

static int source_from_record(struct stream_mix_source *s, json_t *j,
			      size_t i, const char *path,
			      struct ch_error *err)
{
	const char *id = json_string_value(json_object_get(j, "id"));
	const char *local = json_string_value(json_object_get(j, "path"));
	const char *remote = json_string_value(json_object_get(j, "remote"));
	const char *weight = json_string_value(json_object_get(j, "weight"));
	json_t *split = json_object_get(j, "split");
	s->name = json_string_value(json_object_get(j, "source"));
	if (!s->name)
		return bad(path, i, "source", "a string", err);
	if (!id || strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32)
		return bad(path, i, "id", "a version id", err);
	if (!local && !remote)
		return bad(path, i, "path", "a path (or \"remote\" a url)",
			   err);
	if (!weight || ch_weight_parse(weight, &s->weight) < 0 || !s->weight)
		return bad(path, i, "weight", "a weight above 0", err);
	if (!json_is_null(split) && !json_is_string(split))
		return bad(path, i, "split", "a string or null", err);
	s->want_id = id;
	if (json_is_string(split) &&
	    !(s->split = strdup(json_string_value(split))))
		return ch_error_nomem(err);
	if (remote ? record_remote_ref(remote, id, &s->ref) < 0
		   : !(s->ref = strdup(local))) {
		s->ref = NULL;
		return ch_error_nomem(err);
	}
	return 0;
}

int stream_mix_from_record(struct stream_mix *m, json_t *dataset,
			   const char *path, struct ch_error *err)
{
	json_t *mix = json_object_get(dataset, "mix");
	json_t *epoch = json_object_get(dataset, "mix_epoch");
	size_t n = json_array_size(mix);
	if (n < 2 || n > CH_MIX_MAX || !json_is_string(epoch))
		return ch_error_usage(err, "cannot replay '%s': \"dataset\"."
				      "\"mix\" is not an array of 2 to %d "
				      "sources with \"mix_epoch\"", path,
				      CH_MIX_MAX);
	if (!(m->src = calloc(n, sizeof(*m->src))))
		return ch_error_nomem(err);
	m->n = n;
	m->epoch = json_string_value(epoch);
	for (size_t i = 0; i < n; i++)
		if (source_from_record(&m->src[i], json_array_get(mix, i), i,
				       path, err) < 0)
			return -1;
	return check_epoch(m, err);
}

/* ------------------------------------------------------------------ */
/* Opening                                                              */

static void epoch_of(const struct stream_mix *m, struct ch_mix_spec *spec)
{
	const char *e = m->epoch;
	spec->epoch = CH_MIX_SHORTEST;
	if (!e || !strcmp(e, "shortest"))
		return;
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(e, m->src[i].name)) {
			spec->epoch = CH_MIX_SOURCE;
			spec->epoch_source = i;
			return;
		}
	spec->epoch = CH_MIX_TOTAL;
	spec->epoch_total = strtoull(e, NULL, 10);
}

int stream_mix_open(const struct stream_mix *m, const char *cache_dir,
		    uint64_t cache_bytes, struct ch_dataset *ds,
		    struct ch_error *err)
{
	struct ch_mix_spec spec = { .n = m->n };
	size_t opened = 0;
	if (!(spec.sources = calloc(m->n, sizeof(*spec.sources))))
		return ch_error_nomem(err);
	epoch_of(m, &spec);
	for (; opened < m->n; opened++) {
		const struct stream_mix_source *s = &m->src[opened];
		struct ch_dataset *one = malloc(sizeof(*one));
		struct ch_ref ref;
		int rc = one ? ch_ref_parse(s->ref, &ref, err)
			     : ch_error_nomem(err);
		if (rc == 0) {
			rc = ch_ref_open_dataset(&ref, cache_dir, cache_bytes,
						 one, err);
			ch_ref_release(&ref);
		}
		if (rc < 0) {
			free(one);
			break;
		}
		spec.sources[opened] = (struct ch_mix_source){
			.name = s->name, .ds = one, .split = s->split,
			.weight = s->weight,
		};
	}
	int rc = -1;
	if (opened == m->n) {
		rc = ch_mix_open(ds, &spec, err);
	} else {
		for (size_t i = 0; i < opened; i++) {
			ch_dataset_release(spec.sources[i].ds);
			free(spec.sources[i].ds);
		}
	}
	free(spec.sources);
	return rc;
}

int stream_mix_check(const struct stream_mix *m, const struct ch_dataset *ds,
		     const char *record, struct ch_error *err)
{
	for (size_t i = 0; i < m->n; i++) {
		struct ch_mix_info mi;
		ch_mix_source_info(ds, i, &mi);
		if (m->src[i].want_id && strcmp(mi.id, m->src[i].want_id))
			return ch_error_data(err, "'%s' (source %zu of the "
					     "mix) is not the dataset of the "
					     "run record '%s': its id is %s, "
					     "the record's %s (repacked or "
					     "changed since the run)",
					     m->src[i].ref, i + 1, record,
					     mi.id, m->src[i].want_id);
	}
	return 0;
}

json_t *stream_mix_json(const struct ch_dataset *ds,
			json_t *(*source_json)(const struct ch_dataset *,
					       const char *))
{
	json_t *arr = json_array(), *j = NULL;
	char text[32], rule[32];
	for (size_t i = 0; arr && i < ch_mix_sources(ds); i++) {
		struct ch_mix_info mi;
		ch_mix_source_info(ds, i, &mi);
		size_t len = strlen(mi.name) -
			     (mi.split ? strlen(mi.split) + 1 : 0);
		char *ref = strndup(mi.name, len);
		json_t *s = ref ? source_json(mi.ds, ref) : NULL;
		free(ref);
		ch_weight_text(mi.weight, text);
		if (!s || json_object_update_new(s, json_pack(
				  "{s:s, s:s?, s:s, s:I, s:I}", "source",
				  mi.name, "split", mi.split, "weight", text,
				  "samples", (json_int_t)mi.samples,
				  "per_epoch", (json_int_t)mi.per_epoch)) < 0 ||
		    json_array_append_new(arr, s) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	if (arr)
		j = json_pack("{s:s, s:s, s:o, s:s}", "id", ds->manifest.id,
			      "name", "mix", "mix", arr, "mix_epoch",
			      ch_mix_epoch_text(ds, rule));
	return j;
}

void stream_mix_release(struct stream_mix *m)
{
	for (size_t i = 0; m->src && i < m->n; i++) {
		free(m->src[i].ref);
		free(m->src[i].split);
	}
	free(m->src);
	m->src = NULL;
	m->n = 0;
}
