/*
 * test_point.c - a hook for tests: a command stops at a named point of
 * its work (ch_point_fn) so that a test can run another command in
 * between, deterministically.  CHUTE_TEST_PAUSE lists the points
 * ("push:after-objects,gc:after-plan"); at one of them the command
 * creates the file CHUTE_TEST_DIR/POINT and waits (two minutes at most)
 * until CHUTE_TEST_DIR/POINT.go exists.  Without both variables it does
 * nothing.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"

enum { WAIT_MS = 120000, POLL_MS = 10 };

static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p; p = strchr(p, ',')) {
		p += *p == ',';
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || !p[n]))
			return 1;
	}
	return 0;
}

void cmd_test_point(void *arg, const char *name)
{
	const char *list = getenv("CHUTE_TEST_PAUSE");
	const char *dir = getenv("CHUTE_TEST_DIR");
	char here[4096], go[4096];
	(void)arg;
	if (!list || !dir || !*dir || !listed(list, name))
		return;
	snprintf(here, sizeof(here), "%s/%s", dir, name);
	snprintf(go, sizeof(go), "%s/%s.go", dir, name);
	int fd = open(here, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
	struct timespec ts = {0, POLL_MS * 1000000L};
	for (int waited = 0; waited < WAIT_MS && access(go, F_OK) < 0;
	     waited += POLL_MS)
		nanosleep(&ts, NULL);
}
