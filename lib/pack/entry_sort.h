/* pack/entry_sort.h - an external sort of pack's file entries, so that memory
 * is bounded by --memory, not by the number of files. */
#ifndef CH_PACK_ENTRY_SORT_H
#define CH_PACK_ENTRY_SORT_H

#include "pack/catalog.h"

typedef int (*ch_entry_cmp)(const void *a, const void *b);

struct ch_runs {
	FILE **files;	     /* unnamed temporary files, one per run */
	size_t n;
	const char *tmp_dir; /* not owned */
};

/* Sorts the catalog's entries, writes them as one more run, and empties
 * the catalog (entries and strings; sources and spool stay). */
int ch_runs_spill(struct ch_runs *r, struct ch_catalog *c, ch_entry_cmp cmp,
		  struct ch_error *err);
void ch_runs_release(struct ch_runs *r);

/* All entries in cmp order: the catalog sorted in place if nothing was
 * spilled, else a merge of the runs (the catalog's own entries must have
 * been spilled as the last run). */
struct ch_sorted_entries;
int ch_sorted_open(struct ch_sorted_entries **s, struct ch_catalog *c,
		   struct ch_runs *r, ch_entry_cmp cmp, struct ch_error *err);
/* 1 and *e (valid until the next call), 0 at the end, -1 on error. */
int ch_sorted_next(struct ch_sorted_entries *s, const struct ch_entry **e,
		   struct ch_error *err);
int ch_sorted_rewind(struct ch_sorted_entries *s, struct ch_error *err);
void ch_sorted_free(struct ch_sorted_entries *s);

#endif
