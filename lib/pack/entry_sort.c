/* pack/entry_sort.c - sorting more file entries than the memory budget holds:
 * sorted runs spilled to unnamed temporary files, merged back as one
 * sorted stream (or, when nothing was spilled, the catalog sorted in
 * place).  pack reads the stream twice: once to survey, once to write. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/entry_sort.h"

/* ------------------------------------------------------------------ */
/* Writing a run                                                        */

enum { HAS_PATH = 1, HAS_ORIGIN = 2, HAS_INLINE = 4 };

static int put(FILE *f, const void *p, size_t n)
{
	return fwrite_unlocked(p, 1, n, f) == n ? 0 : -1;
}

static int put_u64(FILE *f, uint64_t v)
{
	return put(f, &v, sizeof(v));
}

static int put_str(FILE *f, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);
	return put(f, &n, sizeof(n)) || put(f, s, n) ? -1 : 0;
}

static int put_entry(FILE *f, const struct ch_entry *e)
{
	uint32_t flags = (e->path ? HAS_PATH : 0) |
			 (e->origin && e->origin != e->path ? HAS_ORIGIN : 0) |
			 (e->inline_data ? HAS_INLINE : 0);
	uint32_t from = (uint32_t)e->from;
	if (put_u64(f, e->size) || put_u64(f, e->spool_offset) ||
	    put_u64(f, e->seq) || put(f, &from, 4) || put(f, &flags, 4) ||
	    put_str(f, e->key) || put_str(f, e->field) ||
	    ((flags & HAS_PATH) && put_str(f, e->path)) ||
	    ((flags & HAS_ORIGIN) && put_str(f, e->origin)) ||
	    ((flags & HAS_INLINE) && put(f, e->inline_data, e->size)))
		return -1;
	return 0;
}

static FILE *temp_file(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		char *path = NULL;
		if (asprintf(&path, "%s/.runXXXXXX", dir) < 0)
			return NULL;
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
		free(path);
	}
	FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
	if (!f && fd >= 0)
		close(fd);
	return f;
}

int ch_runs_spill(struct ch_runs *r, struct ch_catalog *c, ch_entry_cmp cmp,
		  struct ch_error *err)
{
	FILE **v = realloc(r->files, (r->n + 1) * sizeof(*v));
	if (!v)
		return ch_error_nomem(err);
	r->files = v;
	FILE *f = temp_file(r->tmp_dir);
	if (!f)
		return ch_error_errno(err, errno, "cannot create a sort run in "
				      "'%s'", r->tmp_dir);
	v[r->n++] = f;
	qsort(c->entries, c->n, sizeof(*c->entries), cmp);
	for (size_t i = 0; i < c->n; i++)
		if (put_entry(f, &c->entries[i]) < 0)
			return ch_error_errno(err, errno, "cannot write a sort "
					      "run in '%s'", r->tmp_dir);
	if (fflush(f) == EOF)
		return ch_error_errno(err, errno, "cannot write a sort run in "
				      "'%s'", r->tmp_dir);
	ch_catalog_clear(c);
	return 0;
}

void ch_runs_release(struct ch_runs *r)
{
	for (size_t i = 0; i < r->n; i++)
		fclose(r->files[i]);
	free(r->files);
	r->files = NULL;
	r->n = 0;
}

/* ------------------------------------------------------------------ */
/* Reading runs back                                                    */

struct run_reader {
	FILE *f;
	int live;	    /* holds an entry */
	struct ch_entry e;  /* strings point into buf */
	struct ch_buf buf;
};

struct ch_sorted_entries {
	struct ch_catalog *cat; /* in-memory mode when runs->n == 0 */
	struct ch_runs *runs;
	ch_entry_cmp cmp;
	size_t pos;		/* in-memory: next entry */
	struct run_reader *readers;
	int last;		/* reader returned by the last next(), or -1 */
};

static int get(FILE *f, void *p, size_t n)
{
	return fread_unlocked(p, 1, n, f) == n ? 0 : -1;
}

/* Reads a length-prefixed string into buf; returns its offset. */
static int get_str(FILE *f, struct ch_buf *buf, size_t *off,
		   struct ch_error *err)
{
	uint32_t n;
	if (get(f, &n, 4) < 0 || ch_buf_reserve(buf, buf->len + n + 1, err) < 0)
		return -1;
	*off = buf->len;
	if (get(f, buf->data + buf->len, n) < 0)
		return -1;
	buf->data[buf->len + n] = '\0';
	buf->len += n + 1;
	return 0;
}

