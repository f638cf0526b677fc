/* stream/encode_tar.c - the one tar writer: WebDataset tar members
 * KEY.FIELD for `chute stream --format tar` (one batch's samples, in batch
 * order) and for `chute export` (stream/export.c, one shard's samples), so
 * that both give the same bytes for the same samples.  Batches are
 * appended one after the other into one archive, so the headers are
 * written here by hand (libarchive wants to own the whole archive);
 * ch_tar_end writes the end marker once, after the last member.
 *
 * Members are POSIX ustar: mode 0644, mtime 0, uid and gid 0, no user or
 * group name, so the same batch gives the same bytes on any machine.  A
 * name longer than ustar holds (100 bytes, or 155 + "/" + 100 split at a
 * slash) and a size past 8 GiB get a pax extended header ('x') first,
 * with path= and size= records.  Such a path is written as its bytes,
 * UTF-8 or not, with no hdrcharset record: GNU tar would warn about that
 * keyword; without it GNU tar and Python's tarfile take the bytes as they
 * are, and libarchive too, after a warning that they are not UTF-8.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stream/encode.h"

#define BLOCK 512
#define NAME_MAX_USTAR 100
#define PREFIX_MAX 155
#define SIZE_MAX_USTAR 077777777777ull /* 11 octal digits */
#define PAX_NAME "././@PaxHeader"

/* Where a member name goes in a ustar header. */
struct tar_name {
	const char *path;
	size_t len;
	size_t prefix; /* bytes of path in the prefix field (then a '/') */
	int pax;       /* 1: too long for ustar, needs a pax path record */
};

/* Writes v as `width - 1` octal digits and a NUL (the ustar form). */
static void put_octal(uint8_t *field, size_t width, uint64_t v)
{
	for (size_t i = width - 1; i-- > 0; v >>= 3)
		field[i] = (uint8_t)('0' + (v & 7));
	field[width - 1] = '\0';
}

/* Splits a long name at a slash into prefix (<= 155) and name (<= 100,
 * not empty); with no such slash the name needs pax. */
static void fit_name(struct tar_name *n)
{
	n->prefix = 0;
	n->pax = 0;
	if (n->len <= NAME_MAX_USTAR)
		return;
	for (size_t i = n->len - NAME_MAX_USTAR - 1; i < n->len - 1; i++) {
		if (i > PREFIX_MAX)
			break;
		if (n->path[i] == '/' && i > 0) {
			n->prefix = i;
			return;
		}
	}
	n->pax = 1;
}

/* One 512-byte ustar header at h (already zeroed). */
static void put_header(uint8_t *h, const struct tar_name *n, uint64_t size,
		       char type)
{
	unsigned sum = 0;

	if (n->pax)
		memcpy(h, n->path, NAME_MAX_USTAR); /* truncated, for old readers */
	else if (n->prefix) {
		memcpy(h + 345, n->path, n->prefix);
		memcpy(h, n->path + n->prefix + 1, n->len - n->prefix - 1);
	} else
		memcpy(h, n->path, n->len);
	put_octal(h + 100, 8, 0644);
	put_octal(h + 108, 8, 0);
	put_octal(h + 116, 8, 0);
	/* past 8 GiB a pax size record says the size: the field holds 0 */
	put_octal(h + 124, 12, size > SIZE_MAX_USTAR ? 0 : size);
	put_octal(h + 136, 12, 0);
	h[156] = (uint8_t)type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	put_octal(h + 329, 8, 0);
	put_octal(h + 337, 8, 0);
	/* the checksum is computed with its own field as spaces */
	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < BLOCK; i++)
		sum += h[i];
	put_octal(h + 148, 7, sum);
}

/* Appends the pax record "LEN KEY=VALUE\n", LEN counting itself. */
static int put_pax_record(struct ch_buf *out, const char *key,
			  const void *value, size_t vlen, struct ch_error *err)
{
	size_t body = 1 + strlen(key) + 1 + vlen + 1, len = body + 1;
	char num[24];
	int digits;

	/* the length's own digits change the length: settle on a fixpoint */
	while ((size_t)snprintf(num, sizeof(num), "%zu", len) + body != len)
		len = (size_t)snprintf(num, sizeof(num), "%zu", len) + body;
	digits = snprintf(num, sizeof(num), "%zu ", len);
	if (ch_buf_append(out, num, (size_t)digits, err) < 0 ||
	    ch_buf_append(out, key, strlen(key), err) < 0 ||
	    ch_buf_append(out, "=", 1, err) < 0 ||
	    ch_buf_append(out, value, vlen, err) < 0)
		return -1;
	return ch_buf_append(out, "\n", 1, err);
}

