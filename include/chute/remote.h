/*
 * chute/remote.h - datasets in a remote (lib/remote/): what a remote
 * holds and how datasets move to and from it, the references that name a
 * version on the command line, and named remotes.  The layout of a remote
 * is man/chute-remote.7:
 *
 *   cas/XX/HASH.EXT   shard and split files by their XXH3-128 (XX: the
 *                     hash's first two digits; EXT: .chs or .ids)
 *   versions/ID.json  manifests by version id
 *   tags/NAME         a tag: one line holding a version id
 *
 * Versions share every file they have in common.  Push uploads files,
 * then the manifest, then tags, so a tag never names data that is not
 * there; pull verifies every file before it takes its final name.
 */
#ifndef CH_REMOTE_H
#define CH_REMOTE_H

#include <signal.h>

#include "chute/common.h"
#include "chute/store.h"
#include "chute/version.h"

/* "cas/ab/ab12...ef.chs" for a file of a manifest (EXT from its path). */
char *ch_remote_cas_key(struct ch_hash128 hash, const char *path);
/* 1 if name is a valid tag: 1-128 of [A-Za-z0-9._-], not starting '.'. */
int ch_remote_tag_ok(const char *name);
/* The version id that at (a tag, or a 32-digit id) names. */
int ch_remote_resolve(struct ch_store *st, const char *at, char id[33],
		      struct ch_error *err);
/* versions/ID.json, parsed and checked: its content must hash to id.
 * Returns 1 (err set) when the remote has no such version. */
int ch_remote_get_version(struct ch_store *st, const char *id,
			  struct ch_manifest *m, struct ch_buf *raw,
			  struct ch_error *err);
/* The bytes of versions/ID.json (raw, already fetched from st) parsed
 * and checked as ch_remote_get_version does; -1 (err set) when they do
 * not parse or do not hash to id. */
int ch_remote_parse_version(struct ch_store *st, const char *id,
			    const struct ch_buf *raw, struct ch_manifest *m,
			    struct ch_error *err);

/* Verifies version at (a tag or an id) of the remote st where it lies,
 * as ch_verify (chute/check.h) a folder: the manifest must hash to its id (a
 * missing tag or version is an error; a damaged manifest a problem);
 * every shard object of the part is opened by range requests (header,
 * footer, index) and streamed once through its XXH3-128, and when that
 * differs from the manifest's its blocks are read again to name the bad
 * ones; split files are fetched whole and hashed.  A problem's shard is
 * the object's url (NULL: the manifest), its message names the file as
 * the manifest does.  Nothing is written locally; o->deep is not read
 * (decoding every block means pulling the version).  Returns 0 when the
 * check ran (problems counted in res), -1 when it could not. */
int ch_remote_verify(struct ch_store *st, const char *at,
		     const struct ch_verify_opts *o,
		     struct ch_verify_result *res, struct ch_error *err);

/* Called, when not NULL, at named points of a push or a gc ("push:
 * after-objects", "gc:after-plan", ...; man/chute-remote.7): a test
 * stops a command there to run another one in between. */
typedef void (*ch_point_fn)(void *arg, const char *name);

struct ch_push_opts {
	const char *const *tags; /* besides "latest", set unless the
				  * version is a part (chute pack --part) */
	size_t ntags;
	struct ch_transfer_opts xfer;
	ch_point_fn point;	 /* at "push:after-objects",
				  * "push:after-manifest",
				  * "push:waiting-for-gc" (a gc's lease seen),
				  * "push:after-check" (before the tags) */
	void *point_arg;
};

struct ch_push_report {
	char id[33];
	char parent[33];	   /* the version's parent; "" for none */
	uint64_t samples;	   /* the version's */
	size_t shards;
	size_t files, uploaded;	   /* files of the version; those sent */
	uint64_t bytes, uploaded_bytes;
	size_t versions_uploaded;  /* the manifest and ancestors sent */
	size_t resent;		   /* files sent again after the manifest: a
				    * gc removed them meanwhile (counted in
				    * uploaded too) */
	int waited_for_gc;	   /* a gc's lease held the tags back */
	int latest;		   /* "latest" was moved: 0 for a part */
};

/* Pushes the dataset folder (or manifest) at path: its files the remote
 * lacks, its manifest and its ancestors'; then, once no gc holds its
 * lease (gc/lease), checks that the manifest and every file are on the
 * remote, sending again what a gc removed meanwhile; then the tags
 * (latest too unless the version is a part: r->latest says). */
