/* stream/encode.h - one batch's samples encoded for the sink: a frame
 * (stream/encode_frame.c, man/chute-batch.5), JSON lines or tar members
 * (also chute export's).  Private to stream/; the unit tests call the
 * encoders directly. */
#ifndef CH_STREAM_ENCODE_H
#define CH_STREAM_ENCODE_H

#include "chute/transform.h"
#include "chute/stream.h"

struct ch_transforms;

struct ch_batch {
	/* the stream's transforms (or NULL), for the errors that name a
	 * field's pipeline */
	const struct ch_transforms *tx;
	uint64_t epoch, batch;
	uint32_t flags;
	const char *cursor;
	size_t nsamples;
	struct ch_batch_sample {
		const char *key;
		size_t key_len;
		uint32_t nfields;
		const char *const *names; /* field names, name order */
		const uint64_t *sizes;
		const uint8_t *const *data;
		/* non-NULL: the data is not there yet.  ch_encode_frame_in
		 * leaves room for each field and stores the frame offset
		 * where its bytes go in dest[f], for the caller to copy them
		 * in (other encoders do not take such samples). */
		uint64_t *dest;
		/* with dest: NULL, every field waits; else only those whose
		 * late[f] is not 0 */
		const uint32_t *late;
		/* NULL: every field is bytes; else each field's type: a
		 * fixed-shape field has the same type in every sample of the
		 * batch and its bytes are one value of it */
		const struct ch_field_type *types;
	} *samples;
};
/* The frame into memory mem gives when it gives some (*frame is then
 * not in out), else into out; *frame, *size: where the frame is. */
int ch_encode_frame_in(const struct ch_batch *b, struct ch_buf *out,
		       const struct ch_frame_memory *mem, uint8_t **frame,
		       size_t *size, struct ch_error *err);
int ch_encode_jsonl(const struct ch_batch *b, struct ch_buf *out,
		    struct ch_error *err);
/* tar members KEY.FIELD (ustar, pax headers for long names), no end
 * marker: ch_tar_end appends the two zero blocks that end the archive. */
int ch_encode_tar(const struct ch_batch *b, struct ch_buf *out,
		  struct ch_error *err);
int ch_tar_end(struct ch_buf *out, struct ch_error *err);
/* The member-level tar writer, which ch_encode_tar and chute export
 * (stream/export.c) share.  ch_tar_header appends the header blocks of a
 * member of size bytes named path (len bytes): a pax header first when
 * the name or size does not fit ustar, then the ustar header.  out's
 * length must be a whole number of blocks.  The member's data follows,
 * then ch_tar_padding(size) zero bytes. */
int ch_tar_header(struct ch_buf *out, const char *path, size_t len,
		  uint64_t size, struct ch_error *err);
size_t ch_tar_padding(uint64_t size);
/* 1 if the member name would not extract to a file under the current
 * folder as the same sample: empty, absolute, "." or ".." components, or
 * a NUL (a shard is not trusted to have been written by our pack). */
int ch_tar_name_unsafe(const char *path, size_t len);

#endif