/* Pads out to a whole number of 512-byte blocks with zeros. */
static int pad_block(struct ch_buf *out, struct ch_error *err)
{
	static const uint8_t zero[BLOCK];
	size_t rest = out->len % BLOCK;

	return rest ? ch_buf_append(out, zero, BLOCK - rest, err) : 0;
}

/* Appends a zeroed header block; *at is where it starts. */
static int new_header(struct ch_buf *out, size_t *at, struct ch_error *err)
{
	if (ch_buf_reserve(out, out->len + BLOCK, err) < 0)
		return -1;
	*at = out->len;
	memset(out->data + out->len, 0, BLOCK);
	out->len += BLOCK;
	return 0;
}

/* The pax extended header that goes before a member whose name or size
 * does not fit ustar: its own header, the records, padding. */
static int put_pax(struct ch_buf *out, const struct tar_name *n,
		   uint64_t size, struct ch_error *err)
{
	static const struct tar_name pax_name = { PAX_NAME, sizeof(PAX_NAME) - 1,
						  0, 0 };
	char num[24];
	size_t at;

	if (new_header(out, &at, err) < 0)
		return -1;
	if (n->pax && put_pax_record(out, "path", n->path, n->len, err) < 0)
		return -1;
	if (size > SIZE_MAX_USTAR) {
		int len = snprintf(num, sizeof(num), "%" PRIu64, size);
		if (put_pax_record(out, "size", num, (size_t)len, err) < 0)
			return -1;
	}
	put_header(out->data + at, &pax_name, out->len - at - BLOCK, 'x');
	return pad_block(out, err);
}

int ch_tar_name_unsafe(const char *path, size_t len)
{
	size_t start = 0;

	if (memchr(path, '\0', len))
		return 1;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		size_t n = i - start;
		if (n == 0 || (n == 1 && path[start] == '.') ||
		    (n == 2 && path[start] == '.' && path[start + 1] == '.'))
			return 1;
		start = i + 1;
	}
	return 0;
}

int ch_tar_header(struct ch_buf *out, const char *path, size_t len,
		  uint64_t size, struct ch_error *err)
{
	struct tar_name n = { path, len, 0, 0 };
	size_t at;

	fit_name(&n);
	if ((n.pax || size > SIZE_MAX_USTAR) && put_pax(out, &n, size, err) < 0)
		return -1;
	if (new_header(out, &at, err) < 0)
		return -1;
	put_header(out->data + at, &n, size, '0');
	return 0;
}

size_t ch_tar_padding(uint64_t size)
{
	return (size_t)((BLOCK - size % BLOCK) % BLOCK);
}

/* One member: [pax header], ustar header, data, padding.  name is a
 * scratch buffer for "KEY.FIELD". */
static int put_member(struct ch_buf *out, struct ch_buf *name,
		      const struct ch_batch_sample *s, uint32_t f,
		      struct ch_error *err)
{
	uint64_t size = s->sizes[f];

	name->len = 0;
	if (ch_buf_append(name, s->key, s->key_len, err) < 0 ||
	    ch_buf_append(name, ".", 1, err) < 0 ||
	    ch_buf_append(name, s->names[f], strlen(s->names[f]), err) < 0)
		return -1;
	if (ch_tar_name_unsafe((const char *)name->data, name->len))
		return ch_error_set(err, "tar member name '%.*s.%s' is not a "
				    "safe relative path", (int)s->key_len,
				    s->key, s->names[f]);
	if (ch_tar_header(out, (const char *)name->data, name->len, size,
			  err) < 0)
		return -1;
	if (size && ch_buf_append(out, s->data[f], size, err) < 0)
		return -1;
	return pad_block(out, err);
}

int ch_encode_tar(const struct ch_batch *b, struct ch_buf *out,
		  struct ch_error *err)
{
	struct ch_buf name = { 0 };
	int rc = 0;

	out->len = 0;
	for (size_t i = 0; i < b->nsamples && rc == 0; i++) {
		const struct ch_batch_sample *s = &b->samples[i];
		for (uint32_t f = 0; f < s->nfields && rc == 0; f++)
			rc = put_member(out, &name, s, f, err);
	}
	ch_buf_release(&name);
	return rc;
}

int ch_tar_end(struct ch_buf *out, struct ch_error *err)
{
	static const uint8_t zero[2 * BLOCK];

	return ch_buf_append(out, zero, sizeof(zero), err);
}