static int read_next(struct run_reader *rr, struct ch_error *err)
{
	uint64_t hdr[3];
	uint32_t from_flags[2];
	size_t key, field, path = 0, origin = 0, data = 0;
	struct ch_entry *e = &rr->e;
	rr->buf.len = 0;
	if (fread_unlocked(hdr, 8, 3, rr->f) != 3) {
		rr->live = 0;
		return ferror(rr->f) ? ch_error_set(err, "cannot read a sort "
						    "run") : 0;
	}
	if (get(rr->f, from_flags, 8) < 0 || get_str(rr->f, &rr->buf, &key, err) ||
	    get_str(rr->f, &rr->buf, &field, err) ||
	    ((from_flags[1] & HAS_PATH) && get_str(rr->f, &rr->buf, &path, err)) ||
	    ((from_flags[1] & HAS_ORIGIN) &&
	     get_str(rr->f, &rr->buf, &origin, err)))
		return ch_error_set(err, "cannot read a sort run");
	if (from_flags[1] & HAS_INLINE) {
		if (ch_buf_reserve(&rr->buf, rr->buf.len + hdr[0] + 1, err) < 0 ||
		    get(rr->f, rr->buf.data + rr->buf.len, hdr[0]) < 0)
			return ch_error_set(err, "cannot read a sort run");
		data = rr->buf.len;
		rr->buf.len += hdr[0];
	}
	char *b = (char *)rr->buf.data;
	*e = (struct ch_entry){
		.key = b + key, .field = b + field,
		.path = from_flags[1] & HAS_PATH ? b + path : NULL,
		.size = hdr[0], .spool_offset = hdr[1], .seq = hdr[2],
		.from = (int)from_flags[0],
		.inline_data = from_flags[1] & HAS_INLINE
				       ? (uint8_t *)b + data : NULL,
	};
	e->origin = from_flags[1] & HAS_ORIGIN ? b + origin : e->path;
	rr->live = 1;
	return 0;
}

int ch_sorted_rewind(struct ch_sorted_entries *s, struct ch_error *err)
{
	s->pos = 0;
	s->last = -1;
	for (size_t i = 0; i < s->runs->n; i++) {
		struct run_reader *rr = &s->readers[i];
		rr->f = s->runs->files[i];
		if (fseek(rr->f, 0, SEEK_SET) < 0 || read_next(rr, err) < 0)
			return ch_error_set(err, "cannot read a sort run");
	}
	return 0;
}

int ch_sorted_open(struct ch_sorted_entries **out, struct ch_catalog *c,
		   struct ch_runs *r, ch_entry_cmp cmp, struct ch_error *err)
{
	struct ch_sorted_entries *s = calloc(1, sizeof(*s));
	if (!s)
		return ch_error_nomem(err);
	*s = (struct ch_sorted_entries){ .cat = c, .runs = r, .cmp = cmp };
	if (r->n == 0)
		qsort(c->entries, c->n, sizeof(*c->entries), cmp);
	else if (!(s->readers = calloc(r->n, sizeof(*s->readers)))) {
		free(s);
		return ch_error_nomem(err);
	}
	*out = s;
	return ch_sorted_rewind(s, err);
}

void ch_sorted_free(struct ch_sorted_entries *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->readers && i < s->runs->n; i++)
		ch_buf_release(&s->readers[i].buf);
	free(s->readers);
	free(s);
}

/* The smallest live reader; runs are few (one per budget's worth of
 * entries), so a linear scan beats keeping a heap. */
static int smallest(const struct ch_sorted_entries *s)
{
	int best = -1;
	for (size_t i = 0; i < s->runs->n; i++)
		if (s->readers[i].live &&
		    (best < 0 || s->cmp(&s->readers[i].e,
					&s->readers[best].e) < 0))
			best = (int)i;
	return best;
}

int ch_sorted_next(struct ch_sorted_entries *s, const struct ch_entry **e,
		   struct ch_error *err)
{
	if (s->runs->n == 0) {
		if (s->pos == s->cat->n)
			return 0;
		*e = &s->cat->entries[s->pos++];
		return 1;
	}
	if (s->last >= 0 && read_next(&s->readers[s->last], err) < 0)
		return -1;
	s->last = smallest(s);
	if (s->last < 0)
		return 0;
	*e = &s->readers[s->last].e;
	return 1;
}
