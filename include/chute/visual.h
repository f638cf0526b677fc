/*
 * chute/visual.h - pictures of a dataset for people to look at: the HTML
 * report of chute check (--html) and the contact sheet of a batch (chute
 * preview).  Both are deterministic: the same dataset and options give
 * the same bytes.
 */
#ifndef CHUTE_VISUAL_H
#define CHUTE_VISUAL_H

#include <stddef.h>
#include <stdint.h>

#include "chute/check.h"
#include "chute/common.h"

/* One self-contained HTML page (no script, no font, no request: its
 * images are inlined as data: URIs) of what ch_check found in the
 * dataset at path (as given to ch_check): the rules' table, the class
 * counts of each split, and each failing or warning rule's examples with
 * thumbnails of their image fields (JPEG, at most thumb pixels a side),
 * excerpts or sizes of the other fields, a placeholder naming the error
 * where a sample or an image does not read.  Appended to out. */
int ch_check_html(const char *path, const struct ch_check_report *rep,
		  uint32_t thumb, struct ch_buf *out, struct ch_error *err);

/* What a contact sheet shows. */
struct ch_sheet_opts {
	const char *image;    /* field of the pictures; NULL: the first u8
			       * or f32 image array, else the first JPEG
			       * or PNG field */
	const char *label;    /* field of the class under each key; NULL:
			       * "cls" when the batch has it */
	uint32_t columns;     /* 0: as many as rows, or one more */
};

/* The batch in frame (one CHB1 frame, man/chute-batch.5) as one PNG
 * image appended to out: a grid of tiles, each the sample's picture (an
 * array as it is, blown up by a whole factor below 64 pixels; a float
 * array stretched from its minimum to its maximum; a JPEG or PNG decoded
 * to fit 128 pixels, or a placeholder naming why it does not decode)
 * over its key and class.  python/chute/grid.py draws the same pixels
 * from a chute.Stream batch. */
int ch_sheet_png(const uint8_t *frame, size_t size,
		 const struct ch_sheet_opts *o, struct ch_buf *out,
		 struct ch_error *err);

#endif
