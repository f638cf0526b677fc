/* remote/names.c - a remote name looked up in the dataset folder's config,
 * the current folder's and the user's (chute/remote.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chute/remote.h"
#include "common/internal.h"
#include "remote/names.h"
#include "remote/url.h"

/* Adds dir's config when dir is a dataset folder not already read. */
static int add_dataset(struct ch_remotes *r, const char *dir,
		       struct ch_error *err)
{
	char *path;
	if (!ch_config_is_dataset(dir))
		return 0;
	if (!(path = ch_config_dataset_path(dir)))
		return ch_error_nomem(err);
	char *real = realpath(dir, NULL);
	for (size_t i = 0; real && i < r->n; i++) {
		char *seen = strdup(r->files[i].path), *cut;
		if (seen && (cut = strstr(seen, "/.chute/config")))
			*cut = '\0';
		char *seen_real = seen ? realpath(seen, NULL) : NULL;
		int same = seen_real && strcmp(seen_real, real) == 0;
		free(seen);
		free(seen_real);
		if (same) {
			free(real);
			free(path);
			return 0;
		}
	}
	free(real);
	int rc = ch_config_load(&r->files[r->n], path, err);
	free(path);
	if (rc == 0)
		r->n++;
	return rc;
}

int ch_remotes_load(struct ch_remotes *r, const char *dataset_dir,
		    struct ch_error *err)
{
	char *user;
	memset(r, 0, sizeof(*r));
	if ((dataset_dir && add_dataset(r, dataset_dir, err) < 0) ||
	    add_dataset(r, ".", err) < 0)
		goto fail;
	if (!(user = ch_config_user_path()))
		return 0; /* no home: no user file */
	int rc = ch_config_load(&r->files[r->n], user, err);
	free(user);
	if (rc < 0)
		goto fail;
	r->n++;
	return 0;
fail:
	ch_remotes_release(r);
	return -1;
}

void ch_remotes_release(struct ch_remotes *r)
{
	for (size_t i = 0; i < r->n; i++)
		ch_config_release(&r->files[i]);
	r->n = 0;
}

const char *ch_remotes_url(const struct ch_remotes *r, const char *name,
			   const struct ch_config **from)
{
	for (size_t i = 0; i < r->n; i++) {
		const char *url = ch_config_get(&r->files[i], "remote", name,
						"url");
		if (url) {
			if (from)
				*from = &r->files[i];
			return url;
		}
	}
	return NULL;
}

/* Whether any file defines a remote. */
static int ch_remotes_any(const struct ch_remotes *r)
{
	for (size_t i = 0; i < r->n; i++)
		for (size_t k = 0; k < r->files[i].n; k++)
			if (strcmp(r->files[i].v[k].section, "remote") == 0)
				return 1;
	return 0;
}

/* The names every file defines, comma separated, each once. */
static int known_names(const struct ch_remotes *r, struct ch_buf *b,
		       struct ch_error *err)
{
	for (size_t i = 0; i < r->n; i++) {
		const char **names;
		size_t n;
		if (ch_config_remote_names(&r->files[i], &names, &n, err) < 0)
			return -1;
		for (size_t k = 0; k < n; k++) {
			const struct ch_config *from = NULL;
			ch_remotes_url(r, names[k], &from);
			if (from != &r->files[i])
				continue; /* shadowed: said once */
			if ((b->len && ch_buf_append(b, ", ", 2, err) < 0) ||
			    ch_buf_append(b, names[k], strlen(names[k]),
					  err) < 0) {
				free(names);
				return -1;
			}
		}
		free(names);
	}
	return ch_buf_append(b, "", 1, err);
}

int ch_remotes_unknown(const struct ch_remotes *r, const char *name,
		       struct ch_error *err)
{
	struct ch_buf b = {0};
	if (known_names(r, &b, err) < 0) {
		ch_buf_release(&b);
		return -1;
	}
	if (b.len > 1)
		ch_error_usage(err, "no remote named '%s' (known: %s)", name,
			       (char *)b.data);
	else
		ch_error_usage(err, "no remote named '%s': none is defined "
			       "(add one with 'chute remote add NAME URL')",
			       name);
	ch_buf_release(&b);
	return -1;
}

int ch_remotes_default(const struct ch_remotes *r, const char **name,
		       const char **url, struct ch_error *err)
{
	*name = *url = NULL;
	for (size_t i = 0; i < r->n && !*name; i++)
		*name = ch_config_get(&r->files[i], "core", NULL, "remote");
	if (!*name) {
		ch_error_usage(err, "no remote given and no default remote: "
			       "add one as the default, for the dataset "
			       "folder or for all of the user's");
		return ch_error_remedy(err, "default user");
	}
	if (!(*url = ch_remotes_url(r, *name, NULL)))
		return ch_remotes_unknown(r, *name, err);
	return 0;
}

int ch_remote_may_be_name(const char *text)
{
	struct stat st;
	return !strchr(text, '/') && stat(text, &st) != 0;
}

