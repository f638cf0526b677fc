/*
 * cat.c - chute cat: the raw bytes of one field of one sample, or of
 * several samples one after another.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/version.h"
#include "cmd.h"

static const char *const cat_usage[] = {
	"cat [-f FIELD] DATASET|SHARD KEY|#N...",
	NULL,
};

struct cat_args {
	const char *path, *field;
	const char **which; /* the KEY|#N operands, nwhich of them */
	int nwhich;
	int force; /* --force: binary even to a terminal */
};

/* The dataset, then the samples. */
static int take_operand(void *args, const char *arg, struct ch_error *err)
{
	struct cat_args *a = args;
	(void)err;
	if (!a->path)
		a->path = arg;
	else
		a->which[a->nwhich++] = arg;
	return 0;
}

static const struct cmd_opt cat_opts[] = {
	CMD_OPT_TEXT('f', "field", "FIELD", struct cat_args, field,
		     "the field to write (needed if several)"),
	CMD_OPT_FLAG(0, "force", struct cat_args, force,
		     "write a field that is not text even to a terminal"),
	CMD_HELP_OPT,
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_cat_spec = {
	.name = "cat",
	.summary = "write one field of one sample to standard output",
	.usage = cat_usage,
	.opts = cat_opts,
	.extra = "#N picks sample N of the whole dataset, counting from 0\n"
		 "several samples: their fields one after another, in the order "
		 "given;\nall are found before the first byte is written\n",
	.operand = take_operand,
	.required = 2,
	.missing = "missing arguments: give a dataset or shard, then a key or "
		   "#N",
};

/* Where the sample is, and which of its fields to write. */
struct cat_target {
	struct ch_shard *sh;
	uint64_t sample;
	struct ch_sample_info info;
	struct ch_field_info field;
};

/* "#12" is a sample number; anything else is a key. */
static int sample_number(const char *s, uint64_t *n)
{
	char *end;

	if (s[0] != '#' || s[1] < '0' || s[1] > '9')
		return 0;
	errno = 0;
	*n = strtoull(s + 1, &end, 10);
	return *end == '\0' && errno == 0;
}

static int find_sample(struct ch_dataset *ds, const char *which,
		       struct cat_target *t, struct ch_error *err)
{
	size_t shard;
	uint64_t n;
	int rc;

	if (sample_number(which, &n))
		rc = ch_dataset_locate(ds, n, &shard, &t->sample, err);
	else
		rc = ch_dataset_find(ds, which, &shard, &t->sample, err);
	if (rc < 0 || (rc = ch_dataset_shard(ds, shard, &t->sh, err)) < 0)
		return rc;
	ch_shard_sample(t->sh, t->sample, &t->info);
	return 0;
}

/* "cls, jpg" into buf, cut short with "..." when it does not fit. */
static void field_list(const struct cat_target *t, char *buf, size_t size)
{
	struct ch_field_info f;
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < t->info.nfields && used < size; k++) {
		ch_shard_field(t->sh, t->sample, k, &f);
		int n = snprintf(buf + used, size - used, "%s%s", k ? ", " : "",
				 f.name);
		if (n < 0 || (size_t)n >= size - used) {
			snprintf(buf + (size > 4 ? size - 4 : 0),
				 size > 4 ? 4 : size, "...");
			break;
		}
		used += (size_t)n;
	}
}

static int pick_field(struct cat_target *t, const char *name,
		      struct ch_error *err)
{
	const struct ch_sample_info *i = &t->info;
	char list[512];

	for (uint32_t k = 0; name && k < i->nfields; k++) {
		ch_shard_field(t->sh, t->sample, k, &t->field);
		if (strcmp(t->field.name, name) == 0)
			return 0;
	}
	if (!name && i->nfields == 1) {
		ch_shard_field(t->sh, t->sample, 0, &t->field);
		return 0;
	}
	field_list(t, list, sizeof list);
	if (name)
		return ch_error_usage(err, "sample '%.*s' has no field '%s'; "
				      "its fields: %s", (int)i->key_len,
				      i->key, name, list);
	return ch_error_usage(err, "sample '%.*s' has %" PRIu32 " fields "
			      "(%s): choose one with --field",
			      (int)i->key_len, i->key, i->nfields, list);
}

/* A field that is not text is not written to a terminal, where its bytes
 * would be read as escapes; text (a label, a caption) is. */
static int check_text(struct ch_block_reader *r, const struct cat_target *t,
		      int force, struct ch_error *err)
{
	const uint8_t *data;
	char what[400], key[256];
	if (force || !isatty(STDOUT_FILENO))
		return 0;
	if (ch_sample_fetch(r, t->sh, t->sample, &data, err) < 0)
		return -1;
	if (cmd_is_text(data + t->field.offset, (size_t)t->field.size))
		return 0;
	ch_escape(key, sizeof key, t->info.key, t->info.key_len);
	snprintf(what, sizeof what, "binary data ('%s' of sample '%s')",
		 t->field.name, key);
	return cmd_binary_to_terminal(0, what, "pipe it, or redirect it to "
				      "a file", err);
}

/* Writes t's field; *stop set when the reader of the output went away.
 * From a raw block only the sample is read, checked by its own hash, not
 * the whole block (a 110 KB sample of a 1 MiB block: a ninth of the
 * bytes); mapping the block was measured slower still (first touch of
 * its pages). */
static int write_field(struct ch_block_reader *r, const struct cat_target *t,
		       int *stop, struct ch_error *err)
{
	const uint8_t *data;

	if (ch_sample_fetch(r, t->sh, t->sample, &data, err) < 0)
		return -1;
	if (cmd_write_all(STDOUT_FILENO, data + t->field.offset,
			  (size_t)t->field.size) < 0) {
		if (errno != EPIPE)
			return ch_error_errno(err, errno, "cannot write to "
					      "standard output");
		*stop = 1;
	}
	return 0;
}

int cmd_cat(int argc, char **argv)
{
	struct cat_args a = {0};
	struct cat_target *t = NULL;
	struct ch_block_reader *r = NULL;
	struct ch_dataset ds;
	struct ch_error err = {0};
	int status, rc = 0, stop = 0, opened = 0;

	/* at most argc operands: never more KEY|#N than that */
	a.which = calloc((size_t)argc, sizeof *a.which);
	if (!a.which) {
		ch_error_nomem(&err);
		return cmd_fail(&err);
	}
	status = cmd_parse_args(&cmd_cat_spec, argc, argv, &a);
	if (status != 0) {
		status = cmd_parsed_status(status);
		goto done;
	}
	memset(&ds, 0, sizeof ds);
	t = calloc((size_t)a.nwhich, sizeof *t);
	r = ch_block_reader_new();
	if (!t || !r)
		rc = ch_error_nomem(&err);
	else if (ch_dataset_open(&ds, a.path, &err) < 0)
		rc = -1;
	else
		opened = 1;
	/* every sample and field found before the first byte is written */
	for (int i = 0; i < a.nwhich && rc == 0; i++) {
		rc = find_sample(&ds, a.which[i], &t[i], &err);
		if (rc == 0)
			rc = pick_field(&t[i], a.field, &err);
	}
	for (int i = 0; i < a.nwhich && rc == 0; i++)
		rc = check_text(r, &t[i], a.force, &err);
	for (int i = 0; i < a.nwhich && rc == 0 && !stop; i++)
		rc = write_field(r, &t[i], &stop, &err);
	status = rc < 0 ? cmd_fail(&err) : 0;
done:
	if (opened)
		ch_dataset_release(&ds);
	ch_block_reader_free(r);
	free(t);
	free(a.which);
	return status;
}
