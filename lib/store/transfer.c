/* store/transfer.c - what every backend shares: the retry policy, the
 * number of parallel jobs, the progress reports, an object's URL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/backend.h"

enum { MAX_BACKOFF_MS = 30000 };

char *ch_store_object_url(const struct ch_store *st, const char *key)
{
	/* st->url, redacted, has its query's '?' first after the user part
	 * (or no '?' at all, when all of it is hidden) */
	const char *host = strstr(st->url, "://");
	const char *q = st->query && host ? strchr(host + 3, '?') : NULL;
	int n = q ? (int)(q - st->url) : (int)strlen(st->url);
	char *s = NULL;
	if (asprintf(&s, "%.*s/%s%s", n, st->url, key, q ? q : "") < 0)
		return NULL;
	return s;
}

long ch_store_backoff_ms(const struct ch_store *st, int n)
{
	long ms = st->opts.backoff_ms;
	for (int i = 1; i < n && ms < MAX_BACKOFF_MS; i++)
		ms *= 2;
	return ms < MAX_BACKOFF_MS ? ms : MAX_BACKOFF_MS;
}

void ch_store_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t ch_store_now_ms(void)
{
	return (uint64_t)(ch_now() * 1000);
}

void ch_store_report(struct ch_store_reporter *r,
		     const struct ch_progress *p, int force)
{
	if (!r->o || !r->o->progress)
		return;
	uint64_t now = ch_store_now_ms();
	if (!force && now - r->last_ms < 100)
		return;
	r->last_ms = now;
	struct ch_progress shown = *p;
	shown.phase = r->phase;
	shown.unit = "files";
	r->o->progress(&shown, r->o->progress_arg);
}

int ch_store_jobs(const struct ch_transfer_opts *o)
{
	int jobs = o && o->jobs > 0 ? o->jobs : 8;
	return jobs > 256 ? 256 : jobs;
}
