/*
 * main.c - the chute command: global flags and dispatch through the
 * command table (commands.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "chute/common.h"
#include "cmd.h"

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
	const struct cmd_command *cmd;
	const char *first;

	/* Write errors come back as EPIPE instead of killing us mid-line. */
	signal(SIGPIPE, SIG_IGN);
	/* A file truncated under a mapping is an error, not a SIGBUS. */
	cmd_catch_faults();
	if (argc < 2) {
		cmd_print_commands(stderr); /* the usage is the message */
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
	cmd = cmd_find(first);
	if (!cmd)
		return cmd_unknown_command(first);
	cmd_set_name(cmd->name);
	return finish(cmd->fn(argc - 1, argv + 1));
}
