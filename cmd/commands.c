/*
 * commands.c - the command table: each command's name, entry point and
 * spec (whose summary `chute help` prints), and chute help itself.
 *
 * Adding a command is one line in the sorted table below and one file
 * cmd/<name>.c exporting cmd_<name>() and cmd_<name>_spec.
 */
#include <stdio.h>
#include <string.h>

#include "chute.h"
#include "cmd.h"

static const struct cmd_command commands[] = {
	{"bench", cmd_bench, &cmd_bench_spec},
	{"cat", cmd_cat, &cmd_cat_spec},
	{"check", cmd_check, &cmd_check_spec},
	{"diff", cmd_diff, &cmd_diff_spec},
	{"export", cmd_export, &cmd_export_spec},
	{"gc", cmd_gc, &cmd_gc_spec},
	{"help", cmd_help, &cmd_help_spec},
	{"log", cmd_log, &cmd_log_spec},
	{"ls", cmd_ls, &cmd_ls_spec},
	{"manifest", cmd_manifest, &cmd_manifest_spec},
	{"merge", cmd_merge, &cmd_merge_spec},
	{"pack", cmd_pack, &cmd_pack_spec},
	{"preview", cmd_preview, &cmd_preview_spec},
	{"pull", cmd_pull, &cmd_pull_spec},
	{"push", cmd_push, &cmd_push_spec},
	{"remote", cmd_remote, &cmd_remote_spec},
	{"split", cmd_split, &cmd_split_spec},
	{"status", cmd_status, &cmd_status_spec},
	{"stream", cmd_stream, &cmd_stream_spec},
	{"tags", cmd_tags, &cmd_tags_spec},
	{"verify", cmd_verify, &cmd_verify_spec},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

const struct cmd_command *cmd_find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

void cmd_print_commands(FILE *out)
{
	fputs("usage: chute [--version] [--help] COMMAND [ARGS...]\n"
	      "   or: chute help [COMMAND]\n\ncommands:\n", out);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "   %-9s%s\n", commands[i].name,
			commands[i].spec->summary);
	fputs("\nsee 'chute help COMMAND' or 'man chute-COMMAND' for the "
	      "options of a command\n", out);
}

int cmd_unknown_command(const char *name)
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


struct help_args {
	const char *topic;
};

static const struct cmd_opt help_opts[] = {
	CMD_HELP_OPT,
	CMD_QUIET_OPT,
	CMD_OPT_END,
};

static const char *const help_usage[] = {"help [COMMAND]", NULL};

const struct cmd_spec cmd_help_spec = {
	.name = "help",
	.summary = "show the commands, or the options of one",
	.usage = help_usage,
	.opts = help_opts,
	CMD_OPERAND1(struct help_args, topic),
	.too_many = "give one command",
};

/* `chute help CMD` runs `chute CMD --help`, so the two cannot differ. */
int cmd_help(int argc, char **argv)
{
	struct help_args a = {0};
	struct ch_error err = {0};

	switch (cmd_parse(&cmd_help_spec, argc, argv, &a, &err)) {
	case CMD_HELP:
		return 0;
	case CMD_FAIL:
		return cmd_fail(&err);
	case CMD_GO:
		break;
	}
	if (!a.topic) {
		cmd_print_commands(stdout);
		return 0;
	}
	const struct cmd_command *cmd = cmd_find(a.topic);
	if (!cmd)
		return cmd_unknown_command(a.topic);
	char name[32], opt[] = "--help";
	char *args[] = {name, opt, NULL};
	snprintf(name, sizeof name, "%s", cmd->name);
	cmd_set_name(cmd->name);
	return cmd->fn(2, args);
}

