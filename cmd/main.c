/*
 * main.c - the chute command: global flags, the command table, dispatch.
 *
 * Adding a command is one line in the sorted table below and one file
 * cmd/<name>.c exporting cmd_<name>().
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "chute.h"
#include "cmd.h"

static int cmd_help(int argc, char **argv);

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary; /* the man page's NAME line says the same */
};

static const struct command commands[] = {
	{"bench", cmd_bench, "measure where the time of a stream goes"},
	{"cat", cmd_cat, "write one field of one sample to standard output"},
	{"check", cmd_check, "validate a dataset before training"},
	{"diff", cmd_diff, "compare two dataset versions sample by sample"},
	{"export", cmd_export, "write a dataset as WebDataset tar files"},
	{"gc", cmd_gc, "remove from a remote what no kept version needs"},
	{"help", cmd_help, "show the commands, or the options of one"},
	{"log", cmd_log, "show the versions a dataset version comes from"},
	{"ls", cmd_ls, "list the samples of a dataset or shard"},
	{"manifest", cmd_manifest, "show a dataset version: its id and what it holds"},
	{"merge", cmd_merge, "merge the parts of a dataset packed apart into one"},
	{"pack", cmd_pack, "pack files into compressed, checksummed shards"},
	{"preview", cmd_preview, "draw one batch of a stream as a contact sheet"},
	{"pull", cmd_pull, "fetch a dataset version from a remote"},
	{"push", cmd_push, "send a dataset version to a remote"},
	{"remote", cmd_remote, "name remotes and choose the default one"},
	{"split", cmd_split, "make deterministic train, val and test splits"},
	{"status", cmd_status, "compare a dataset folder with its manifest"},
	{"stream", cmd_stream, "stream shuffled batches of a dataset to a trainer"},
	{"tags", cmd_tags, "list the tags and versions of a remote"},
	{"verify", cmd_verify, "check the hashes of a dataset or shards"},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void print_help(FILE *out)
{
	fputs("usage: chute [--version] [--help] COMMAND [ARGS...]\n"
	      "   or: chute help [COMMAND]\n\ncommands:\n", out);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "   %-9s%s\n", commands[i].name,
			commands[i].summary);
	fputs("\nsee 'chute help COMMAND' or 'man chute-COMMAND' for the "
	      "options of a command\n", out);
}

static int unknown_command(const char *name)
{
	const char *names[NCOMMANDS];
	const char *near;
	struct ch_error err;

	for (size_t i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	near = ch_closest(name, names, NCOMMANDS);
	cmd_set_name(NULL);
	if (near)
		ch_error_usage(&err, "'%s' is not a chute command; did you "
			       "mean '%s'?", name, near);
	else
		ch_error_usage(&err, "'%s' is not a chute command; see 'chute "
			       "help'", name);
	return cmd_fail(&err);
}

static int unknown_global_option(const char *arg)
{
	static const char *const names[] = {"help", "version"};
	char word[64];
	const char *near = NULL;
	struct ch_error err;

	if (strncmp(arg, "--", 2) == 0) {
		snprintf(word, sizeof word, "%.*s", (int)strcspn(arg + 2, "="),
			 arg + 2);
		near = ch_closest(word, names, 2);
	}
	if (near)
		ch_error_usage(&err, "unknown option '%s'; did you mean "
			       "'--%s'?", arg, near);
	else
		ch_error_usage(&err, "unknown option '%s'; see 'chute help'",
			       arg);
	return cmd_fail(&err);
}

static const struct cmd_opt help_opts[] = {
	CMD_HELP_OPT,
	CMD_QUIET_OPT,
	{0, NULL, NULL, NULL},
};

static const char *const help_usage[] = {"help [COMMAND]", NULL};

static const struct cmd_spec help_spec = {
	.name = "help",
	.summary = "show the commands, or the options of one",
	.usage = help_usage,
	.opts = help_opts,
};

/* `chute help CMD` runs `chute CMD --help`, so the two cannot differ. */
static int cmd_help(int argc, char **argv)
{
	struct cmd_parser p;
	const char *topic = NULL;
	int c, extra = 0;

	cmd_parser_init(&p, &help_spec, argc, argv);
	while ((c = cmd_next(&p)) != CMD_END) {
		if (c == CMD_HELP)
			return 0;
		if (c == CMD_BAD)
			return EXIT_USAGE;
		if (topic)
			extra = 1;
		topic = p.arg;
	}
	if (extra)
		return cmd_error("too many arguments: give one command");
	if (!topic) {
		print_help(stdout);
		return 0;
	}
	const struct command *cmd = find_command(topic);
	if (!cmd)
		return unknown_command(topic);
	char name[32], opt[] = "--help";
	char *args[] = {name, opt, NULL};
	snprintf(name, sizeof name, "%s", cmd->name);
	cmd_set_name(cmd->name);
	return cmd->fn(2, args);
}

static int finish(int status)
{
	struct ch_error err;

	cmd_progress_clear();
	/* A reader that went away is the reader's business (head, less). */
	if ((fflush(stdout) == EOF || ferror(stdout)) && errno != EPIPE &&
	    status == 0) {
		ch_error_errno(&err, errno, "cannot write to standard output");
		return cmd_fail(&err);
	}
	return status;
}

int main(int argc, char **argv)
{
	const struct command *cmd;
	const char *first;

	/* Write errors come back as EPIPE instead of killing us mid-line. */
	signal(SIGPIPE, SIG_IGN);
	/* A file truncated under a mapping is an error, not a SIGBUS. */
	cmd_catch_faults();
	if (argc < 2) {
		print_help(stderr); /* the usage is the message */
		return cmd_fail_reported(CH_ERR_USAGE);
	}
	first = argv[1];
	if (strcmp(first, "--version") == 0) {
		printf("chute %s\n", CH_VERSION);
		return finish(0);
	}
	if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
		cmd_set_name("help");
		return finish(cmd_help(argc - 1, argv + 1));
	}
	if (first[0] == '-')
		return unknown_global_option(first);
	cmd = find_command(first);
	if (!cmd)
		return unknown_command(first);
	cmd_set_name(cmd->name);
	return finish(cmd->fn(argc - 1, argv + 1));
}
