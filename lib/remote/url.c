/* remote/url.c - what is a remote url, and a folder given as a plain path
 * turned into one: the one scheme list that references (ref.c), remote
 * names (names.c) and the config's checks (config.c) all read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute/remote.h"
#include "remote/url.h"

static const char *const schemes[] = {"file://", "http://", "https://",
				      "s3://"};

int ch_ref_is_remote(const char *text)
{
	for (size_t i = 0; i < sizeof(schemes) / sizeof(*schemes); i++)
		if (strncmp(text, schemes[i], strlen(schemes[i])) == 0)
			return 1;
	return 0;
}

char *ch_remote_store_url(const char *url)
{
	char *out = NULL, *cwd;
	if (ch_ref_is_remote(url))
		return strdup(url);
	if (url[0] == '/')
		return asprintf(&out, "file://%s", url) < 0 ? NULL : out;
	if (!(cwd = getcwd(NULL, 0)))
		return NULL;
	if (asprintf(&out, "file://%s/%s", cwd, url) < 0)
		out = NULL;
	free(cwd);
	return out;
}
