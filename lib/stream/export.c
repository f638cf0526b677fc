/*
 * stream/export.c - shards back to WebDataset tar files.
 *
 * One tar per shard, members "KEY.FIELD" in sample order.  Headers carry
 * nothing from the machine or the clock (mtime 0, uid/gid 0, no user or
 * group names, mode 0644), so the same shards give the same bytes.  Each
 * tar is written under a hidden temporary name and renamed into place
 * when complete: a reader never sees half a tar under its final name.
 */
#include "chute/stream.h"
#include "common/counter.h"
#include "common/internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One tar being written. */
struct tar_out {
	const char *final; /* OUTDIR/NAME.tar */
	struct ch_temp tmp; /* OUTDIR/.NAME.tar.tmp-PID, locked */
	struct archive *ar;
	struct archive_entry *ae;
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

/* 1 if the member name could land outside OUTDIR when extracted, or would
 * not read back as the same sample: absolute, empty, "." or ".."
 * components. */
static int name_escapes(const char *name)
{
	const char *c = name;

	if (*name == '/')
		return 1;
	for (;;) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return 1;
		if (c[n] == '\0')
			return 0;
		c += n + 1;
	}
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
	if (memchr(si->key, '\0', si->key_len) || flen == 0 ||
	    strchr(field, '/') || name_escapes(p))
		return ch_error_set(err,
				    "refusing to write member '%s' to '%s': "
				    "a member name must be relative, without "
				    "empty, '.' or '..' components, and a "
				    "field name without '/'",
				    p, t->final);
	return 0;
}

/* libarchive's own message, with the system's reason when there is one
 * ("Write error" alone does not say the disk is full). */
static int tar_error(struct tar_out *t, const char *member,
		     struct ch_error *err)
{
	int e = archive_errno(t->ar);
	const char *msg = archive_error_string(t->ar);
	char where[512] = "";

	if (!msg)
		msg = "unknown error";
	if (member)
		snprintf(where, sizeof(where), " (member '%s')", member);
	if (e > 0 && strcmp(msg, strerror(e)) != 0)
		return ch_error_errno(err, e, "cannot write '%s'%s: %s",
				      t->final, where, msg);
	return ch_error_set(err, "cannot write '%s'%s: %s", t->final, where,
			    msg);
}

/* One member: a regular file with deterministic metadata. */
static int put_member(struct tar_out *t, const uint8_t *data, uint64_t size,
		      struct ch_error *err)
{
	struct archive_entry *ae = t->ae;

	archive_entry_clear(ae);
	archive_entry_set_pathname(ae, (const char *)t->name.data);
	archive_entry_set_filetype(ae, AE_IFREG);
	archive_entry_set_perm(ae, 0644);
	archive_entry_set_size(ae, (la_int64_t)size);
	archive_entry_set_mtime(ae, 0, 0);
	archive_entry_set_uid(ae, 0);
	archive_entry_set_gid(ae, 0);
	/* ARCHIVE_WARN: the header was written with a caveat.  The one
	 * expected is a name that is not ASCII (we never set a locale): it
	 * then goes out as its raw bytes in a pax "hdrcharset=BINARY"
	 * header, which is what we want: the key's exact bytes. */
	if (archive_write_header(t->ar, ae) < ARCHIVE_WARN)
		goto fail;
	while (size > 0) {
		size_t n = size > (1u << 30) ? (1u << 30) : (size_t)size;
		la_ssize_t w = archive_write_data(t->ar, data, n);

		if (w <= 0)
			goto fail;
		data += w;
		size -= (uint64_t)w;
	}
	return 0;
fail:
	return tar_error(t, (const char *)t->name.data, err);
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

static int tar_open(struct tar_out *t, const char *dir, const char *name,
		    struct ch_error *err)
{
	if (ch_temp_create(&t->tmp, dir, name, 0, err) < 0)
		return -1;
	t->ar = archive_write_new();
	t->ae = archive_entry_new();
	if (!t->ar || !t->ae)
		return ch_error_set(err, "cannot write '%s': out of memory",
				    t->final);
	/* ustar headers, with a pax header only where a name or size does
	 * not fit ustar. */
	if (archive_write_set_format_pax_restricted(t->ar) != ARCHIVE_OK ||
	    archive_write_add_filter_none(t->ar) != ARCHIVE_OK ||
	    archive_write_open_fd(t->ar, t->tmp.fd) != ARCHIVE_OK)
		return tar_error(t, NULL, err);
	return 0;
}

/* Finishes the tar (end marker, flush), syncs it and renames it into
 * place, still locked: closing it unlocks it.  *size: its bytes. */
static int tar_commit(struct tar_out *t, uint64_t *size,
		      struct ch_error *err)
{
	struct stat st;

	if (archive_write_close(t->ar) != ARCHIVE_OK)
		return tar_error(t, NULL, err);
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
	if (t->ar)
		archive_write_free(t->ar);
	if (t->ae)
		archive_entry_free(t->ae);
	ch_temp_release(&t->tmp, 1);
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
	    (rc = tar_open(&t, o->out_dir, name, err)) < 0 ||
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
	if (ch_archive_load("write tar files", err) < 0 ||
	    check_names(&ds->manifest, err) < 0 ||
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