int ch_remote_push(const char *path, struct ch_store *st,
		   const struct ch_push_opts *o, struct ch_push_report *r,
		   struct ch_error *err);

struct ch_remote_merge_opts {
	const char *remote;	 /* the store's url as given: every part
				  * must be a version on it */
	const char *name;	 /* the merged dataset's (and its shards') */
	const char *const *tags; /* besides "latest", which is always set */
	size_t ntags;
	const char *cache_dir;	 /* for the parts' manifests (NULL: as
				  * ch_ref_open_dataset) */
	volatile sig_atomic_t *cancel;
	ch_progress_fn progress; /* phase "checking" (the parts' shard
				  * indexes, read by range requests) */
	void *progress_arg;
};

struct ch_remote_merge_report {
	char id[33];
	size_t parts, shards;
	uint64_t samples, bytes;
	char replaced[33]; /* what tags/latest named before; "" for none */
	char changes[512]; /* what changed against it, ", "-separated */
};

/* Merges parts (REMOTE@TAG or REMOTE@ID references, all on o->remote,
 * which st is) where they are: checked as ch_merge checks folders, from
 * their manifests and their shards' indexes (range requests, no block),
 * the merged manifest is written as versions/ID.json and the tags set,
 * as push does; nothing is written when a check fails.  No cas/ object
 * is sent, fetched or copied: the parts' objects are the merged
 * version's.  The id is the one ch_merge gives the same parts in a new
 * folder under the same name. */
int ch_remote_merge(struct ch_store *st, const char *const *parts,
		    size_t nparts, const struct ch_remote_merge_opts *o,
		    struct ch_remote_merge_report *r, struct ch_error *err);

struct ch_pull_report {
	char id[33];
	char parent[33];	/* the version's parent; "" for none */
	uint64_t samples;	/* the version's */
	size_t shards;
	size_t files, downloaded, present, resumed;
	uint64_t bytes, downloaded_bytes;
};

/* Pulls version `at` (tag or id) into folder dir: files are fetched into
 * dir/.chute/pull/, verified, then renamed into place; the manifest is
 * written last, so an interrupted pull leaves dir's old version intact
 * and the next pull continues where this one stopped. */
int ch_remote_pull(struct ch_store *st, const char *at, const char *dir,
		   const struct ch_transfer_opts *o, struct ch_pull_report *r,
		   struct ch_error *err);

/* ------------------------------------------------------------------ */
/* What a remote holds, and collecting what no version kept needs
 * (remote/inventory.c, remote/gc.c)                                     */

struct ch_remote_tag {
	char *name;
	char id[33];
	int missing;		 /* its version's manifest is not there */
};

struct ch_remote_version {
	char id[33];
	int64_t mtime;		 /* versions/ID.json's, on the remote: when
				  * it was last pushed */
	uint64_t manifest_bytes; /* versions/ID.json's size */
	uint64_t samples, bytes; /* bytes: its shard and split files */
	size_t files;
	char **keys;		 /* the cas/ keys of its files, sorted */
	size_t nkeys;
	size_t ntags;		 /* tags that name it */
};

struct ch_remote_inventory {
	struct ch_remote_tag *tags;	    /* sorted by name */
	size_t ntags;
	struct ch_remote_version *versions; /* newest first, then by id */
	size_t nversions;
};

/* Lists tags/ and versions/ and reads every tag and manifest (each
 * manifest checked against its id: a damaged one is an error naming it).
 * Objects that are not chute's (other names) are left out. */
int ch_remote_inventory(struct ch_store *st, struct ch_remote_inventory *inv,
			struct ch_error *err);
void ch_remote_inventory_release(struct ch_remote_inventory *inv);
/* The version of inv with this id, or NULL. */
const struct ch_remote_version *
ch_remote_inventory_find(const struct ch_remote_inventory *inv,
			 const char *id);

struct ch_gc_opts {
	const char *const *keep; /* tags or ids kept besides every tag */
	size_t nkeep;
	const char *const *drop; /* tags removed, their versions no longer
				  * kept for them */
	size_t ndrop;
	int64_t grace_s;	 /* objects written less than this long ago
				  * stay, and the versions they hold */
	int64_t now;		 /* seconds since 1970; 0: the clock's */
	int yes;		 /* delete; otherwise only report */
	ch_point_fn point;	 /* with yes, at "gc:after-lease",
				  * "gc:after-plan", "gc:after-delete" */
	void *point_arg;
};

