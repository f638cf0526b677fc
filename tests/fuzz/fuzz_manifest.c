/*
 * fuzz_manifest.c - libFuzzer target for ch_manifest_parse.
 *
 * Any bytes must be either refused with a message or accepted as a
 * manifest that encodes again; anything else (a crash, a leak, undefined
 * behaviour, an accepted manifest that cannot be encoded) is a bug.
 * Built and run by scripts/run-fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chute.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ch_manifest m;
	struct ch_error err;

	err.msg[0] = '\0';
	if (ch_manifest_parse(&m, (const char *)data, size, "fuzz", &err) < 0) {
		/* A refusal always says why. */
		if (err.msg[0] == '\0' ||
		    !memchr(err.msg, '\0', sizeof(err.msg)))
			abort();
		return 0;
	}
	/* What the checks let through must be writable again. */
	if (ch_manifest_compute_id(&m, &err) < 0)
		abort();
	ch_manifest_release(&m);
	return 0;
}
