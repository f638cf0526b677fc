/*
 * manifest.c - chute manifest: a dataset version's id and summary, or the
 * whole manifest as chute writes it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "chute/remote.h"
#include "cmd.h"

/* Class names shown before "...": ImageNet has a thousand. */
#define CLASSES_SHOWN 10

static const char *const manifest_usage[] = {
	"manifest [--json] REF",
	NULL,
};

struct manifest_args {
	const char *ref;
	int json;
};

static const struct cmd_opt manifest_opts[] = {
	CMD_HELP_OPT,
	CMD_JSON_OPT(struct manifest_args,
		     "print the whole manifest as chute writes it"),
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

const struct cmd_spec cmd_manifest_spec = {
	.name = "manifest",
	.summary = "show a dataset version: its id and what it holds",
	.usage = manifest_usage,
	.opts = manifest_opts,
	.extra = "REF: a dataset folder, a manifest file, or "
		 "REMOTE[@TAG|@ID]\n(REMOTE: a url or a name from 'chute remote')\n",
	CMD_OPERAND1(struct manifest_args, ref),
	.too_many = "give one dataset",
	.required = 1,
	.missing = "nothing to show: name a dataset",
};

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_fields(const struct ch_manifest *m)
{
	printf("fields:   ");
	if (!m->nfields)
		printf(" none");
	for (size_t i = 0; i < m->nfields; i++) {
		char count[CMD_COUNT_TEXT], size[CMD_SIZE_TEXT];
		cmd_print("%s %s (%s, %s)", i ? "," : "", m->fields[i].name,
			  cmd_count_text(m->fields[i].count, "sample",
					 "samples", count),
			  cmd_size_text(m->fields[i].bytes, size));
	}
	putchar('\n');
}

static void print_classes(const struct ch_manifest *m)
{
	printf("classes:   %zu", m->nclasses);
	for (size_t i = 0; i < m->nclasses && i < CLASSES_SHOWN; i++)
		cmd_print("%s%s", i ? ", " : " (", m->classes[i]);
	if (m->nclasses > CLASSES_SHOWN)
		printf(", ...");
	printf("%s\n", m->nclasses ? ")" : "");
}

static void print_splits(const struct ch_manifest *m)
{
	printf("splits:   ");
	if (!m->nsplits) {
		printf(" none\n");
		return;
	}
	for (size_t i = 0; i < m->nsplits; i++) {
		const struct ch_manifest_split *s = &m->splits[i];
		printf("%s %s %" PRIu64 " (%.1f%%, asked %.4g)", i ? "," : "",
		       s->name, s->samples, percent(s->samples, m->samples),
		       s->fraction);
	}
	printf("; key-hash, seed %" PRIu64, m->split_rule.seed);
	if (m->split_rule.group)
		cmd_print(", group '%s'", m->split_rule.group);
	putchar('\n');
}

static void print_options(const struct ch_manifest *m)
{
	const struct ch_manifest_options *o = &m->options;

	cmd_print("options:   shard_bytes %" PRIu64 ", shard_samples %" PRIu64
		  ", block_size %" PRIu64 ", level %d, dict %s, keep_order %s, "
		  "label_from %s", o->shard_bytes, o->shard_samples,
		  o->block_size, o->level, o->dict ? "yes" : "no",
		  o->keep_order ? "yes" : "no",
		  o->label_from ? o->label_from : "none");
	if (o->parts)
		printf(", part %" PRIu64 " of %" PRIu64, o->part, o->parts);
	putchar('\n');
}

static void print_summary(const struct ch_manifest *m)
{
	char raw[CMD_SIZE_TEXT], packed[CMD_SIZE_TEXT], shards[CMD_COUNT_TEXT];

	printf("version %s\n", m->id);
	printf("id:        %s\n", m->id_ok ? "matches the content" :
			"DOES NOT MATCH the content (edited?)");
	cmd_print("name:      %s", m->name);
	putchar('\n');
	printf("parent:    %s\n", m->parent ? m->parent : "none");
	printf("samples:   %" PRIu64 "\n", m->samples);
	printf("bytes:     %s raw, %s in %s\n", cmd_size_text(m->bytes, raw),
	       cmd_size_text(m->shard_bytes, packed),
	       cmd_count_text(m->nshards, "shard", "shards", shards));
	print_fields(m);
	print_classes(m);
	print_splits(m);
	printf("sources:  ");
	for (size_t i = 0; i < m->nsources; i++)
		cmd_print("%s %s", i ? "," : "", m->sources[i]);
	printf("%s\n", m->nsources ? "" : " none");
	print_options(m);
	printf("chute:     %s\n", m->chute_version);
}

static int print_json(struct ch_manifest *m, struct ch_error *err)
{
	char *text;
	size_t len;
	int rc;

	if (ch_manifest_format(m, &text, &len, err) < 0)
		return -1;
	/* as chute writes it: the id is computed, whatever was stored */
	rc = fwrite(text, 1, len, stdout) == len ? 0 : -1;
	free(text);
	return rc < 0 ? ch_error_set(err, "cannot write to standard output")
		      : 0;
}

int cmd_manifest(int argc, char **argv)
{
	struct ch_error err = {0};
	struct ch_manifest m;
	struct ch_ref ref;
	const char *text = NULL;
	int json = 0, status;

	struct manifest_args a = {0};
	status = cmd_parse_args(&cmd_manifest_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	text = a.ref;
	json = a.json;
	if (ch_ref_parse(text, &ref, &err) < 0)
		return cmd_fail(&err);
	memset(&m, 0, sizeof(m));
	if (ch_ref_load(&ref, &m, &err) < 0) {
		ch_ref_release(&ref);
		return cmd_fail(&err);
	}
	if (json && print_json(&m, &err) < 0)
		status = cmd_fail(&err);
	else if (!json)
		print_summary(&m);
	ch_manifest_release(&m);
	ch_ref_release(&ref);
	return status;
}
