/*
 * remote.c - chute remote: named remotes in a dataset folder's
 * .chute/config or in the user's config file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chute/remote.h"
#include "cmd.h"

static const char *const remote_usage[] = {
	"remote [-C DIR|--user] add [--default] [--force] NAME URL",
	"remote [-C DIR|--user] list [--json]",
	"remote [-C DIR|--user] remove NAME",
	"remote [-C DIR|--user] default [NAME]",
	NULL,
};

struct remote_args {
	const char *dir, *action, *name, *url;
	int user, set_default, force, json;
};

static int check_action(void *args, struct ch_error *err)
{
	struct remote_args *a = args;
	if (a->dir && a->user)
		return ch_error_usage(err, "give -C DIR or --user, not both");
	if (!a->action)
		return ch_error_usage(err, "give an action: add, list, remove or "
				      "default");
	if ((a->set_default || a->force) && strcmp(a->action, "add") != 0)
		return ch_error_usage(err, "--default and --force go with add");
	if (a->json && strcmp(a->action, "list") != 0)
		return ch_error_usage(err, "--json goes with list");
	return 0;
}

#define T struct remote_args
static const struct cmd_opt remote_opts[] = {
	CMD_OPT_TEXT('C', "directory", "DIR", T, dir,
		     "the dataset folder whose config to use (default .)"),
	CMD_OPT_FLAG('d', "default", T, set_default,
		     "add: also make NAME the default remote"),
	CMD_OPT_FLAG('f', "force", T, force,
		     "add: replace a remote of the same name"),
	CMD_HELP_OPT,
	CMD_JSON_OPT(T, "list: one JSON document on standard output"),
	CMD_QUIET_OPT,
	CMD_OPT_FLAG(0, "user", T, user,
		     "use the user's config file, for every dataset"),
	CMD_OPT_END,
};
#undef T

const struct cmd_spec cmd_remote_spec = {
	.name = "remote",
	.summary = "name remotes and choose the default one",
	.usage = remote_usage,
	.opts = remote_opts,
	.extra = "a name stands for its url in push, pull and every REF "
		 "(NAME@TAG); looked up\nin the dataset folder's .chute/config,"
		 " then the current folder's, then\n$XDG_CONFIG_HOME/chute/"
		 "config (~/.config/chute/config); credentials are\nnever kept "
		 "there; see chute-remote(7)\n",
	CMD_OPERAND3(struct remote_args, action, name, url),
	.check = check_action,
};

/* The config file an action changes: the user's, or DIR's (a dataset
 * folder). */
static int open_target(const struct remote_args *a, struct ch_config *cfg,
		       struct ch_error *err)
{
	const char *dir = a->dir ? a->dir : ".";
	char *path;
	if (!a->user && !ch_config_is_dataset(dir))
		return ch_error_usage(err, "'%s' is not a dataset folder (no "
				      "manifest.json, no .chute/): give -C "
				      "DIR, or --user for the user's config",
				      dir);
	path = a->user ? ch_config_user_path() : ch_config_dataset_path(dir);
	if (!path && a->user)
		return ch_error_usage(err, "no user config file: neither "
				      "XDG_CONFIG_HOME nor HOME is set");
	if (!path)
		return ch_error_nomem(err);
	int rc = ch_config_load(cfg, path, err);
	free(path);
	return rc;
}

/* Fails with the names cfg defines listed. */
static int unknown_in(struct ch_config *cfg, const char *name,
		      struct ch_error *err)
{
	struct ch_remotes one = {.n = 1};
	one.files[0] = *cfg;
	return ch_remotes_unknown(&one, name, err);
}