struct ch_gc_report {
	char (*kept)[33];	     /* versions kept, newest first */
	size_t nkept;
	struct ch_store_list removed; /* versions/ then cas/ objects */
	uint64_t removed_bytes;
	size_t fresh;		     /* objects no kept version names, left
				      * for the grace period */
	uint64_t fresh_bytes;
	size_t referenced;	     /* cas/ objects kept versions name */
	uint64_t referenced_bytes;
};

/* Collects the objects of the remote that no kept version needs.  Kept:
 * every version a tag names (but those of o->drop), those o->keep names,
 * and those whose manifest was written within the grace period; with
 * them, every cas/ object their manifests name.  Removed: the manifests
 * in versions/ of the other versions, and the cas/ objects no kept
 * version names, unless written within the grace period.  Nothing else
 * is touched (tags but o->drop, objects not named as chute names them).
 * A tag naming a version whose manifest is missing, or a damaged
 * manifest, stops it before anything is removed.  With o->yes, the
 * dropped tags are deleted first, then the manifests, then the cas/
 * objects, so that no tag or manifest ever names a missing object; and
 * gc holds the lease gc/lease from before it lists anything to after its
 * last removal, which a push honours before it moves its tags (another
 * gc's lease that has not expired is an error, nothing removed). */
int ch_remote_gc(struct ch_store *st, const struct ch_gc_opts *o,
		 struct ch_gc_report *r, struct ch_error *err);
void ch_gc_report_release(struct ch_gc_report *r);

/* ------------------------------------------------------------------ */
/* References: naming a dataset version on the command line           */
/* (remote/ref.c)                                                     */

/*
 * Naming a dataset version on the command line.
 *
 * A reference is one of
 *   - a dataset folder ("data/fmnist") or its manifest ("data/fmnist/manifest.json"),
 *   - a remote reference REMOTE[@TAG|@ID]: REMOTE is a store url
 *     (see chute/store.h: file://, http://, https://, s3://), TAG a tag name,
 *     ID a 32-digit version id; without '@' the tag "latest";
 *   - NAME[@TAG|@ID], NAME a remote defined in a config file (see
 *     "Named remotes" below), which stands for its url.
 * A path that exists, or that holds a '/', is local even when it contains
 * '@'; otherwise NAME is looked up, and NAME@... that no config defines
 * is an error listing the names that are defined.
 */

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
 * REMOTE resolved by ch_remote_arg (below) as CH_REMOTE_READ:
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
 * dataset's DIR/.chute/versions/ID.json (see chute/version.h), for a remote one
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

/* ------------------------------------------------------------------ */
/* Named remotes (remote/config.c, remote/names.c)                    */

/*
 * Named remotes: the config files that hold them and the lookup of a
 * name (man/chute-remote.1, "NAMED REMOTES" in man/chute-remote.7).
 *
 * A config file is git-config-like text:
 *
 *	[core]
 *		remote = origin
 *	[remote "origin"]
 *		url = s3://bucket/datasets/fmnist
 *
 * Lines are "[SECTION]", "[SECTION \"SUB\"]", "KEY = VALUE", blank, or a
 * comment starting with '#' or ';'.  Section and key names are letters,
 * digits and '-', compared without case; a subsection (a remote's name)
 * is compared exactly.  Keys chute does not know are kept as they are
 * when it rewrites the file (comments are not).  Two files are read: a
 * dataset folder's DIR/.chute/config and the user's
 * $XDG_CONFIG_HOME/chute/config (else ~/.config/chute/config).
 */

struct ch_config_entry {
	char *section; /* lowercase: "remote" */
	char *sub;     /* "origin", or NULL */
	char *key;     /* lowercase: "url" */
	char *value;
	unsigned line; /* where it was read (0: set since) */
};

struct ch_config {
	char *path; /* the file, for messages and ch_config_save */
	struct ch_config_entry *v;
	size_t n, cap;
};

/* Reads path into cfg; a file that does not exist is an empty config.
 * A line that does not parse, a remote name that is not one, a second
 * url for a remote, a folder url that is not absolute, or a url that
 * holds credentials: an error "PATH:LINE: what" (kind usage). */
int ch_config_load(struct ch_config *cfg, const char *path,
		   struct ch_error *err);
/* Writes cfg to cfg->path atomically (temporary file, rename), creating
 * its folder. */
int ch_config_save(const struct ch_config *cfg, struct ch_error *err);
void ch_config_release(struct ch_config *cfg);

