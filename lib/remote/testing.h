/* remote/testing.h - functions of remote/ that only tests call
 * (tests/unit/test_config.c, tests/fuzz/fuzz_config.c). */
#ifndef CH_REMOTE_TESTING_H
#define CH_REMOTE_TESTING_H

#include "chute/remote.h"

/* ch_config_load (chute/remote.h) for text already read (len bytes, NUL
 * bytes refused), as if from path, which only names it in messages and
 * cfg->path. */
int ch_config_parse(struct ch_config *cfg, const char *path,
		    const char *text, size_t len, struct ch_error *err);

#endif