static int do_add(const struct remote_args *a, struct ch_config *cfg,
		  struct ch_error *err)
{
	const char *old;
	char *url;
	if (!a->url)
		return ch_error_usage(err, "give a name and a url: remote add "
				      "NAME URL");
	if (ch_remote_name_check(a->name, err) < 0 ||
	    ch_remote_url_check(a->url, &url, err) < 0)
		return -1;
	if ((old = ch_config_get(cfg, "remote", a->name, "url")) && !a->force) {
		ch_error_usage(err, "remote '%s' is already in '%s' (%s): give "
			       "--force to replace it, or 'chute remote remove "
			       "%s' first", a->name, cfg->path, old, a->name);
		free(url);
		return -1;
	}
	int rc = ch_config_set(cfg, "remote", a->name, "url", url, err);
	if (rc == 0 && a->set_default)
		rc = ch_config_set(cfg, "core", NULL, "remote", a->name, err);
	if (rc < 0) {
		free(url);
		return -1;
	}
	if ((rc = ch_config_save(cfg, err)) == 0)
		cmd_print("%s remote %s = %s in %s%s", old ? "replaced" : "added",
			  a->name, url, cfg->path,
			  a->set_default ? " (the default)" : "");
	if (rc == 0)
		printf("\n");
	free(url);
	return rc;
}

static int do_remove(const struct remote_args *a, struct ch_config *cfg,
		     struct ch_error *err)
{
	const char *dflt = ch_config_get(cfg, "core", NULL, "remote");
	int rc;
	if (a->url)
		return ch_error_usage(err, "too many arguments: remote remove "
				      "NAME");
	if (!ch_config_get(cfg, "remote", a->name, "url"))
		return unknown_in(cfg, a->name, err);
	ch_config_remove_section(cfg, "remote", a->name);
	if (dflt && strcmp(dflt, a->name) == 0 &&
	    ch_config_set(cfg, "core", NULL, "remote", NULL, err) < 0)
		return -1;
	if ((rc = ch_config_save(cfg, err)) == 0) {
		cmd_print("removed remote %s from %s", a->name, cfg->path);
		printf("\n");
	}
	return rc;
}

/* `default NAME`: NAME must be known where the file is read from. */
static int do_set_default(const struct remote_args *a, struct ch_config *cfg,
			  struct ch_error *err)
{
	struct ch_remotes r;
	int rc;
	if (ch_remotes_load(&r, a->user ? NULL : a->dir, err) < 0)
		return -1;
	int known = ch_config_get(cfg, "remote", a->name, "url") ||
		    (!a->user && ch_remotes_url(&r, a->name, NULL));
	rc = known ? 0 : ch_remotes_unknown(&r, a->name, err);
	ch_remotes_release(&r);
	if (rc < 0 ||
	    ch_config_set(cfg, "core", NULL, "remote", a->name, err) < 0)
		return -1;
	if ((rc = ch_config_save(cfg, err)) == 0) {
		cmd_print("default remote %s in %s", a->name, cfg->path);
		printf("\n");
	}
	return rc;
}

/* The remotes a command concerning DIR (or the current folder) sees. */
static int load_view(const struct remote_args *a, struct ch_remotes *r,
		     struct ch_error *err)
{
	if (a->dir && !ch_config_is_dataset(a->dir))
		return ch_error_usage(err, "'%s' is not a dataset folder (no "
				      "manifest.json, no .chute/)", a->dir);
	if (a->user) {
		char *path = ch_config_user_path();
		memset(r, 0, sizeof(*r));
		if (!path)
			return ch_error_usage(err, "no user config file: "
					      "neither XDG_CONFIG_HOME nor "
					      "HOME is set");
		int rc = ch_config_load(&r->files[0], path, err);
		free(path);
		r->n = rc == 0;
		return rc;
	}
	return ch_remotes_load(r, a->dir, err);
}

/* One line of text output: NAME, URL and a mark, tab separated. */
static void put_fields(const char *name, const char *url, const char *mark)
{
	cmd_put(stdout, name);
	putchar('\t');
	cmd_put(stdout, url);
	if (mark) {
		putchar('\t');
		cmd_put(stdout, mark);
	}
	putchar('\n');
}

static int do_show_default(const struct remote_args *a,
			   struct ch_error *err)
{
	struct ch_remotes r;
	const char *name, *url;
	if (load_view(a, &r, err) < 0)
		return -1;
	int rc = ch_remotes_default(&r, &name, &url, err);
	if (rc == 0)
		put_fields(name, url, NULL);
	ch_remotes_release(&r);
	return rc;
}

