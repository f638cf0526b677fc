/*
 * stream/export.c - shards back to WebDataset tar files.
 *
 * One tar per shard, members "KEY.FIELD" in sample order, written by the
 * same tar writer as `chute stream --format tar` (stream/encode_tar.c):
 * one shard streamed in order gives the same bytes.  Headers carry
 * nothing from the machine or the clock (mtime 0, uid/gid 0, no user or
 * group names, mode 0644), so the same shards give the same bytes.  Each
 * tar is written under a hidden temporary name and renamed into place
 * when complete: a reader never sees half a tar under its final name.
 */
#include "chute/stream.h"
#include "common/counter.h"
#include "common/internal.h"
#include "stream/encode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Headers and small members are gathered up to this many bytes before a
 * write; a bigger member's data is written from where it lies. */
#define FLUSH_AT ((size_t)1 << 20)

/* One tar being written. */
struct tar_out {
	const char *final; /* OUTDIR/NAME.tar */
	struct ch_temp tmp; /* OUTDIR/.NAME.tar.tmp-PID, locked */
	struct ch_buf out;  /* bytes not yet written, whole blocks */
	struct ch_buf name; /* member name, NUL-terminated */
};

/* The tar's name: the shard's file name with ".chs" replaced by ".tar". */
static char *tar_name(const char *shard_path)
{
	const char *base = strrchr(shard_path, '/');
	size_t n;
	char *out;

	base = base ? base + 1 : shard_path;
	n = strlen(base);
	if (n > 4 && strcmp(base + n - 4, ".chs") == 0)
		n -= 4;
	if (n == 0)
		return NULL;
	if (asprintf(&out, "%.*s.tar", (int)n, base) < 0)
		return NULL;
	return out;
}

/* Builds "KEY.FIELD" in t->name, refusing names that escape OUTDIR: a
 * shard from elsewhere is not trusted to have been made by our pack. */
static int member_path(struct tar_out *t, const struct ch_sample_info *si,
		       const char *field, struct ch_error *err)
{
	size_t flen = strlen(field);
	char *p;

	t->name.len = 0;
	if (ch_buf_reserve(&t->name, si->key_len + flen + 2, err) < 0)
		return -1;
	p = (char *)t->name.data;
	memcpy(p, si->key, si->key_len);
	p[si->key_len] = '.';
	memcpy(p + si->key_len + 1, field, flen + 1);
	t->name.len = si->key_len + 1 + flen;
	if (flen == 0 || strchr(field, '/') ||
	    ch_tar_name_unsafe(p, t->name.len))
		return ch_error_set(err,
				    "refusing to write member '%s' to '%s': "
				    "a member name must be relative, without "
				    "empty, '.' or '..' components, and a "
				    "field name without '/'",
				    p, t->final);
	return 0;
}

/* Writes n bytes at p to the temporary. */
static int write_bytes(struct tar_out *t, const void *p, size_t n,
		       struct ch_error *err)
{
	const uint8_t *at = p;

