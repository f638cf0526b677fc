/* stream/split_view.c - streaming one split of a dataset.  The split's sample
 * numbers (ascending, from its split file) become positions 0..n-1 of a
 * manifest view whose shards hold only the split's samples, so that the
 * orders of stream/order.c, the cut between ranks and the cursors work
 * on the split unchanged; ids[] maps a position back. */
#include <stdlib.h>
#include <string.h>

#include "stream/plan.h"

/* The view: the manifest, with each shard counting only its split
 * samples and numbering them from their place in the split. */
static int make_view(struct ch_split_view *v, const struct ch_manifest *m,
		     struct ch_error *err)
{
	size_t ns = m->nshards;
	if (!(v->shards = calloc(ns ? ns : 1, sizeof(*v->shards))))
		return ch_error_nomem(err);
	uint64_t at = 0;
	for (size_t k = 0; k < ns; k++) {
		uint64_t end = m->shards[k].first_sample + m->shards[k].samples;
		v->shards[k] = m->shards[k];
		v->shards[k].first_sample = at;
		while (at < v->n && v->ids[at] < end)
			at++;
		v->shards[k].samples = at - v->shards[k].first_sample;
	}
	v->view = *m;
	v->view.shards = v->shards;
	v->view.samples = v->n;
	return 0;
}

int ch_split_view_init(struct ch_split_view *v, const struct ch_dataset *ds,
		       const char *name, struct ch_error *err)
{
	const struct ch_manifest *m = &ds->manifest;
	memset(v, 0, sizeof(*v));
	if (ch_split_load(ds, name, &v->ids, &v->n, err) < 0 ||
	    make_view(v, m, err) < 0) {
		ch_split_view_release(v);
		return -1;
	}
	return 0;
}

void ch_split_view_release(struct ch_split_view *v)
{
	free(v->ids);
	free(v->shards);
	memset(v, 0, sizeof(*v));
}
