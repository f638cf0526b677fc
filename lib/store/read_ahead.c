/* store/read_ahead.c - an object read front to back while it arrives: a few
 * range requests of one chunk each are in flight ahead of the reader, so
 * that a remote archive is unpacked as it downloads, in bounded memory
 * (ahead x chunk bytes), with the store's retries on every request. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chute/store.h"

enum { MAX_AHEAD = 16 };

enum chunk_state { CHUNK_FREE, CHUNK_BUSY, CHUNK_READY, CHUNK_FAILED };

struct chunk {
	enum chunk_state state;
	uint64_t index;	 /* which chunk of the object */
	size_t len;
	uint8_t *buf;
	struct ch_error err;
};

struct ch_store_stream {
	struct ch_store *st;
	char *key;
	uint64_t size, nchunks;
	size_t chunk_size;
	int ahead;
	pthread_mutex_t mu;
	pthread_cond_t changed;
	struct chunk chunks[MAX_AHEAD]; /* chunk i lives in chunks[i % ahead] */
	uint64_t next_fetch, next_read;
	size_t read_off;		/* into the chunk being read */
	int stop;
	pthread_t threads[MAX_AHEAD];
	int nthreads;
};

static uint64_t chunk_len(const struct ch_store_stream *s, uint64_t i)
{
	uint64_t at = i * s->chunk_size;
	return s->size - at < s->chunk_size ? s->size - at : s->chunk_size;
}

/* A fetcher: takes the next chunk whose slot is free, fetches it. */
static void *fetcher(void *arg)
{
	struct ch_store_stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct chunk *c = NULL;
		while (!s->stop && s->next_fetch < s->nchunks &&
		       (c = &s->chunks[s->next_fetch % (uint64_t)s->ahead])
				       ->state != CHUNK_FREE)
			pthread_cond_wait(&s->changed, &s->mu);
		if (s->stop || s->next_fetch >= s->nchunks)
			break;
		uint64_t i = s->next_fetch++;
		c->state = CHUNK_BUSY;
		c->index = i;
		c->len = (size_t)chunk_len(s, i);
		pthread_mutex_unlock(&s->mu);
		int rc = ch_store_get_range(s->st, s->key, i * s->chunk_size,
					    c->len, c->buf, &c->err);
		pthread_mutex_lock(&s->mu);
		c->state = rc == 0 ? CHUNK_READY : CHUNK_FAILED;
		pthread_cond_broadcast(&s->changed);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int ch_store_stream_open(struct ch_store_stream **out, struct ch_store *st,
			 const char *key, uint64_t size, int ahead,
			 size_t chunk, struct ch_error *err)
{
	struct ch_store_stream *s = calloc(1, sizeof(*s));
	if (!s || !(s->key = strdup(key))) {
		free(s);
		return ch_error_set(err, "out of memory");
	}
	s->st = st;
	s->size = size;
	s->chunk_size = chunk ? chunk : 4 << 20;
	s->nchunks = (size + s->chunk_size - 1) / s->chunk_size;
	s->ahead = ahead < 1 ? 1 : ahead > MAX_AHEAD ? MAX_AHEAD : ahead;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->changed, NULL);
	for (int i = 0; i < s->ahead; i++)
		if (!(s->chunks[i].buf = malloc(s->chunk_size))) {
			ch_store_stream_close(s);
			return ch_error_set(err, "out of memory");
		}
	for (; s->nthreads < s->ahead; s->nthreads++)
		if (pthread_create(&s->threads[s->nthreads], NULL, fetcher, s))
			break;
	if (s->nthreads == 0) {
		ch_store_stream_close(s);
		return ch_error_set(err, "cannot start a download thread");
	}
	*out = s;
	return 0;
}

ssize_t ch_store_stream_read(struct ch_store_stream *s, void *buf, size_t n,
			     struct ch_error *err)
{
	size_t done = 0;
	pthread_mutex_lock(&s->mu);
	while (done < n && s->next_read < s->nchunks) {
		struct chunk *c = &s->chunks[s->next_read % (uint64_t)s->ahead];
		while (!(c->index == s->next_read &&
			 (c->state == CHUNK_READY || c->state == CHUNK_FAILED)))
			pthread_cond_wait(&s->changed, &s->mu);
		if (c->state == CHUNK_FAILED) {
			*err = c->err;
			pthread_mutex_unlock(&s->mu);
			return -1;
		}
		size_t k = c->len - s->read_off < n - done ? c->len - s->read_off
							   : n - done;
		memcpy((uint8_t *)buf + done, c->buf + s->read_off, k);
		done += k;
		s->read_off += k;
		if (s->read_off == c->len) { /* the slot goes to a later chunk */
			c->state = CHUNK_FREE;
			s->next_read++;
			s->read_off = 0;
			pthread_cond_broadcast(&s->changed);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return (ssize_t)done;
}

void ch_store_stream_close(struct ch_store_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < s->nthreads; i++)
		pthread_join(s->threads[i], NULL);
	for (int i = 0; i < s->ahead; i++)
		free(s->chunks[i].buf);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->changed);
	free(s->key);
	free(s);
}
