/* store/read_ahead.c - an object read front to back while it arrives: a few
 * range requests of one chunk each are in flight ahead of the reader, so
 * that a remote archive is unpacked as it downloads, in bounded memory
 * (ahead x chunk bytes), with the store's retries on every request. */
#include <stdlib.h>
#include <string.h>

#include "chute/store.h"
#include "common/pool.h"

enum { MAX_AHEAD = 16 };

struct ch_store_stream {
	struct ch_store *st;
	char *key;
	uint64_t size, nchunks;
	size_t chunk_size;
	int ahead;
	uint8_t *bufs[MAX_AHEAD]; /* chunk i arrives in bufs[i % ahead] */
	struct ch_ordered *fetches; /* chunks fetched ahead, taken in order */
	uint64_t next_read;
	size_t read_off; /* into the chunk being read */
	int holding;	 /* next_read's chunk is taken, in bufs[slot] */
	size_t slot;
};

static uint64_t chunk_len(const struct ch_store_stream *s, uint64_t i)
{
	uint64_t at = i * s->chunk_size;
	return s->size - at < s->chunk_size ? s->size - at : s->chunk_size;
}

/* On a fetcher thread: chunk i into its buffer. */
static int fetch(void *arg, size_t i, size_t slot, struct ch_error *err)
{
	struct ch_store_stream *s = arg;
	return ch_store_get_range(s->st, s->key, i * s->chunk_size,
				  (size_t)chunk_len(s, i), s->bufs[slot], err);
}

int ch_store_stream_open(struct ch_store_stream **out, struct ch_store *st,
			 const char *key, uint64_t size, int ahead,
			 size_t chunk, struct ch_error *err)
{
	struct ch_store_stream *s = calloc(1, sizeof(*s));
	if (!s || !(s->key = strdup(key))) {
		free(s);
		return ch_error_nomem(err);
	}
	s->st = st;
	s->size = size;
	s->chunk_size = chunk ? chunk : 4 << 20;
	s->nchunks = (size + s->chunk_size - 1) / s->chunk_size;
	s->ahead = ahead < 1 ? 1 : ahead > MAX_AHEAD ? MAX_AHEAD : ahead;
	for (int i = 0; i < s->ahead; i++)
		if (!(s->bufs[i] = malloc(s->chunk_size))) {
			ch_store_stream_close(s);
			return ch_error_nomem(err);
		}
	if (ch_ordered_start(&s->fetches, s->ahead, s->nchunks,
			     (size_t)s->ahead, fetch, s, NULL, err) < 0) {
		ch_store_stream_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

ssize_t ch_store_stream_read(struct ch_store_stream *s, void *buf, size_t n,
			     struct ch_error *err)
{
	size_t done = 0;
	while (done < n && s->next_read < s->nchunks) {
		if (!s->holding) {
			if (ch_ordered_next(s->fetches, &s->slot, err) < 0)
				return -1;
			s->holding = 1;
		}
		size_t len = (size_t)chunk_len(s, s->next_read);
		size_t k = len - s->read_off < n - done ? len - s->read_off
							: n - done;
		memcpy((uint8_t *)buf + done, s->bufs[s->slot] + s->read_off,
		       k);
		done += k;
		s->read_off += k;
		if (s->read_off == len) { /* the buffer goes to a later chunk */
			ch_ordered_release(s->fetches);
			s->holding = 0;
			s->next_read++;
			s->read_off = 0;
		}
	}
	return (ssize_t)done;
}

void ch_store_stream_close(struct ch_store_stream *s)
{
	if (!s)
		return;
	ch_ordered_stop(s->fetches);
	for (int i = 0; i < s->ahead; i++)
		free(s->bufs[i]);
	free(s->key);
	free(s);
}
