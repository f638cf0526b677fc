/*
 * chute/config.h - named remotes: the config files that hold them and the
 * lookup of a name (man/chute-remote.1, "NAMED REMOTES" in
 * man/chute-remote.7).
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
#ifndef CH_CONFIG_H
#define CH_CONFIG_H

#include <stddef.h>

#include "chute.h"

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
 * pull's and a reference's, chute/ref.h) is resolved here, so that a name
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
