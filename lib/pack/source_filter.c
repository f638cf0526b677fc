/* pack/source_filter.c - which files of a source pack takes: --exclude and
 * --include globs, hidden names, the output folder itself, and the files
 * whose names have no KEY.FIELD form (collected, so that one error names
 * them all instead of stopping at the first). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "pack/catalog.h"

void ch_source_filter_release(struct ch_source_filter *f)
{
	for (size_t i = 0; i < CH_STRAYS_SHOWN; i++)
		free(f->strays[i]);
	memset(f->strays, 0, sizeof(f->strays));
	f->nstrays = 0;
}

/* A glob without '/' matches any one component of rel (the file's name
 * or a folder on its way); a glob with '/' matches rel or a folder prefix
 * of it, '*' stopping at '/'. */
static int glob_matches(const char *glob, const char *rel)
{
	int anchored = strchr(glob, '/') != NULL;
	size_t len = strlen(rel);
	char *copy = malloc(len + 1);
	int hit = 0;
	if (!copy)
		return 0;
	memcpy(copy, rel, len + 1);
	const char *comp = copy;
	for (char *p = copy;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		hit = anchored ? fnmatch(glob, copy, FNM_PATHNAME) == 0
			       : fnmatch(glob, comp, 0) == 0;
		*p = saved;
		if (hit || saved == '\0')
			break;
		comp = p + 1;
	}
	free(copy);
	return hit;
}

static int any_match(const char *const *globs, size_t n, const char *rel)
{
	for (size_t i = 0; i < n; i++)
		if (glob_matches(globs[i], rel))
			return 1;
	return 0;
}

/* A name that begins with a dot; not "." or "..", which are no names
 * and which pack refuses (a hostile archive must not be skipped
 * quietly). */
static int has_hidden_component(const char *rel)
{
	for (const char *p = rel; *p; p++) {
		if (*p != '.' || (p != rel && p[-1] != '/'))
			continue;
		size_t n = strcspn(p, "/");
		if (!(n == 1 || (n == 2 && p[1] == '.')))
			return 1;
	}
	return 0;
}

/* The last component has a KEY.FIELD form: a dot, not first, not last. */
static int is_key_field(const char *rel)
{
	const char *base = strrchr(rel, '/');
	base = base ? base + 1 : rel;
	const char *dot = strchr(base, '.');
	return dot && dot != base && dot[1] != '\0';
}

int ch_source_filter_admit(struct ch_source_filter *f, const char *rel,
			   int is_dir, int listed, const char *origin,
			   struct ch_error *err)
{
	if (!f)
		return 1;
	if (!listed && has_hidden_component(rel))
		return 0;
	if (any_match(f->exclude, f->nexclude, rel))
		return 0;
	if (is_dir)
		return 1;
	if (f->ninclude && !any_match(f->include, f->ninclude, rel))
		return 0;
	if (is_key_field(rel))
		return 1;
	if (f->nstrays < CH_STRAYS_SHOWN &&
	    !(f->strays[f->nstrays] = strdup(origin)))
		return ch_error_nomem(err);
	f->nstrays++;
	return 0;
}

int ch_source_filter_check(const struct ch_source_filter *f,
			   struct ch_error *err)
{
	if (!f || !f->nstrays)
		return 0;
	char names[600] = "";
	size_t used = 0, shown = f->nstrays < CH_STRAYS_SHOWN ? f->nstrays
							       : CH_STRAYS_SHOWN;
	for (size_t i = 0; i < shown && used < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used,
					 "%s'%s'", i ? ", " : "", f->strays[i]);
	const char *base = strrchr(f->strays[0], '/');
	base = base ? base + 1 : f->strays[0];
	const char *colon = strrchr(base, ':'); /* archive:member */
	base = colon ? colon + 1 : base;
	ch_error_set(err,
		     "%llu file%s ha%s no KEY.FIELD name: %s%s; leave them out "
		     "with an exclude pattern (for example '%s') or name the "
		     "ones to pack with an include pattern",
		     (unsigned long long)f->nstrays, f->nstrays == 1 ? "" : "s",
		     f->nstrays == 1 ? "s" : "ve", names,
		     f->nstrays > shown ? ", ..." : "", base);
	return ch_error_remedy(err, "exclude include");
}