/* The one lookup of a remote name, for commands' REMOTE arguments and for
 * references alike: 1 with *url (a store url, the caller frees) when a
 * file seen from dataset_dir defines name; 0 when none does, with err
 * saying so and listing the names that are defined, and *any whether any
 * is; -1 on other errors. */
static int lookup_name(const char *name, const char *dataset_dir,
		       char **url, int *any, struct ch_error *err)
{
	struct ch_remotes r;
	const char *found;
	int rc;
	*url = NULL;
	if (ch_remotes_load(&r, dataset_dir, err) < 0)
		return -1;
	*any = ch_remotes_any(&r);
	if ((found = ch_remotes_url(&r, name, NULL)))
		rc = (*url = ch_remote_store_url(found)) ? 1
							 : ch_error_nomem(err);
	else {
		ch_remotes_unknown(&r, name, err);
		rc = 0;
	}
	ch_remotes_release(&r);
	return rc;
}

/* The default remote's store url, seen from dataset_dir. */
static int default_url(const char *dataset_dir, char **url,
		       struct ch_error *err)
{
	struct ch_remotes r;
	const char *name, *found;
	int rc = -1;
	*url = NULL;
	if (ch_remotes_load(&r, dataset_dir, err) < 0)
		return -1;
	if (ch_remotes_default(&r, &name, &found, err) == 0)
		rc = (*url = ch_remote_store_url(found)) ? 0
							 : ch_error_nomem(err);
	ch_remotes_release(&r);
	return rc;
}

int ch_remote_is_name(const char *text, const char *dataset_dir,
		      struct ch_error *err)
{
	char *url;
	int any;
	if (!ch_remote_may_be_name(text) || ch_remote_name_check(text, NULL))
		return 0;
	int rc = lookup_name(text, dataset_dir, &url, &any, err);
	free(url);
	if (rc == 0)
		memset(err, 0, sizeof(*err)); /* not a name: no error */
	return rc;
}

int ch_remote_there(const char *url, struct ch_error *err)
{
	struct stat st;
	const char *path = url;
	if (strncmp(url, "file://", 7) == 0)
		path = url + 7;
	else if (ch_ref_is_remote(url))
		return 0; /* a server's: only a request can tell */
	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode)
			       ? 0
			       : ch_error_usage(err, "no remote at %s: not a "
						"folder", path);
	if (errno == ENOENT || errno == ENOTDIR)
		return ch_error_usage(err, "no remote at %s: no such folder",
				      path);
	return ch_error_errno(err, errno, "no remote at %s", path);
}

int ch_remote_arg(const char *text, const char *dataset_dir,
		  enum ch_remote_use use, char **url, struct ch_error *err)
{
	int any = 0, rc;
	*url = NULL;
	if (!text)
		rc = default_url(dataset_dir, url, err);
	else if (!ch_remote_may_be_name(text) ||
		 ch_remote_name_check(text, NULL) < 0)
		rc = 0; /* a url, or a path: not a name */
	else if ((rc = lookup_name(text, dataset_dir, url, &any, err)) == 0)
		rc = any ? -1 : 0; /* a typo must not make a folder */
	else
		rc = rc < 0 ? -1 : 0;
	if (rc < 0)
		return -1;
	if (!*url && !(*url = strdup(text)))
		return ch_error_nomem(err);
	if (use == CH_REMOTE_READ && ch_remote_there(*url, err) < 0) {
		free(*url);
		*url = NULL;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Names in references (remote/ref.c)                                   */

/* Where NAME ends in NAME[@AT]: at the last '@', or the end. */
static size_t name_length(const char *text)
{
	const char *at = strrchr(text, '@');
	return at ? (size_t)(at - text) : strlen(text);
}

int ch_ref_name_url(const char *text, const char *dataset_dir, char **out,
		    struct ch_error *err)
{
	size_t n = name_length(text);
	char *name = strndup(text, n), *url = NULL;
	int any, rc = 0;
	*out = NULL;
	if (!name)
		return ch_error_nomem(err);
	if (ch_remote_name_check(name, NULL) == 0)
		rc = lookup_name(name, dataset_dir, &url, &any, err);
	if (rc == 0 && text[n] == '@' && !ch_remote_may_be_name(name)) {
		char known[sizeof(err->msg)];
		snprintf(known, sizeof(known), "%s", err->msg);
		ch_error_usage(err, "%s; '%s' is a folder: a reference names a "
			       "folder remote by its url, file://PATH@TAG",
			       known, name);
	}
	free(name);
	if (rc < 0 || (rc == 0 && text[n] == '@'))
		return -1; /* NAME@AT with NAME unknown: err lists the names */
	if (rc == 0)
		return 0; /* not a name: a path */
	if (asprintf(out, "%s%s", url, text + n) < 0) {
		*out = NULL;
		rc = ch_error_nomem(err);
	}
	free(url);
	return rc < 0 ? -1 : 0;
}
