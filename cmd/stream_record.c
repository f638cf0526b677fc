/*
 * stream_record.c - chute stream --record / --replay.
 *
 * The record is written when the stream starts, cursor null, so that a
 * run that crashes still names its data; then with the cursor of the last
 * batch written, at most every 100 ms (an atomic replace syncs the file
 * and its folder, which costs more than a small batch: per batch it would
 * slow a Fashion-MNIST stream several times); and at exit, with the
 * outcome.  --replay reads the same keys back into the options.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chute/stream.h"
#include "chute/remote.h"
#include "stream_opts.h"
#include "stream_record.h"

#define RECORD_FORMAT "chute-run"
#define RECORD_VERSION 1
#define SAVE_EVERY_S 0.1

/* The first option given that shapes the stream, which --replay
 * refuses. */
void record_note_option(struct stream_record *r, int opt)
{
	if (!r->shaping && stream_option_shapes(opt))
		r->shaping = stream_options[opt].name;
}

/* jansson's integers are signed: a whole number past INT64_MAX (a seed)
 * is written as a string of digits, and read back from either. */
static json_t *u64_json(uint64_t v)
{
	char s[24];
	if (v <= INT64_MAX)
		return json_integer((json_int_t)v);
	snprintf(s, sizeof s, "%" PRIu64, v);
	return json_string(s);
}

