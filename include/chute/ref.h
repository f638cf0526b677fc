/*
 * chute/ref.h - naming a dataset version on the command line.
 *
 * A reference is one of
 *   - a dataset folder ("data/fmnist") or its manifest ("data/fmnist/manifest.json"),
 *   - a remote reference REMOTE[@TAG|@ID]: REMOTE is a store url
 *     (see chute/store.h: file://, http://, https://, s3://), TAG a tag name,
 *     ID a 32-digit version id; without '@' the tag "latest";
 *   - NAME[@TAG|@ID], NAME a remote defined in a config file (see
 *     chute/config.h), which stands for its url.
 * A path that exists, or that holds a '/', is local even when it contains
 * '@'; otherwise NAME is looked up, and NAME@... that no config defines
 * is an error listing the names that are defined.
 */
#ifndef CH_REF_H
#define CH_REF_H

#include "chute.h"

struct ch_ref {
	char *text;   /* as given */
	char *remote; /* store url without "@...", or NULL when local */
	char *at;     /* tag or id after '@' ("latest" when none); remote only */
	char *path;   /* local: the folder or manifest path; else NULL */
};

/* 1 if text starts with a remote scheme (file://, http://, https://, s3://). */
int ch_ref_is_remote(const char *text);
int ch_ref_parse(const char *text, struct ch_ref *ref, struct ch_error *err);
/* A reference that is always remote (pull's, verify's): REMOTE[@TAG|@ID],
 * REMOTE resolved by ch_remote_arg (chute/config.h) as CH_REMOTE_READ:
 * a plain path is a folder remote (made a file:// url) that must exist,
 * names are looked up in dataset_dir's config first (may be NULL), and
 * text NULL is the default remote's tag latest.  ch_ref_parse, too,
 * refuses a folder remote that does not exist ("no remote at PATH"). */
int ch_ref_parse_remote(const char *text, const char *dataset_dir,
			struct ch_ref *ref, struct ch_error *err);
void ch_ref_release(struct ch_ref *ref);

/* The manifest a reference names.  Remote: the tag is resolved to an id
 * and versions/ID.json fetched; its id is checked against its content. */
int ch_ref_load(const struct ch_ref *ref, struct ch_manifest *m,
		struct ch_error *err);
/* Version id of the same history: for a local reference from the
 * dataset's DIR/.chute/versions/ID.json (see chute/history.h), for a remote one
 * from its versions/ID.json.  Returns 1 (err set) when it is not there. */
int ch_ref_load_version(const struct ch_ref *ref, const char *id,
			struct ch_manifest *m, struct ch_error *err);

enum { CH_CACHE_DEFAULT_GB = 10 };

/* Opens the dataset a reference names: a local one in place; a remote
 * one through the local shard cache (remote/cache.h) in cache_dir (NULL:
 * $XDG_CACHE_HOME/chute, else ~/.cache/chute), kept under cache_bytes
 * (0: CH_CACHE_DEFAULT_GB) by evicting least recently used files.  A
 * remote dataset's files are fetched and verified when first wanted, and
 * ahead of the reader once ch_dataset_plan says in which order; with no
 * order (random reads), shards are read by range requests. */
int ch_ref_open_dataset(const struct ch_ref *ref, const char *cache_dir,
			uint64_t cache_bytes, struct ch_dataset *ds,
			struct ch_error *err);

#endif
