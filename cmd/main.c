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

	if (strncmp(arg, "--", 2) == 0) {
		snprintf(word, sizeof word, "%.*s", (int)strcspn(arg + 2, "="),
			 arg + 2);
		near = ch_closest(word, names, 2);
	}
	if (near)
		return cmd_error("unknown option '%s'; did you mean '--%s'?",
				 arg, near);
	return cmd_error("unknown option '%s'; see 'chute help'", arg);
}
static int finish(int status)
{
	cmd_progress_clear();
	/* A reader that went away is the reader's business (head, less). */
	if ((fflush(stdout) == EOF || ferror(stdout)) && errno != EPIPE &&
	    status == 0)
		return cmd_error("cannot write to standard output: %s",
				 strerror(errno));
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
		cmd_print_commands(stderr);
		return EXIT_USAGE;
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