	while (n > 0) {
		ssize_t w = write(t->tmp.fd, at, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return ch_error_errno(err, errno, "cannot write '%s'",
					      t->final);
		at += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes what t->out gathered. */
static int flush(struct tar_out *t, struct ch_error *err)
{
	int rc = write_bytes(t, t->out.data, t->out.len, err);

	t->out.len = 0;
	return rc;
}

/* One member: header, data, padding (stream/encode_tar.c). */
static int put_member(struct tar_out *t, const uint8_t *data, uint64_t size,
		      struct ch_error *err)
{
	static const uint8_t zero[512];

	if (ch_tar_header(&t->out, (const char *)t->name.data, t->name.len,
			  size, err) < 0)
		return -1;
	if (size >= FLUSH_AT) {
		if (flush(t, err) < 0 || write_bytes(t, data, size, err) < 0)
			return -1;
	} else if (size && ch_buf_append(&t->out, data, size, err) < 0)
		return -1;
	if (ch_buf_append(&t->out, zero, ch_tar_padding(size), err) < 0)
		return -1;
	return t->out.len >= FLUSH_AT ? flush(t, err) : 0;
}

/* Writes every sample of sh, field by field, checking for cancellation
 * between samples. */
static int put_samples(struct tar_out *t, const struct ch_shard *sh,
		       const struct ch_export_opts *o, struct ch_counter *c,
		       struct ch_error *err)
{
	struct ch_block_reader *r = ch_block_reader_new();
	uint64_t n = ch_shard_sample_count(sh);
	int rc = -1;

	if (!r)
		return ch_error_set(err, "cannot write '%s': out of memory",
				    t->final);
	for (uint64_t i = 0; i < n; i++) {
		struct ch_sample_info si;
		const uint8_t *data;

		if (o->cancel && *o->cancel) {
			ch_error_interrupted(err);
			goto out;
		}
		ch_shard_sample(sh, i, &si);
		int got = ch_sample_read(r, sh, i, &data, err);
		if (got < 0) {
			rc = got;
			goto out;
		}
		uint64_t bytes = 0;
		for (uint32_t f = 0; f < si.nfields; f++) {
			struct ch_field_info fi;

			ch_shard_field(sh, i, f, &fi);
			if (member_path(t, &si, fi.name, err) < 0 ||
			    put_member(t, data + fi.offset, fi.size, err) < 0)
				goto out;
			bytes += fi.size;
		}
		ch_counter_add(c, 1, bytes);
	}
	rc = 0;
out:
	ch_block_reader_free(r);
	return rc;
}

/* Finishes the tar (end marker, flush), syncs it and renames it into
 * place, still locked: closing it unlocks it.  *size: its bytes. */
static int tar_commit(struct tar_out *t, uint64_t *size,
		      struct ch_error *err)
{
	struct stat st;

	if (ch_tar_end(&t->out, err) < 0 || flush(t, err) < 0)
		return -1;
	if (fsync(t->tmp.fd) < 0 || fstat(t->tmp.fd, &st) < 0)
		return ch_error_errno(err, errno, "cannot write '%s'", t->final);
	*size = (uint64_t)st.st_size;
	if (rename(t->tmp.path, t->final) < 0)
		return ch_error_errno(err, errno, "cannot rename '%s' to '%s'",
				      t->tmp.path, t->final);
	ch_temp_release(&t->tmp, 0);
	return 0;
}

/* Frees; a temporary file still there belongs to a failed export. */
static void tar_release(struct tar_out *t)
{
	ch_temp_release(&t->tmp, 1);
	ch_buf_release(&t->out);
	ch_buf_release(&t->name);
}

/* Exports shard s to OUTDIR/NAME.tar, of *size bytes. */
static int export_shard(struct ch_dataset *ds, size_t s,
			const struct ch_export_opts *o, struct ch_counter *c,
			uint64_t *size,
			struct ch_error *err)
{
	struct tar_out t = {.tmp = {.fd = -1}};
	struct ch_shard *sh = NULL;
	char *name = NULL, *final = NULL;
	int rc = -1;

	name = tar_name(ds->manifest.shards[s].path);
	if (!name) {
		ch_error_set(err, "cannot export shard '%s': no usable file "
				  "name",
			     ds->manifest.shards[s].path);
		goto out;
	}
	final = ch_path_join(o->out_dir, name);
	if (!final) {
		ch_error_set(err, "cannot export '%s': out of memory", name);
		goto out;
	}
	t.final = final;
	if ((rc = ch_dataset_shard(ds, s, &sh, err)) < 0 ||
	    (rc = ch_temp_create(&t.tmp, o->out_dir, name, 0, err)) < 0 ||
	    (rc = put_samples(&t, sh, o, c, err)) < 0 ||
	    (rc = tar_commit(&t, size, err)) < 0)
		goto out;
	rc = 0;
out:
	tar_release(&t);
	free(final);
	free(name);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Two shards with the same file name in different folders would silently
 * overwrite each other's tar: refuse before writing anything. */
static int check_names(const struct ch_manifest *m, struct ch_error *err)
{
	char **names = calloc(m->nshards ? m->nshards : 1, sizeof(*names));
	int rc = -1;

	if (!names)
		return ch_error_set(err, "cannot export: out of memory");
	for (size_t i = 0; i < m->nshards; i++) {
		names[i] = tar_name(m->shards[i].path);
		if (!names[i]) {
			ch_error_set(err, "cannot export shard '%s': no "
					  "usable file name",
				     m->shards[i].path);
			goto out;
		}
	}
	qsort(names, m->nshards, sizeof(*names), cmp_str);
	for (size_t i = 1; i < m->nshards; i++)
		if (strcmp(names[i - 1], names[i]) == 0) {
			ch_error_set(err, "cannot export: two shards would "
					  "both be written to '%s'",
				     names[i]);
			goto out;
		}
	rc = 0;
out:
	for (size_t i = 0; i < m->nshards; i++)
		free(names[i]);
	free(names);
	return rc;
}

int ch_export(struct ch_dataset *ds, const struct ch_export_opts *o,
	      struct ch_export_result *res, struct ch_error *err)
{
	const struct ch_manifest *m = &ds->manifest;
	struct ch_counter c;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	ch_counter_init(&c, o->progress, o->progress_arg);
	if (o->format && strcmp(o->format, "tar") != 0) {
		ch_error_set(err, "unknown export format '%s' (only 'tar')",
			     o->format);
		goto out;
	}
	if (!o->out_dir || !*o->out_dir) {
		ch_error_set(err, "no output folder given");
		goto out;
	}
	if (check_names(&ds->manifest, err) < 0 ||
	    ch_mkdir_p(o->out_dir, err) < 0)
		goto out;
	ch_counter_phase(&c, "writing", "samples", m->samples, m->bytes);
	for (size_t s = 0; s < m->nshards; s++) {
		uint64_t size = 0;
		if ((rc = export_shard(ds, s, o, &c, &size, err)) < 0)
			goto out;
		res->files++;
		res->samples += ds->manifest.shards[s].samples;
		res->bytes += size;
	}
	ch_counter_end(&c);
	rc = -1;
	/* The renames are only durable once the folder itself is synced. */
	if (ch_fsync_dir(o->out_dir, err) < 0)
		goto out;
	rc = 0;
out:
	return rc;
}
