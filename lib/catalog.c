/* catalog.c - the entries (KEY.FIELD files) a pack will read. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void ch_catalog_init(struct ch_catalog *c, const char *tmp_dir)
{
	memset(c, 0, sizeof(*c));
	c->spool_fd = -1;
	c->tmp_dir = tmp_dir;
}

static void entry_release(struct ch_entry *e)
{
	free(e->key);
	free(e->field);
	free(e->origin);
	free(e->path);
	free(e->inline_data);
}

void ch_catalog_release(struct ch_catalog *c)
{
	for (size_t i = 0; i < c->n; i++)
		entry_release(&c->entries[i]);
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

static char *dup_or_null(const char *s, int *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = 1;
	return d;
}

int ch_catalog_add(struct ch_catalog *c, const struct ch_entry *e,
		   struct ch_error *err)
{
	if (c->cancel && *c->cancel)
		return ch_error_set(err, "interrupted");
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 1024;
		struct ch_entry *v = realloc(c->entries, ncap * sizeof(*v));
		if (!v)
			return ch_error_set(err, "out of memory (%zu entries)",
					    ncap);
		c->entries = v;
		c->cap = ncap;
	}
	struct ch_entry *d = &c->entries[c->n];
	int failed = 0;
	*d = *e;
	d->key = dup_or_null(e->key, &failed);
	d->field = dup_or_null(e->field, &failed);
	d->origin = dup_or_null(e->origin, &failed);
	d->path = dup_or_null(e->path, &failed);
	d->inline_data = NULL;
	if (!failed && e->inline_data) {
		d->inline_data = malloc(e->size ? e->size : 1);
		if (d->inline_data)
			memcpy(d->inline_data, e->inline_data, e->size);
		else
			failed = 1;
	}
	if (failed) {
		entry_release(d);
		return ch_error_set(err, "out of memory");
	}
	c->n++;
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
		return ch_error_set(err, "out of memory");
	}
	return 0;
}
