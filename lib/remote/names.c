/* remote/names.c - a remote name looked up in the dataset folder's config,
 * the current folder's and the user's (chute/config.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chute/config.h"
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

int ch_remotes_any(const struct ch_remotes *r)
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
	if (!*name)
		return ch_error_usage(err, "no remote given and no default "
				      "remote: add one with 'chute remote add "
				      "--default NAME URL' (in the dataset "
				      "folder, or with --user for all)");
	if (!(*url = ch_remotes_url(r, *name, NULL)))
		return ch_remotes_unknown(r, *name, err);
	return 0;
}

int ch_remote_may_be_name(const char *text)
{
	struct stat st;
	return !strchr(text, '/') && stat(text, &st) != 0;
}

int ch_remote_arg(const char *text, const char *dataset_dir, char **url,
		  struct ch_error *err)
{
	struct ch_remotes r;
	const char *name = NULL, *found;
	int rc = -1;
	*url = NULL;
	/* a url or a path with a '/', or an existing one: not a name */
	if (text && !ch_remote_may_be_name(text))
		return (*url = strdup(text)) ? 0 : ch_error_nomem(err);
	if (ch_remotes_load(&r, dataset_dir, err) < 0)
		return -1;
	if (!text && ch_remotes_default(&r, &name, &found, err) < 0)
		goto out;
	if (text && !(found = ch_remotes_url(&r, text, NULL))) {
		/* a folder to create, as before names, unless names are in
		 * use: then a typo must not make a folder */
		if (ch_remotes_any(&r) && ch_remote_name_check(text, err) == 0)
			ch_remotes_unknown(&r, text, err);
		else if (!(*url = strdup(text)))
			ch_error_nomem(err);
		rc = *url ? 0 : -1;
		goto out;
	}
	rc = (*url = ch_remote_store_url(found)) ? 0 : ch_error_nomem(err);
out:
	ch_remotes_release(&r);
	return rc;
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
	struct ch_remotes r;
	size_t n = name_length(text);
	char *name = strndup(text, n);
	const char *url;
	int rc = 0;
	*out = NULL;
	if (!name)
		return ch_error_nomem(err);
	if (ch_remote_name_check(name, err) < 0) {
		free(name);
		return 0; /* not a name: a path */
	}
	if (ch_remotes_load(&r, dataset_dir, err) < 0) {
		free(name);
		return -1;
	}
	if ((url = ch_remotes_url(&r, name, NULL))) {
		char *store = ch_remote_store_url(url);
		if (!store || asprintf(out, "%s%s", store, text + n) < 0) {
			*out = NULL;
			rc = ch_error_nomem(err);
		}
		free(store);
	} else if (text[n] == '@') {
		rc = ch_remotes_unknown(&r, name, err);
	}
	ch_remotes_release(&r);
	free(name);
	return rc;
}
