/*
 * merge.c - chute merge: the parts chute pack --part I/N wrote, on as
 * many machines, into one dataset.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "cmd.h"

enum {
	OPT_FORCE = CMD_LONG_ONLY,
};

static const char *const merge_usage[] = {
	"merge [OPTIONS] PART... -o DIR",
	NULL,
};

static const struct cmd_opt merge_opts[] = {
	{OPT_FORCE, "force", NULL,
	 "replace a dataset even if its fields, labels or splits are lost"},
	CMD_HELP_OPT,
	{'n', "name", "NAME", "dataset and shard name (default: DIR's name)"},
	{'o', "output", "DIR", "dataset folder to create or replace"},
	{0, NULL, NULL, NULL},
};

static const struct cmd_spec merge_spec = {
	.name = "merge",
	.summary = "merge the parts of a dataset packed apart into one",
	.usage = merge_usage,
	.opts = merge_opts,
	.extra = "PART is a dataset folder written by chute pack --part I/N.\n"
		 "All N parts must be given, each once, packed with the same\n"
		 "options from the same sources; their shards are linked (or\n"
		 "copied), never re-encoded, in part order whatever the order\n"
		 "given.\n",
};

struct merge_args {
	struct ch_merge_opts o;
	const char **parts; /* argc long */
	size_t nparts;
};

/* Returns 0 to go on, -1 after --help, or the exit status. */
static int parse_args(struct merge_args *a, int argc, char **argv)
{
	struct cmd_parser p;
	int c;

	cmd_parser_init(&p, &merge_spec, argc, argv);
	while ((c = cmd_next(&p)) != CMD_END) {
		if (c == CMD_HELP)
			return -1;
		if (c == CMD_BAD)
			return EXIT_USAGE;
		if (c == CMD_POSITIONAL)
			a->parts[a->nparts++] = p.arg;
		else if (c == 'n')
			a->o.name = p.arg;
		else if (c == 'o')
			a->o.out_dir = p.arg;
		else if (c == OPT_FORCE)
			a->o.force = 1;
	}
	if (a->nparts == 0)
		return cmd_error("no part given: name the folders chute pack "
				 "--part wrote");
	if (!a->o.out_dir)
		return cmd_error("no output folder given: use -o DIR");
	return 0;
}

static int run_merge(struct merge_args *a)
{
	struct ch_merge_result res;
	struct ch_error err = {0};
	int rc;

	memset(&res, 0, sizeof res);
	a->o.cancel = cmd_catch_signals();
	rc = ch_merge(a->parts, a->nparts, &a->o, &res, &err);
	if (rc < 0)
		return cmd_fail(&err);
	printf("merged %zu parts: %" PRIu64 " samples (%" PRIu64 " bytes) "
	       "in %zu shards, id %s\n",
	       res.parts, res.samples, res.bytes, res.shards, res.id);
	cmd_print_replaced(a->o.out_dir, res.old_id, res.id, res.changes);
	return 0;
}

int cmd_merge(int argc, char **argv)
{
	struct merge_args a;
	char *name = NULL;
	int status;

	memset(&a, 0, sizeof a);
	a.parts = calloc((size_t)argc + 1, sizeof *a.parts);
	if (!a.parts)
		return cmd_error("out of memory");
	status = parse_args(&a, argc, argv);
	if (status == 0 && !a.o.name) {
		status = cmd_default_name(a.o.out_dir, &name);
		a.o.name = name;
	}
	if (status == 0)
		status = cmd_check_name(a.o.name);
	if (status == 0)
		status = run_merge(&a);
	free(name);
	free(a.parts);
	return status < 0 ? 0 : status;
}
