/* remote/lease.c - chute gc's lease on a remote: one small object,
 * gc/lease, holding when it expires and who holds it.  gc writes it
 * before it lists anything and removes it after its last removal; a push
 * (or a merge on the remote) that has written its manifest waits while
 * it is there, then checks that every object it names is there before
 * moving its tags (remote/push_pull.c).  No atomic operation is needed:
 * a push that saw no lease wrote its manifest before gc listed the
 * versions, so gc keeps it (the grace period). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "remote/lease.h"

enum { LEASE_MAX = 4096, POLL_FIRST_MS = 100, POLL_MAX_MS = 1000 };

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0)
		;
}

/* The lease there now: 1 with *expiry (0 when it does not say), 0 when
 * there is none, -1 on failure. */
static int read_lease(struct ch_store *st, int64_t *expiry, char *line,
		      size_t cap, struct ch_error *err)
{
	struct ch_buf b = {0};
	int rc = ch_store_get(st, CH_LEASE_KEY, LEASE_MAX, &b, err);
	if (rc == 1) {
		*err = (struct ch_error){0};
		rc = 0;
	} else if (rc == 0) {
		char text[LEASE_MAX + 1];
		long long e = 0;
		memcpy(text, b.data, b.len);
		text[b.len] = '\0';
		*expiry = sscanf(text, "%lld", &e) == 1 ? (int64_t)e : 0;
		if (line) {
			size_t k = b.len < cap - 1 ? b.len : cap - 1;
			memcpy(line, text, k);
			line[k] = '\0';
		}
		rc = 1;
	}
	ch_buf_release(&b);
	return rc;
}

static int write_lease(struct ch_store *st, struct ch_lease *l,
		       struct ch_error *err)
{
	char host[64] = "";
	int64_t now = now_s();
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(l->line, sizeof(l->line), "%lld chute-gc %s %ld %lld\n",
		 (long long)(now + CH_LEASE_S), host[0] ? host : "-",
		 (long)getpid(), (long long)now);
	if (ch_store_put(st, CH_LEASE_KEY, l->line, strlen(l->line), err) < 0)
		return -1;
	l->written = now;
	l->held = 1;
	return 0;
}

int ch_lease_take(struct ch_store *st, struct ch_lease *l,
		  struct ch_error *err)
{
	int64_t expiry = 0;
	memset(l, 0, sizeof(*l));
	int rc = read_lease(st, &expiry, NULL, 0, err);
	if (rc < 0)
		return -1;
	if (rc == 1 && (expiry == 0 || expiry > now_s())) {
		char *url = ch_store_key_url(st, CH_LEASE_KEY);
		ch_error_set(err, "another chute gc holds %s (for %lld s "
			     "more): nothing was removed; remove it by hand "
			     "if no gc runs", url ? url : CH_LEASE_KEY,
			     (long long)(expiry ? expiry - now_s() : 0));
		free(url);
		return -1;
	}
	return write_lease(st, l, err);
}

int ch_lease_renew(struct ch_store *st, struct ch_lease *l,
		   struct ch_error *err)
{
	int64_t age = now_s() - l->written;
	if (age >= CH_LEASE_S - CH_LEASE_RENEW_S)
		return ch_error_set(err, "chute gc ran %lld s without renewing "
				    "its lease (%s, %d s): a push may have "
				    "gone on meanwhile, so gc stopped; run it "
				    "again", (long long)age, CH_LEASE_KEY,
				    CH_LEASE_S);
	if (age < CH_LEASE_RENEW_S)
		return 0;
	return write_lease(st, l, err);
}

void ch_lease_release(struct ch_store *st, struct ch_lease *l)
{
	struct ch_error e = {0};
	char line[sizeof(l->line)];
	int64_t expiry;
	if (!l->held)
		return;
	l->held = 0;
	/* another gc's, written after ours expired, stays */
	if (read_lease(st, &expiry, line, sizeof(line), &e) == 1 &&
	    strcmp(line, l->line) == 0)
		ch_store_delete(st, CH_LEASE_KEY, &e);
}

int ch_lease_wait(struct ch_store *st, const char *point_name,
		  void (*point)(void *arg, const char *name), void *arg,
		  int *waited, struct ch_error *err)
{
	long ms = POLL_FIRST_MS;
	int64_t first = 0;
	*waited = 0;
	for (;;) {
		int64_t expiry = 0, now = now_s();
		int rc = read_lease(st, &expiry, NULL, 0, err);
		if (rc <= 0)
			return rc;
		if (!first)
			first = now;
		/* one that does not say: as long as a lease lasts */
		if (!expiry)
			expiry = first + CH_LEASE_S;
		if (expiry <= now)
			return 0; /* a gc that died: its lease has run out */
		if (!*waited && point)
			point(arg, point_name);
		*waited = 1;
		sleep_ms(ms);
		ms = ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : ms * 2;
	}
}
