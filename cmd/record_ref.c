/*
 * record_ref.c - how a run record's remote is opened again: by its url,
 * the secrets it was recorded without dropped, and the version's id.
 * Its own file: the records of one dataset and of a mix both use it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream_record.h"

/* A recorded remote's hidden secrets dropped: a hidden password
 * ("USER:***@") leaves USER@HOST, a hidden user ("***@") and a query
 * ("?token=***") go whole.  A password comes from ~/.netrc then; a
 * query's token cannot come back: the server says no, with its status. */
static void drop_hidden_secrets(char *url)
{
	char *host = strstr(url, "://");
	if (!host)
		return;
	host += 3;
	char *hidden = strstr(host, ":***@");
	if (hidden && hidden < host + strcspn(host, "/?#"))
		memmove(hidden, hidden + 4, strlen(hidden + 4) + 1);
	else if (strncmp(host, "***@", 4) == 0)
		memmove(host, host + 4, strlen(host + 4) + 1);
	host[strcspn(host, "?")] = '\0';
}

int record_remote_ref(const char *remote, const char *id, char **ref)
{
	char *url = strdup(remote);
	*ref = NULL;
	if (!url)
		return -1;
	drop_hidden_secrets(url);
	if (asprintf(ref, "%s@%s", url, id) < 0)
		*ref = NULL;
	free(url);
	return *ref ? 0 : -1;
}
