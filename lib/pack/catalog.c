/* pack/catalog.c - the entries (KEY.FIELD files) a pack will read. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/catalog.h"

void ch_catalog_init(struct ch_catalog *c, const char *tmp_dir)
{
	memset(c, 0, sizeof(*c));
	c->spool_fd = -1;
	c->tmp_dir = tmp_dir;
}

#define CHUNK_SIZE (1u << 20)

void ch_catalog_clear(struct ch_catalog *c)
{
	for (size_t i = 0; i < c->nchunks; i++)
		free(c->chunks[i]);
	free(c->chunks);
	c->chunks = NULL;
	c->nchunks = 0;
	c->chunk = NULL;
	c->chunk_used = 0;
	c->n = 0;
}

void ch_catalog_release(struct ch_catalog *c)
{
	ch_catalog_clear(c);
	free(c->entries);
	if (c->spool_fd >= 0)
		close(c->spool_fd);
	free(c->spool_path);
	for (size_t i = 0; i < c->nsources; i++)
		free(c->sources[i]);
	free(c->sources);
	memset(c, 0, sizeof(*c));
	c->spool_fd = -1;
}

static char *new_chunk(struct ch_catalog *c, size_t size)
{
	char **v = realloc(c->chunks, (c->nchunks + 1) * sizeof(*v));
	if (!v)
		return NULL;
	c->chunks = v;
	char *chunk = malloc(size);
	if (chunk)
		v[c->nchunks++] = chunk;
	return chunk;
}

/* Copies n bytes into the current chunk, starting a new one when it is
 * full; a large item gets an allocation of its own. */
static void *store(struct ch_catalog *c, const void *p, size_t n)
{
	char *d;
	if (n > CHUNK_SIZE / 16) {
		if (!(d = new_chunk(c, n)))
			return NULL;
	} else {
		if (!c->chunk || CHUNK_SIZE - c->chunk_used < n) {
			if (!(c->chunk = new_chunk(c, CHUNK_SIZE)))
				return NULL;
			c->chunk_used = 0;
		}
		d = c->chunk + c->chunk_used;
		c->chunk_used += n;
	}
	memcpy(d, p, n);
	return d;
}

static char *store_str(struct ch_catalog *c, const char *s, int *failed)
{
	if (!s)
		return NULL;
	char *d = store(c, s, strlen(s) + 1);
	if (!d)
		*failed = 1;
	return d;
}

int ch_catalog_add(struct ch_catalog *c, const struct ch_entry *e,
		   struct ch_error *err)
{
	if (c->cancel && *c->cancel)
		return ch_error_interrupted(err);
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 1024;
		struct ch_entry *v = realloc(c->entries, ncap * sizeof(*v));
		if (!v)
			return ch_error_set(err, "out of memory (%zu entries)",
					    ncap);
		c->entries = v;
		c->cap = ncap;
	}
	struct ch_entry d = *e;
	int failed = 0;
	d.key = store_str(c, e->key, &failed);
	d.field = store_str(c, e->field, &failed);
	d.path = store_str(c, e->path, &failed);
	d.origin = e->origin && e->path && !strcmp(e->origin, e->path)
			   ? d.path
			   : store_str(c, e->origin, &failed);
	if (e->inline_data && !(d.inline_data = store(c, e->inline_data,
						      e->size ? e->size : 1)))
		failed = 1;
	if (failed)
		return ch_error_nomem(err);
	c->entries[c->n++] = d;
	c->added++;
	if (c->spill && c->n * sizeof(*c->entries) + c->chunk_used +
				(c->nchunks ? c->nchunks - 1 : 0) * CHUNK_SIZE >
			c->budget)
		return c->spill(c, c->spill_arg, err);
	return 0;
}

int ch_split_key(const char *relpath, char **key, char **field,
		 const char *origin, struct ch_error *err)
{
	if (relpath[0] == '/')
		return ch_error_set(err, "absolute path refused: '%s' (%s)",
				    relpath, origin);
	/* every component must be a real name: no "", ".", ".." */
	const char *comp = relpath;
	for (const char *p = relpath;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		size_t n = (size_t)(p - comp);
		if (n == 0 || (n == 1 && comp[0] == '.') ||
		    (n == 2 && comp[0] == '.' && comp[1] == '.'))
			return ch_error_set(err, "path with an empty, '.' or "
					    "'..' component refused: '%s' (%s)",
					    relpath, origin);
		if (*p == '\0')
			break;
		comp = p + 1;
	}
	const char *dot = strchr(comp, '.');
	if (!dot || dot == comp || dot[1] == '\0')
		return ch_error_set(err, "no KEY.FIELD name: '%s' (%s)", relpath,
				    origin);
	size_t klen = (size_t)(dot - relpath);
	if (klen > 65535)
		return ch_error_set(err, "key longer than 65535 bytes (%s)",
				    origin);
	*key = strndup(relpath, klen);
	*field = strdup(dot + 1);
	if (!*key || !*field) {
		free(*key);
		free(*field);
		return ch_error_nomem(err);
	}
	return 0;
}
