/* remote/names.h - remote names inside references (remote/names.c for
 * remote/ref.c). */
#ifndef CH_REMOTE_NAMES_H
#define CH_REMOTE_NAMES_H

#include "chute/common.h"

/* text is NAME[@AT] with no '/': when NAME is a remote some config file
 * defines (chute/remote.h, looked up from dataset_dir, which may be
 * NULL), *out gets its url with "@AT" after it (a folder as file://PATH).
 * Otherwise *out is NULL: text is not a name, or no file defines it;
 * with "@AT" the latter is an error that lists the known names. */
int ch_ref_name_url(const char *text, const char *dataset_dir, char **out,
		    struct ch_error *err);

/* 0 when text cannot be a remote name: it holds a '/' (every url does)
 * or names an existing path, which stays a path even with an '@'. */
int ch_remote_may_be_name(const char *text);

#endif
