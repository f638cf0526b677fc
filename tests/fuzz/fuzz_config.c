/*
 * fuzz_config.c - libFuzzer target for ch_config_parse, the reader of
 * .chute/config and the user's config file (named remotes).
 *
 * Any bytes must be either refused with a message naming the file (and
 * the line) or accepted as entries that can be looked up; anything else
 * (a crash, a leak, undefined behaviour) is a bug.  Built and run by
 * scripts/run-fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "chute/remote.h"
#include "remote/testing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ch_config cfg;
	struct ch_error err;
	const char **names = NULL;
	size_t n = 0;

	err.msg[0] = '\0';
	if (ch_config_parse(&cfg, "fuzz/config", (const char *)data, size,
			    &err) < 0) {
		/* A refusal always says why, and where. */
		if (!memchr(err.msg, '\0', sizeof(err.msg)) ||
		    strncmp(err.msg, "fuzz/config", 11) != 0)
			abort();
		return 0;
	}
	/* Every remote it accepted has its url. */
	if (ch_config_remote_names(&cfg, &names, &n, &err) < 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!ch_config_get(&cfg, "remote", names[i], "url"))
			abort();
	free(names);
	ch_config_release(&cfg);
	return 0;
}
