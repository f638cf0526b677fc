/* store/aws_config.c - the AWS CLI's configuration as an S3 store needs
 * it: the INI files (~/.aws/credentials, ~/.aws/config) parsed as
 * botocore parses them, and the order in which botocore takes the
 * credentials, the region and the endpoint from the environment, those
 * files and a container's endpoint (store/aws_container.c).  Where the
 * two disagree with the AWS CLI, the CLI is right: users write these
 * files for it. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/internal.h"
#include "store/aws_config.h"
#include "store/testing.h"

enum { INI_MAX_BYTES = 1 << 20, TOKEN_MAX_BYTES = 64 * 1024 };

/* ------------------------------------------------------------------ */
/* INI files                                                           */

/* Trims blanks at both ends, in place. */
static char *strip(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static void lower(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

static int add_entry(struct ch_ini *ini, size_t section, const char *key,
		     const char *sub, const char *value, int line,
		     struct ch_error *err)
{
	struct ch_ini_entry *e = realloc(ini->entries,
					 (ini->nentries + 1) * sizeof(*e));
	if (!e)
		return ch_error_nomem(err);
	ini->entries = e;
	e += ini->nentries;
	e->section = section;
	e->line = line;
	e->key = strdup(key);
	e->sub = sub ? strdup(sub) : NULL;
	e->value = strdup(value);
	ini->nentries++; /* released with the rest even when half made */
	if (!e->key || (sub && !e->sub) || !e->value)
		return ch_error_nomem(err);
	lower(e->key);
	if (e->sub)
		lower(e->sub);
	return 0;
}

/* The section holding the line: `[NAME]`, NAME stripped. */
static int add_section(struct ch_ini *ini, char *t, int line,
		       int **lines, struct ch_error *err)
{
	char *close = strrchr(t, ']');
	if (!close)
		return ch_error_usage(err, "%s line %d: a section without "
				      "']'", ini->path, line);
	*close = '\0';
	char *name = strip(t + 1);
	if (!*name)
		return ch_error_usage(err, "%s line %d: an empty section name",
				      ini->path, line);
	long dup = ch_ini_section(ini, name);
	if (dup >= 0)
		return ch_error_usage(err, "%s line %d: section [%s] again "
				      "(first on line %d)", ini->path, line,
				      name, (*lines)[dup]);
	size_t n = ini->nsections;
	char **s = realloc(ini->sections, (n + 1) * sizeof(*s));
	if (s)
		ini->sections = s;
	int *l = realloc(*lines, (n + 1) * sizeof(*l));
	if (l)
		*lines = l;
	if (!s || !l || !(ini->sections[n] = strdup(name)))
		return ch_error_nomem(err);
	(*lines)[n] = line;
	ini->nsections++;
	return 0;
}

/* `KEY = VALUE` in the current section (the first '=' or ':' splits). */
static int add_key(struct ch_ini *ini, long section, char *t, int line,
		   struct ch_error *err)
{
	char *delim = strpbrk(t, "=:");
	if (!delim)
		return ch_error_usage(err, "%s line %d: neither '[SECTION]' "
				      "nor 'KEY = VALUE'", ini->path, line);
	if (section < 0)
		return ch_error_usage(err, "%s line %d: 'KEY = VALUE' before "
				      "any [SECTION]", ini->path, line);
	char d = *delim;
	*delim = '\0';
	char *key = strip(t);
	if (!*key)
		return ch_error_usage(err, "%s line %d: no key before '%c'",
				      ini->path, line, d);
	lower(key);
	const struct ch_ini_entry *dup = ch_ini_get(ini, section, key, NULL);
	if (dup)
		return ch_error_usage(err, "%s line %d: '%s' again in [%s] "
				      "(first on line %d)", ini->path, line,
				      key, ini->sections[section], dup->line);
	return add_entry(ini, (size_t)section, key, NULL, strip(delim + 1),
			 line, err);
}

/* An indented line under the key e: a nested `SUB = VALUE` when e's
 * value is empty (botocore's nested sections), else more of e's value. */
static int add_indented(struct ch_ini *ini, size_t e, char *t, int line,
			struct ch_error *err)
{
	struct ch_ini_entry *parent = &ini->entries[e];
	if (!*parent->value) {
		char *eq = strchr(t, '=');
		if (!eq)
			return ch_error_usage(err, "%s line %d: a line under "
					      "'%s =' without '='", ini->path,
					      line, parent->key);
		*eq = '\0';
		/* add_entry moves the entries: parent's key is copied */
		char *key = strdup(parent->key);
		if (!key)
			return ch_error_nomem(err);
		int rc = add_entry(ini, parent->section, key, strip(t),
				   strip(eq + 1), line, err);
		free(key);
		return rc;
	}
	size_t n = strlen(parent->value), m = strlen(t);
	char *v = realloc(parent->value, n + m + 2);
	if (!v)
		return ch_error_nomem(err);
	v[n] = '\n';
	memcpy(v + n + 1, t, m + 1);
	parent->value = v;
	return 0;
}

int ch_ini_parse(struct ch_ini *ini, const char *path, const char *text,
		 struct ch_error *err)
{
	memset(ini, 0, sizeof(*ini));
	int *section_lines = NULL;
	char *copy = strdup(text);
	ini->path = strdup(path);
	if (!copy || !ini->path) {
		ch_error_nomem(err);
		goto fail;
	}
	long section = -1;
	long last = -1; /* the entry an indented line continues */
	int line = 0;
	for (char *next = copy; next;) {
		char *raw = next;
		next = strchr(raw, '\n');
		if (next)
			*next++ = '\0';
		line++;
		char *t = strip(raw);
		if (!*t || *t == '#' || *t == ';')
			continue;
		int indented = raw[0] == ' ' || raw[0] == '\t';
		int rc;
		if (indented && last >= 0) {
			rc = add_indented(ini, (size_t)last, t, line, err);
		} else if (*t == '[') {
			rc = add_section(ini, t, line, &section_lines, err);
			section = (long)ini->nsections - 1;
			last = -1;
		} else {
			rc = add_key(ini, section, t, line, err);
			last = (long)ini->nentries - 1;
		}
		if (rc < 0)
			goto fail;
	}
	free(copy);
	free(section_lines);
	return 0;
fail:
	free(copy);
	free(section_lines);
	ch_ini_release(ini);
	return -1;
}

int ch_ini_load(struct ch_ini *ini, const char *path, int *found,
		struct ch_error *err)
{
	memset(ini, 0, sizeof(*ini));
	*found = 0;
	struct stat sb;
	if (stat(path, &sb) < 0 && errno == ENOENT)
		return 0;
	char *text;
	size_t len;
	if (ch_read_file(path, INI_MAX_BYTES, &text, &len, err) < 0)
		return -1;
	*found = 1;
	int rc = ch_ini_parse(ini, path, text, err);
	free(text);
	return rc;
}

void ch_ini_release(struct ch_ini *ini)
{
	for (size_t i = 0; i < ini->nsections; i++)
		free(ini->sections[i]);
	for (size_t i = 0; i < ini->nentries; i++) {
		free(ini->entries[i].key);
		free(ini->entries[i].sub);
		free(ini->entries[i].value);
	}
	free(ini->sections);
	free(ini->entries);
	free(ini->path);
	memset(ini, 0, sizeof(*ini));
}

long ch_ini_section(const struct ch_ini *ini, const char *name)
{
	for (size_t i = 0; i < ini->nsections; i++)
		if (!strcmp(ini->sections[i], name))
			return (long)i;
	return -1;
}

/* The last match: a nested key given twice takes its later value, as
 * in botocore (a top-level key cannot be given twice). */
const struct ch_ini_entry *ch_ini_get(const struct ch_ini *ini,
				      long section, const char *key,
				      const char *sub)
{
	if (section < 0)
		return NULL;
	for (size_t i = ini->nentries; i-- > 0;) {
		const struct ch_ini_entry *e = &ini->entries[i];
		if (e->section == (size_t)section && !strcmp(e->key, key) &&
		    (sub ? e->sub && !strcmp(e->sub, sub) : !e->sub))
			return e;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The profile                                                          */

/* The first of a, b that is set and not empty. */
static const char *env2(const char *a, const char *b)
{
	const char *v = getenv(a);
	if ((!v || !*v) && b)
		v = getenv(b);
	return v && *v ? v : NULL;
}

/* The two files and the profile's section in each (-1: none). */
struct aws_files {
	const char *profile;
	int named;		  /* AWS_PROFILE said so */
	struct ch_ini cred, conf; /* .path NULL: no path (no HOME) */
	char *cred_path, *conf_path;
	int cred_found, conf_found;
	long cred_sec, conf_sec;
};

/* $VAR, else $HOME/.aws/NAME; "~/" at the start is $HOME, as botocore
 * expands it.  NULL without HOME (and errno 0), or out of memory. */
static char *file_path(const char *var, const char *name)
{
	const char *v = env2(var, NULL);
	const char *home = getenv("HOME");
	char *p = NULL;
	errno = 0;
	if (v && strncmp(v, "~/", 2) != 0)
		return strdup(v);
	if (!home || !*home)
		return NULL;
	if (v && asprintf(&p, "%s/%s", home, v + 2) < 0)
		return NULL;
	if (!v && asprintf(&p, "%s/.aws/%s", home, name) < 0)
		return NULL;
	return p;
}

static long config_section(const struct ch_ini *conf, const char *profile)
{
	char name[512];
	if (!strcmp(profile, "default") && ch_ini_section(conf, "default") >= 0)
		return ch_ini_section(conf, "default");
	snprintf(name, sizeof(name), "profile %s", profile);
	return ch_ini_section(conf, name);
}

static int load_one(struct ch_ini *ini, char **path, const char *var,
		    const char *name, int *found, struct ch_error *err)
{
	*path = file_path(var, name);
	if (!*path)
		return errno == ENOMEM ? ch_error_nomem(err) : 0;
	return ch_ini_load(ini, *path, found, err);
}

/* Whether the list "a, b, c" holds name. */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ' ') && (!p[n] || p[n] == ','))
			return 1;
	return 0;
}

/* Appends ", NAME" for each profile a file holds (the config file's
 * "profile NAME" and "default" sections). */
static void list_profiles(char *out, size_t cap, const struct ch_ini *ini,
			  int config)
{
	for (size_t i = 0; i < ini->nsections; i++) {
		const char *s = ini->sections[i];
		if (config && !strncmp(s, "profile ", 8))
			s += 8;
		else if (config && strcmp(s, "default") != 0)
			continue;
		if (listed(out, s))
			continue;
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%s%s", *out ? ", " : "", s);
	}
}

static int profile_missing(const struct aws_files *f, struct ch_error *err)
{
	char known[400] = "";
	list_profiles(known, sizeof(known), &f->cred, 0);
	list_profiles(known, sizeof(known), &f->conf, 1);
	return ch_error_usage(err, "AWS profile '%s' (AWS_PROFILE) is in "
			      "neither %s nor %s (profiles there: %s)",
			      f->profile,
			      f->cred_path ? f->cred_path : "the credentials "
							    "file (HOME unset)",
			      f->conf_path ? f->conf_path : "the config file "
							    "(HOME unset)",
			      *known ? known : "none");
}

static int files_open(struct aws_files *f, struct ch_error *err)
{
	memset(f, 0, sizeof(*f));
	f->profile = env2("AWS_PROFILE", NULL);
	f->named = f->profile != NULL;
	if (!f->profile)
		f->profile = "default";
	if (load_one(&f->cred, &f->cred_path, "AWS_SHARED_CREDENTIALS_FILE",
		     "credentials", &f->cred_found, err) < 0 ||
	    load_one(&f->conf, &f->conf_path, "AWS_CONFIG_FILE", "config",
		     &f->conf_found, err) < 0)
		return -1;
	f->cred_sec = ch_ini_section(&f->cred, f->profile);
	f->conf_sec = config_section(&f->conf, f->profile);
	if (f->named && f->cred_sec < 0 && f->conf_sec < 0)
		return profile_missing(f, err);
	return 0;
}

static void files_close(struct aws_files *f)
{
	ch_ini_release(&f->cred);
	ch_ini_release(&f->conf);
	free(f->cred_path);
	free(f->conf_path);
}

/* The profile's key: the credentials file's, else the config file's
 * (botocore merges the two, the credentials file winning). */
static const struct ch_ini_entry *profile_get(const struct aws_files *f,
					      const char *key,
					      const char **path)
{
	const struct ch_ini_entry *e = ch_ini_get(&f->cred, f->cred_sec, key,
						  NULL);
	*path = f->cred_path;
	if (e && *e->value)
		return e;
	*path = f->conf_path;
	return ch_ini_get(&f->conf, f->conf_sec, key, NULL);
}

/* ------------------------------------------------------------------ */
/* Credentials                                                          */

static int set_creds(struct ch_aws *a, const char *id, const char *secret,
		     const char *token, struct ch_error *err)
{
	a->key_id = strdup(id);
	a->secret = strdup(secret);
	a->token = token && *token ? strdup(token) : NULL;
	if (!a->key_id || !a->secret || (token && *token && !a->token))
		return ch_error_nomem(err);
	return 0;
}

/* 1: found, 0: not there, -1: half there. */
static int creds_from_env(struct ch_aws *a, const char *url,
			  struct ch_error *err)
{
	const char *id = env2("AWS_ACCESS_KEY_ID", NULL);
	if (!id)
		return 0;
	const char *secret = env2("AWS_SECRET_ACCESS_KEY", NULL);
	if (!secret)
		return ch_error_usage(err, "no S3 credentials for '%s': "
				      "AWS_ACCESS_KEY_ID is set, "
				      "AWS_SECRET_ACCESS_KEY is not", url);
	if (set_creds(a, id, secret, env2("AWS_SESSION_TOKEN", NULL), err) < 0)
		return -1;
	return 1;
}

static int creds_from_section(struct ch_aws *a, const struct ch_ini *ini,
			      long sec, const char *profile,
			      struct ch_error *err)
{
	const struct ch_ini_entry *id = ch_ini_get(ini, sec,
						   "aws_access_key_id", NULL);
	if (!id || !*id->value)
		return 0;
	const struct ch_ini_entry *secret =
		ch_ini_get(ini, sec, "aws_secret_access_key", NULL);
	if (!secret || !*secret->value)
		return ch_error_usage(err, "%s line %d: profile '%s' has "
				      "aws_access_key_id but no "
				      "aws_secret_access_key", ini->path,
				      id->line, profile);
	const struct ch_ini_entry *token =
		ch_ini_get(ini, sec, "aws_session_token", NULL);
	if (set_creds(a, id->value, secret->value, token ? token->value : NULL,
		      err) < 0)
		return -1;
	if (asprintf(&a->cred_source, "profile '%s' in %s", profile,
		     ini->path) < 0) {
		a->cred_source = NULL;
		return ch_error_nomem(err);
	}
	return 1;
}

/* AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE's text, else
 * AWS_CONTAINER_AUTHORIZATION_TOKEN (malloc'd, NULL: none); the file's
 * last line end is dropped, a line break inside refused. */
static int container_auth(char **auth, struct ch_error *err)
{
	const char *file = env2("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", NULL);
	const char *v = env2("AWS_CONTAINER_AUTHORIZATION_TOKEN", NULL);
	size_t len;
	*auth = NULL;
	if (file && ch_read_file(file, TOKEN_MAX_BYTES, auth, &len, err) < 0)
		return -1;
	if (!file && v && !(*auth = strdup(v)))
		return ch_error_nomem(err);
	if (!*auth)
		return 0;
	strip(*auth);
	if (strpbrk(*auth, "\r\n"))
		return ch_error_usage(err, "the container authorization token "
				      "(%s) holds a line break",
				      file ? file : "AWS_CONTAINER_"
						    "AUTHORIZATION_TOKEN");
	return 0;
}

/* botocore takes the relative URI first, against ECS's address. */
static int creds_from_container(struct ch_aws *a, struct ch_error *err)
{
	const char *rel = env2("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", NULL);
	const char *full = env2("AWS_CONTAINER_CREDENTIALS_FULL_URI", NULL);
	if (!rel && !full)
		return 0;
	char *uri = NULL, *auth = NULL;
	int rc = -1;
	if (rel ? asprintf(&uri, "http://169.254.170.2%s", rel) < 0
		: !(uri = strdup(full))) {
		uri = NULL;
		ch_error_nomem(err);
		goto out;
	}
	if (container_auth(&auth, err) < 0 ||
	    ch_aws_container_fetch(a, uri, auth, err) < 0)
		goto out;
	if (asprintf(&a->cred_source, "the container endpoint %s", uri) < 0) {
		a->cred_source = NULL;
		ch_error_nomem(err);
		goto out;
	}
	rc = 1;
out:
	if (auth)
		explicit_bzero(auth, strlen(auth));
	free(auth);
	free(uri);
	return rc;
}

/* Why a file gave no credentials, for the message listing them. */
static const char *file_state(const struct ch_ini *ini, int found,
			      long sec)
{
	static const char *const unread[] = {
		"role_arn", "credential_process", "sso_session",
		"sso_start_url", "web_identity_token_file",
	};
	if (!found)
		return "no such file";
	if (sec < 0)
		return "no such profile";
	for (size_t i = 0; i < sizeof(unread) / sizeof(unread[0]); i++)
		if (ch_ini_get(ini, sec, unread[i], NULL))
			return "no aws_access_key_id; chute does not read "
			       "role_arn, credential_process or sso_*";
	return "no aws_access_key_id";
}

static void looked_at_file(char *out, size_t cap, const char *what,
			   const char *path, const struct aws_files *f,
			   const struct ch_ini *ini, int found, long sec)
{
	size_t n = strlen(out);
	if (!path)
		snprintf(out + n, cap - n, ", then the %s file (HOME unset)",
			 what);
	else
		snprintf(out + n, cap - n, ", then profile '%s' in %s (%s)",
			 f->profile, path, file_state(ini, found, sec));
}

static int no_creds(const struct aws_files *f, const char *url,
		    struct ch_error *err)
{
	char looked[900] = "the environment (AWS_ACCESS_KEY_ID and "
			   "AWS_SECRET_ACCESS_KEY unset)";
	looked_at_file(looked, sizeof(looked), "credentials", f->cred_path, f,
		       &f->cred, f->cred_found, f->cred_sec);
	looked_at_file(looked, sizeof(looked), "config", f->conf_path, f,
		       &f->conf, f->conf_found, f->conf_sec);
	size_t n = strlen(looked);
	snprintf(looked + n, sizeof(looked) - n,
		 ", then a container endpoint "
		 "(AWS_CONTAINER_CREDENTIALS_FULL_URI and "
		 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI unset)");
	return ch_error_set(err, "no S3 credentials for '%s': looked in %s",
			    url, looked);
}

static int find_creds(struct ch_aws *a, const struct aws_files *f,
		      const char *url, struct ch_error *err)
{
	int rc = creds_from_env(a, url, err);
	if (rc == 0)
		rc = creds_from_section(a, &f->cred, f->cred_sec, f->profile,
					err);
	if (rc == 0)
		rc = creds_from_section(a, &f->conf, f->conf_sec, f->profile,
					err);
	if (rc == 0)
		rc = creds_from_container(a, err);
	if (rc == 0)
		return no_creds(f, url, err);
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Region and endpoint                                                  */

/* The profile's `services = NAME` names a [services NAME] section of
 * the config file, whose `s3 =` holds S3's own endpoint_url. */
static int services_endpoint(const struct aws_files *f,
			     const struct ch_ini_entry **out,
			     struct ch_error *err)
{
	*out = NULL;
	const char *path;
	const struct ch_ini_entry *svc = profile_get(f, "services", &path);
	if (!svc || !*svc->value)
		return 0;
	char name[512];
	snprintf(name, sizeof(name), "services %s", svc->value);
	long sec = ch_ini_section(&f->conf, name);
	if (sec < 0)
		return ch_error_usage(err, "%s line %d: profile '%s' names "
				      "services '%s', but %s has no [%s] "
				      "section", path, svc->line, f->profile,
				      svc->value,
				      f->conf_path ? f->conf_path
						   : "the config file",
				      name);
	*out = ch_ini_get(&f->conf, sec, "s3", "endpoint_url");
	return 0;
}

static int find_place(struct ch_aws *a, const struct aws_files *f,
		      struct ch_error *err)
{
	const char *path;
	const char *region = env2("AWS_REGION", "AWS_DEFAULT_REGION");
	const struct ch_ini_entry *e =
		region ? NULL : profile_get(f, "region", &path);
	if (e && *e->value)
		region = e->value;
	a->region = strdup(region ? region : "us-east-1");

	const char *endpoint = env2("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
	if (!endpoint) {
		if (services_endpoint(f, &e, err) < 0)
			return -1;
		if (!e || !*e->value)
			e = profile_get(f, "endpoint_url", &path);
		if (e && *e->value)
			endpoint = e->value;
	}
	if (endpoint && !(a->endpoint = strdup(endpoint)))
		return ch_error_nomem(err);
	return a->region ? 0 : ch_error_nomem(err);
}

int ch_aws_load(struct ch_aws *a, const char *url, struct ch_error *err)
{
	struct aws_files f;
	memset(a, 0, sizeof(*a));
	int rc = files_open(&f, err);
	if (rc == 0)
		rc = find_creds(a, &f, url, err);
	if (rc == 0)
		rc = find_place(a, &f, err);
	files_close(&f);
	if (rc < 0)
		ch_aws_release(a);
	return rc;
}

void ch_aws_release(struct ch_aws *a)
{
	if (a->secret)
		explicit_bzero(a->secret, strlen(a->secret));
	if (a->token)
		explicit_bzero(a->token, strlen(a->token));
	free(a->key_id);
	free(a->secret);
	free(a->token);
	free(a->region);
	free(a->endpoint);
	free(a->cred_source);
	memset(a, 0, sizeof(*a));
}
