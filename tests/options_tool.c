/*
 * options_tool.c - prints the option tables of chute's commands, one
 * option a line as a man page's OPTIONS tags them ("-o, --output DIR"),
 * for tests/cli/docs.bats to hold the pages to the tables themselves.
 * Built from cmd/'s objects (not main.o); not installed.
 *
 * usage: options_tool COMMAND...
 */
#include <stdio.h>

#include "../cmd/cmd.h"

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const struct cmd_command *cmd = cmd_find(argv[i]);
		if (!cmd) {
			fprintf(stderr, "options_tool: no command '%s'\n",
				argv[i]);
			return 2;
		}
		for (const struct cmd_opt *o = cmd->spec->opts; o->name; o++) {
			if (o->letter)
				printf("-%c, ", o->letter);
			printf("--%s%s%s\n", o->name, o->arg ? " " : "",
			       o->arg ? o->arg : "");
		}
	}
	return 0;
}