/* The value of SECTION[ "SUB"].KEY, or NULL. */
const char *ch_config_get(const struct ch_config *cfg, const char *section,
			  const char *sub, const char *key);
/* Sets it (value NULL: removes it). */
int ch_config_set(struct ch_config *cfg, const char *section,
		  const char *sub, const char *key, const char *value,
		  struct ch_error *err);
/* Removes every key of SECTION "SUB". */
void ch_config_remove_section(struct ch_config *cfg, const char *section,
			      const char *sub);

/* The remote names cfg defines, in file order, in names[0..*n) (pointers
 * into cfg; the caller frees the array). */
int ch_config_remote_names(const struct ch_config *cfg, const char ***names,
			   size_t *n, struct ch_error *err);

/* 0 if name can name a remote: 1 to 64 letters, digits, '.', '_' or '-',
 * starting with a letter or digit; else -1 (usage) saying why. */
int ch_remote_name_check(const char *name, struct ch_error *err);
/* The url to keep for url: a remote url (file://, http://, https://,
 * s3://) as it is, a folder path made absolute.  Refuses (usage, with a
 * hint on where credentials go) a url with a password or a query string.
 * The caller frees *out. */
int ch_remote_url_check(const char *url, char **out, struct ch_error *err);

/* DIR/.chute/config; the user's file.  NULL: no memory (or, for the
 * user's file, neither $XDG_CONFIG_HOME nor $HOME set). */
char *ch_config_dataset_path(const char *dir);
char *ch_config_user_path(void);
/* 1 if dir is a dataset folder (it holds manifest.json or .chute/). */
int ch_config_is_dataset(const char *dir);

/* ------------------------------------------------------------------ */
/* Looking a name up                                                    */

/* The files a name is looked up in, first match wins: the dataset folder
 * the command is about (if any, and a dataset folder), the current
 * folder (if a dataset folder, and another one), the user's file. */
enum { CH_REMOTES_MAX = 3 };
struct ch_remotes {
	struct ch_config files[CH_REMOTES_MAX];
	size_t n;
};
/* dataset_dir may be NULL. */
int ch_remotes_load(struct ch_remotes *r, const char *dataset_dir,
		    struct ch_error *err);
void ch_remotes_release(struct ch_remotes *r);
/* name's url and the file that defines it (either may be NULL), or NULL
 * when no file does. */
const char *ch_remotes_url(const struct ch_remotes *r, const char *name,
			   const struct ch_config **from);
/* The default remote: the first file's [core] remote.  Returns 0 with
 * *name and *url set (pointers into r), or -1 (usage) when there is none
 * or it names a remote no file defines. */
int ch_remotes_default(const struct ch_remotes *r, const char **name,
		       const char **url, struct ch_error *err);
/* Fills err (usage) with "no remote named 'NAME'" and the names known,
 * and how to add one; returns -1. */
int ch_remotes_unknown(const struct ch_remotes *r, const char *name,
		       struct ch_error *err);

/* How a command uses the remote it names. */
enum ch_remote_use {
	CH_REMOTE_READ,	 /* it must be there (a folder that is not: error) */
	CH_REMOTE_WRITE, /* push: a folder that is not there is made */
};

/* The store url for a command's REMOTE argument (text NULL: the default
 * remote) seen from dataset_dir: a remote url as it is; an existing path,
 * or one with a '/', a folder; else a remote name looked up as above.  A
 * word no file defines is a folder while no remote is named anywhere (as
 * before names existed), an error listing the known names otherwise.
 * CH_REMOTE_READ: a folder remote that does not exist is an error (usage)
 * "no remote at PATH".  Every command's remote (push's, tags', gc's,
 * pull's and a reference's, above) is resolved here, so that a name
 * means the same to all.  The caller frees *url. */
int ch_remote_arg(const char *text, const char *dataset_dir,
		  enum ch_remote_use use, char **url, struct ch_error *err);
/* 1 when text is a remote name some file seen from dataset_dir defines
 * (and not an existing path), 0 when not, -1 on errors (a config file
 * that does not parse). */
int ch_remote_is_name(const char *text, const char *dataset_dir,
		      struct ch_error *err);
/* 0 when url (a store url or a folder path) can be a remote that is
 * there: a folder that exists, or any server's url; else -1, "no remote
 * at PATH" (usage). */
int ch_remote_there(const char *url, struct ch_error *err);

#endif