static json_t *remote_json(const char *name, const char *url,
			   const char *file, int is_default)
{
	json_t *o = json_object();
	json_object_set_new(o, "name", cmd_json_bytes(name, strlen(name)));
	json_object_set_new(o, "url", cmd_json_bytes(url, strlen(url)));
	json_object_set_new(o, "file", cmd_json_bytes(file, strlen(file)));
	json_object_set_new(o, "default", json_boolean(is_default));
	return o;
}

/* Every name once, as a command would find it, the default marked. */
static int list_remotes(const struct ch_remotes *r, int json,
			struct ch_error *err)
{
	struct ch_error no_default;
	const char *dflt, *dflt_url;
	json_t *list = json_array();
	if (ch_remotes_default(r, &dflt, &dflt_url, &no_default) < 0)
		dflt = NULL;
	for (size_t i = 0; i < r->n; i++) {
		const char **names;
		size_t n;
		if (ch_config_remote_names(&r->files[i], &names, &n, err) < 0) {
			json_decref(list);
			return -1;
		}
		for (size_t k = 0; k < n; k++) {
			const struct ch_config *from;
			const char *url = ch_remotes_url(r, names[k], &from);
			int is_default = dflt && strcmp(dflt, names[k]) == 0;
			if (from != &r->files[i])
				continue; /* shadowed by an earlier file */
			if (json) {
				json_array_append_new(list, remote_json(
					names[k], url, from->path, is_default));
				continue;
			}
			put_fields(names[k], url, is_default ? "default" : NULL);
		}
		free(names);
	}
	if (json) {
		json_t *doc = json_object();
		json_object_set_new(doc, "default", dflt ? cmd_json_bytes(
			dflt, strlen(dflt)) : json_null());
		json_object_set_new(doc, "remotes", list);
		cmd_json_print(doc, stdout);
		json_decref(doc);
	} else {
		json_decref(list);
	}
	return 0;
}

static int do_list(const struct remote_args *a, struct ch_error *err)
{
	struct ch_remotes r;
	if (a->name)
		return ch_error_usage(err, "too many arguments: remote list "
				      "[--json]");
	if (load_view(a, &r, err) < 0)
		return -1;
	int rc = list_remotes(&r, a->json, err);
	ch_remotes_release(&r);
	return rc;
}

/* add, remove and default NAME change one file. */
static int change_file(const struct remote_args *a, struct ch_error *err)
{
	struct ch_config cfg;
	int rc, add = strcmp(a->action, "add") == 0;
	if (!a->name)
		return ch_error_usage(err, "give a remote name: remote %s "
				      "NAME%s", a->action, add ? " URL" : "");
	if (open_target(a, &cfg, err) < 0)
		return -1;
	if (add)
		rc = do_add(a, &cfg, err);
	else if (strcmp(a->action, "remove") == 0)
		rc = do_remove(a, &cfg, err);
	else
		rc = do_set_default(a, &cfg, err);
	ch_config_release(&cfg);
	return rc;
}

static int run(const struct remote_args *a, struct ch_error *err)
{
	static const char *const actions[] = {"add", "default", "list",
					      "remove"};
	if (strcmp(a->action, "list") == 0)
		return do_list(a, err);
	if (strcmp(a->action, "default") == 0 && !a->name)
		return do_show_default(a, err);
	for (size_t i = 0; i < sizeof(actions) / sizeof(*actions); i++)
		if (strcmp(a->action, actions[i]) == 0)
			return change_file(a, err);
	const char *near = ch_closest(a->action, actions, 4);
	if (near)
		return ch_error_usage(err, "'%s' is not an action; did you "
				      "mean '%s'?", a->action, near);
	return ch_error_usage(err, "'%s' is not an action: add, list, remove "
			      "or default", a->action);
}

int cmd_remote(int argc, char **argv)
{
	struct remote_args a = {0};
	struct ch_error err = {0};
	int status = cmd_parse_args(&cmd_remote_spec, argc, argv, &a);
	if (status != 0)
		return cmd_parsed_status(status);
	return run(&a, &err) < 0 ? cmd_fail(&err) : 0;
}