static int json_u64(const json_t *j, uint64_t *out)
{
	if (json_is_integer(j) && json_integer_value(j) >= 0) {
		*out = (uint64_t)json_integer_value(j);
		return 0;
	}
	const char *s = json_string_value(j);
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static void utc_now(char out[32])
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int is_version_id(const char *s)
{
	size_t n = s ? strspn(s, "0123456789abcdef") : 0;
	return n == 32 && s[n] == '\0';
}

/* ------------------------------------------------------------------ */
/* --replay: reading a record                                           */

/* One object of the record ("dataset" or "options") being read; the
 * first bad key is reported, the others are not looked at twice. */
struct reading {
	const char *path, *section;
	json_t *obj;
	int bad;
	struct ch_error *err; /* the first bad key's */
};

static int refuse(struct reading *rd, const char *key, const char *want)
{
	if (!rd->bad)
		ch_error_usage(rd->err, "cannot replay '%s': \"%s\".\"%s\" is "
			       "missing or not %s", rd->path, rd->section, key,
			       want);
	rd->bad = 1;
	return -1;
}

static uint64_t read_u64(struct reading *rd, const char *key, uint64_t min,
			 uint64_t max)
{
	uint64_t v;
	if (json_u64(json_object_get(rd->obj, key), &v) < 0 || v < min ||
	    v > max) {
		refuse(rd, key, "a whole number in range");
		return min;
	}
	return v;
}

static const char *read_str(struct reading *rd, const char *key, int nullable)
{
	json_t *j = json_object_get(rd->obj, key);
	if (nullable && json_is_null(j))
		return NULL;
	if (!json_is_string(j))
		refuse(rd, key, nullable ? "a string or null" : "a string");
	return json_string_value(j);
}

static int read_name(struct reading *rd, const char *key,
		     const char *const *names)
{
	const char *s = read_str(rd, key, 0);
	for (int i = 0; s && names[i]; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	if (s)
		refuse(rd, key, "a name chute knows");
	return 0;
}

static int read_bool(struct reading *rd, const char *key)
{
	json_t *j = json_object_get(rd->obj, key);
	if (!json_is_boolean(j))
		refuse(rd, key, "true or false");
	return json_is_true(j);
}

static int read_transforms(struct reading *rd, struct stream_record *r,
			    struct ch_stream_opts *o)
{
	json_t *t = json_object_get(rd->obj, "transforms");
	size_t n = json_array_size(t);
	if (!json_is_array(t))
		return refuse(rd, "transforms", "an array of strings");
	r->transforms = calloc(n ? n : 1, sizeof(*r->transforms));
	if (!r->transforms) {
		rd->bad = 1;
		return ch_error_nomem(rd->err);
	}
	for (size_t i = 0; i < n; i++) {
		r->transforms[i] = json_string_value(json_array_get(t, i));
		if (!r->transforms[i])
			return refuse(rd, "transforms", "an array of strings");
	}
	o->transforms = r->transforms;
	o->ntransforms = n;
	return 0;
}

/* Option opt from its key, within the bounds of the command line. */
static void read_option(struct reading *rd, struct stream_record *r,
			struct ch_stream_opts *o, int opt)
{
	const struct stream_option *d = &stream_options[opt];
	union stream_value v = {0};
	/* records older than --start-epoch began at epoch 0; those older
	 * than --fields and --source-field kept every field */
	if ((opt == CH_STREAM_OPT_START_EPOCH ||
	     opt == CH_STREAM_OPT_FIELDS ||
	     opt == CH_STREAM_OPT_SOURCE_FIELD) &&
	    !json_object_get(rd->obj, d->record_key))
		return;
	switch (d->type) {
	case STREAM_U64:
		v.u64 = read_u64(rd, d->record_key, d->min, d->max);
		break;
	case STREAM_NAME:
		v.i = read_name(rd, d->record_key, d->names);
		break;
	case STREAM_SET:
		v.i = read_bool(rd, d->record_key);
		break;
	case STREAM_TEXT:
		v.text = read_str(rd, d->record_key, 1);
		break;
	case STREAM_LIST:
		read_transforms(rd, r, o);
		return;
	default: /* no record keeps the others */
		return;
	}
	stream_option_set(o, opt, &v);
}

static void read_options(struct reading *rd, struct stream_record *r,
			 struct ch_stream_opts *o)
{
	for (int at = 0; at < CH_STREAM_RECORD_KEYS; at++) {
		int opt = stream_option_recorded(at);
		read_option(rd, r, o, opt);
		/* a rank is below the world size, as on the command line */
		if (opt == CH_STREAM_OPT_WORLD_SIZE && o->rank >= o->world)
			refuse(rd, "rank", "a whole number in range");
	}
}

/* What to open: a local dataset by its absolute path, a remote one by the
 * recorded id (REMOTE@ID), never by its tag, which may have moved. */
static int read_dataset(struct reading *rd, struct stream_record *r)
{
	if (json_object_get(rd->obj, "mix")) {
		const char *id = read_str(rd, "id", 0);
		if (rd->bad || !is_version_id(id))
			return refuse(rd, "id", "a version id");
		memcpy(r->want_id, id, sizeof(r->want_id));
		if (stream_mix_from_record(r->mix, rd->obj, rd->path,
					   rd->err) < 0)
			return rd->bad = 1, -1;
		if (!(r->source = strdup("the mix")))
			return rd->bad = 1, ch_error_nomem(rd->err);
		return 0;
	}
	const char *id = read_str(rd, "id", 0);
	const char *path = read_str(rd, "path", 1);
	const char *remote = read_str(rd, "remote", 1);
	if (rd->bad)
		return -1;
	if (!is_version_id(id))
		return refuse(rd, "id", "a version id (32 hexadecimal digits)");
	if (!path && !remote)
		return refuse(rd, "path", "a path (or \"remote\" a url)");
	memcpy(r->want_id, id, sizeof(r->want_id));
	if (remote ? record_remote_ref(remote, id, &r->source) < 0
		   : !(r->source = strdup(path))) {
		r->source = NULL;
		rd->bad = 1;
		return ch_error_nomem(rd->err);
	}
	return 0;
}

static int check_header(const char *path, json_t *doc, struct ch_error *err)
{
	json_t *v = json_object_get(doc, "format_version");
	const char *fmt = json_string_value(json_object_get(doc, "format"));
	if (!fmt || strcmp(fmt, RECORD_FORMAT) != 0)
		return ch_error_usage(err, "cannot replay '%s': not a chute "
				      "run record (\"format\" is not \"%s\")",
				      path, RECORD_FORMAT);
	if (!json_is_integer(v) || json_integer_value(v) < 1)
		return ch_error_usage(err, "cannot replay '%s': "
				      "\"format_version\" is missing or not a "
				      "positive whole number", path);
	if (json_integer_value(v) > RECORD_VERSION)
		return ch_error_usage(err, "cannot replay '%s': "
				      "format_version %lld is newer than this "
				      "chute reads (%d)", path,
				      (long long)json_integer_value(v),
				      RECORD_VERSION);
	return 0;
}

/* "resume" is where the recorded run started (null: at the beginning),
 * "cursor" where it got to (null: before its first batch). */
static int read_resume(struct stream_record *r, struct ch_stream_opts *o,
		       struct ch_error *err)
{
	json_t *start = json_object_get(r->replayed, "resume");
	json_t *cursor = json_object_get(r->replayed, "cursor");
	if ((!json_is_null(start) && !json_is_string(start)) ||
	    (!json_is_null(cursor) && !json_is_string(cursor)))
		return ch_error_usage(err, "cannot replay '%s': \"resume\" "
				      "and \"cursor\" must be cursors or null",
				      r->replay);
	if (o->resume && strcmp(o->resume, "last") == 0)
		o->resume = json_is_string(cursor) ? json_string_value(cursor)
						   : json_string_value(start);
	else if (!o->resume)
		o->resume = json_string_value(start);
	return 0;
}

static int load_replay(struct stream_record *r, struct ch_stream_opts *o,
		       struct ch_error *err)
{
	json_error_t je;
	r->replayed = json_load_file(r->replay, JSON_REJECT_DUPLICATES, &je);
	if (!r->replayed && je.line < 1) /* not read at all */
		return ch_error_set(err, "cannot replay '%s': %s", r->replay,
				    je.text);
	if (!r->replayed)
		return ch_error_usage(err, "cannot replay '%s': %s (line %d, "
				      "column %d)", r->replay, je.text, je.line,
				      je.column);
	if (check_header(r->replay, r->replayed, err) < 0)
		return -1;
	struct reading rd = { .path = r->replay, .section = "dataset",
			      .obj = json_object_get(r->replayed, "dataset"),
			      .err = err };
	read_dataset(&rd, r);
	rd.section = "options";
	rd.obj = json_object_get(r->replayed, "options");
	read_options(&rd, r, o);
	return rd.bad ? -1 : read_resume(r, o, err);
}

int record_parsed(struct stream_record *r, struct ch_stream_opts *o,
		  const char **dataset, struct ch_error *err)
{
	int last = o->resume && strcmp(o->resume, "last") == 0;
	if (!r->replay)
		return last ? ch_error_usage(err, "--resume last continues the "
					     "run of --replay RUN; without it, "
					     "give a cursor")
			    : 0;
	if (*dataset)
		return ch_error_usage(err, "--replay takes the dataset from "
				      "'%s': drop '%s'", r->replay, *dataset);
	if (r->shaping)
		return ch_error_usage(err, "--%s cannot go with --replay: the "
				      "options that shape the stream come "
				      "from '%s'", r->shaping, r->replay);
	if (load_replay(r, o, err) < 0)
		return -1;
	*dataset = r->source;
	return 1;
}

/* ------------------------------------------------------------------ */
/* --record: writing one                                                */

static json_t *command_json(const struct stream_record *r)
{
	json_t *cmd = json_array();
	if (cmd && json_array_append_new(cmd, json_string("chute")) < 0)
		goto fail;
	for (int i = 0; cmd && i < r->argc; i++) {
		char *arg = ch_url_redact(r->argv[i]);
		int rc = arg ? json_array_append_new(
				       cmd, cmd_json_bytes(arg, strlen(arg)))
			     : -1;
		free(arg);
		if (rc < 0)
			goto fail;
	}
	return cmd;
fail:
	json_decref(cmd);
	return NULL;
}

/* A local dataset by the path given and its absolute path; a remote one
 * by its url and the tag it was asked by (null when asked by id).  The
 * id is always the opened manifest's. */
static json_t *dataset_json(const struct ch_dataset *ds, const char *dataset)
{
	const struct ch_manifest *m = &ds->manifest;
	struct ch_ref ref;
	struct ch_error err;
	json_t *j = NULL;
	char *abs = NULL, *source = NULL, *remote = NULL;
	if (ch_ref_parse(dataset, &ref, &err) < 0)
		return NULL;
	/* a record is shared (an experiment tracker): never a password */
	if (!(source = ch_url_redact(dataset)))
		goto out;
	if (ref.remote && (remote = ch_url_redact(ref.remote)))
		j = json_pack("{s:s, s:s?, s:s, s:n, s:s, s:s?}", "id", m->id,
			      "name", m->name, "source", source, "path",
			      "remote", remote, "tag",
			      is_version_id(ref.at) ? NULL : ref.at);
	else if (!ref.remote && (abs = realpath(ref.path, NULL)))
		j = json_pack("{s:s, s:s?, s:s, s:s, s:n, s:n}", "id", m->id,
			      "name", m->name, "source", source, "path", abs,
			      "remote", "tag");
out:
	free(abs);
	free(source);
	free(remote);
	ch_ref_release(&ref);
	return j;
}

static json_t *transforms_json(const struct ch_stream_opts *o)
{
	json_t *t = json_array();
	for (size_t i = 0; t && i < o->ntransforms; i++)
		if (json_array_append_new(t, json_string(o->transforms[i])) < 0) {
			json_decref(t);
			t = NULL;
		}
	return t;
}

static json_t *option_json(const struct ch_stream_opts *o, int opt)
{
	union stream_value v = stream_option_get(o, opt);
	switch (stream_options[opt].type) {
	case STREAM_U64:
		return u64_json(v.u64);
	case STREAM_NAME:
		return json_string(stream_option_name(opt, v.i));
	case STREAM_SET:
		return json_boolean(v.i);
	case STREAM_TEXT:
		return v.text ? json_string(v.text) : json_null();
	case STREAM_LIST:
		return transforms_json(o);
	default: /* no record keeps the others */
		return NULL;
	}
}

/* The options the record keeps, in their positions. */
static json_t *options_json(const struct ch_stream_opts *o)
{
	json_t *j = json_object();
	for (int at = 0; j && at < CH_STREAM_RECORD_KEYS; at++) {
		int opt = stream_option_recorded(at);
		if (json_object_set_new(j, stream_options[opt].record_key,
					option_json(o, opt)) < 0) {
			json_decref(j);
			j = NULL;
		}
	}
	return j;
}

static json_t *record_doc(const struct stream_record *r,
			  const struct ch_dataset *ds, const char *dataset,
			  const struct ch_stream_opts *o)
{
	char started[32];
	utc_now(started);
	return json_pack("{s:s, s:i, s:s, s:s, s:n, s:s, s:o, s:o, s:o, s:s?,"
			 " s:n, s:i}",
			 "format", RECORD_FORMAT, "format_version",
			 RECORD_VERSION, "chute_version", CH_VERSION,
			 "started", started, "ended", "status", "running",
			 "command", command_json(r), "dataset",
			 ch_mix_sources(ds) ? stream_mix_json(ds, dataset_json)
					    : dataset_json(ds, dataset),
			 "options",
			 options_json(o), "resume", o->resume, "cursor",
			 "batches", 0);
}

/* Replaces the record file with the document, its cursor, batch count
 * and status brought up to date. */
static int save(struct stream_record *r, const char *status,
		struct ch_error *err)
{
	json_t *cursor = r->cursor[0] ? json_string(r->cursor) : json_null();
	char *text = NULL;
	int ret = -1;
	if (json_object_set_new(r->doc, "status", json_string(status)) < 0 ||
	    json_object_set_new(r->doc, "cursor", cursor) < 0 ||
	    json_object_set_new(r->doc, "batches", u64_json(r->batches)) < 0 ||
	    !(text = json_dumps(r->doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
		ch_error_set(err, "out of memory");
		goto out;
	}
	size_t n = strlen(text);
	text[n] = '\n'; /* its NUL byte becomes the newline */
	ret = ch_write_file_atomic(r->record, text, n + 1, err);
out:
	free(text);
	return ret;
}

int record_begin(struct stream_record *r, const struct ch_dataset *ds,
		 const char *dataset, const struct ch_stream_opts *o,
		 struct ch_error *err)
{
	if (r->replay && r->mix && r->mix->n &&
	    stream_mix_check(r->mix, ds, r->replay, err) < 0)
		return -1;
	if (r->replay && strcmp(ds->manifest.id, r->want_id) != 0)
		return ch_error_data(err, "'%s' is not the dataset of the run "
				     "record '%s': its id is %s, the record's "
				     "%s (repacked or changed since the run)",
				     dataset, r->replay, ds->manifest.id,
				     r->want_id);
	if (!r->record)
		return 0;
	r->doc = record_doc(r, ds, dataset, o);
	if (!r->doc)
		return ch_error_usage(err, "cannot make the run record '%s': a "
				      "path or option that is not UTF-8, or "
				      "out of memory", r->record);
	r->saved = ch_now();
	if (save(r, "running", err) < 0) {
		json_decref(r->doc); /* nothing more to say in it */
		r->doc = NULL;
		return cmd_prefix_error(err, "cannot write the run record");
	}
	return 0;
}

static int record_sink(const struct ch_batch_out *b, void *arg,
		       struct ch_error *err);

void record_wrap(struct stream_record *r, ch_batch_sink *sink, void **arg)
{
	if (!r->record)
		return;
	r->inner = *sink;
	r->inner_arg = *arg;
	*sink = record_sink;
	*arg = r;
}

/* A ch_batch_sink for --record (arg: the struct stream_record): passes
 * the batch to r->inner, then keeps its cursor, writing the record again
 * when the last write is 100 ms old. */
static int record_sink(const struct ch_batch_out *b, void *arg,
		       struct ch_error *err)
{
	struct stream_record *r = arg;
	double now;
	int ret = r->inner(b, r->inner_arg, err);
	if (ret != 0) {
		r->stopped = ret > 0; /* not written: the cursor stays */
		return ret;
	}
	if (b->cursor)
		snprintf(r->cursor, sizeof r->cursor, "%s", b->cursor);
	r->batches++;
	now = ch_now();
	if (now - r->saved < SAVE_EVERY_S)
		return 0;
	r->saved = now;
	return save(r, "running", err);
}

int record_end(struct stream_record *r, int status)
{
	struct ch_error err;
	char ended[32];
	if (!r->doc)
		return status;
	const char *outcome = status == 0      ? r->stopped ? "stopped" : "done"
			      : status > 128 ? "interrupted"
					     : "failed";
	utc_now(ended);
	int rc = json_object_set_new(r->doc, "ended", json_string(ended)) < 0
			 ? ch_error_nomem(&err)
			 : save(r, outcome, &err);
	if (rc < 0) {
		cmd_prefix_error(&err, "cannot write the run record '%s'",
				 r->record);
		int failed = cmd_fail(&err); /* said even after a failure */
		return status ? status : failed;
	}
	return status;
}

void record_release(struct stream_record *r)
{
	json_decref(r->doc);
	json_decref(r->replayed);
	free(r->transforms);
	free(r->source);
	r->doc = r->replayed = NULL;
	r->transforms = NULL;
	r->source = NULL;
}
