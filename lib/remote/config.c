/* remote/config.c - the config files of named remotes (chute/remote.h):
 * read, checked, changed and written back atomically. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chute/remote.h"
#include "common/internal.h"
#include "remote/testing.h"

enum { CONFIG_MAX_BYTES = 1 << 20, REMOTE_NAME_MAX = 64 };

static int same_or_both_null(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static char *lowercase(char *s)
{
	for (char *p = s; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

static struct ch_config_entry *find_entry(const struct ch_config *cfg,
					  const char *section,
					  const char *sub, const char *key)
{
	for (size_t i = 0; i < cfg->n; i++) {
		struct ch_config_entry *e = &cfg->v[i];
		if (strcmp(e->section, section) == 0 &&
		    same_or_both_null(e->sub, sub) && strcmp(e->key, key) == 0)
			return e;
	}
	return NULL;
}

static void entry_release(struct ch_config_entry *e)
{
	free(e->section);
	free(e->sub);
	free(e->key);
	free(e->value);
}

/* Appends an entry taking ownership of the strings (freed on failure). */
static int append_entry(struct ch_config *cfg, struct ch_config_entry e,
			struct ch_error *err)
{
	if (!e.section || !e.key || !e.value || (cfg->n == cfg->cap &&
	    !(cfg->v = reallocarray(cfg->v, cfg->cap = cfg->cap * 2 + 8,
				    sizeof(*cfg->v))))) {
		entry_release(&e);
		return ch_error_nomem(err);
	}
	cfg->v[cfg->n++] = e;
	return 0;
}

const char *ch_config_get(const struct ch_config *cfg, const char *section,
			  const char *sub, const char *key)
{
	const struct ch_config_entry *e = find_entry(cfg, section, sub, key);
	return e ? e->value : NULL;
}

int ch_config_set(struct ch_config *cfg, const char *section,
		  const char *sub, const char *key, const char *value,
		  struct ch_error *err)
{
	struct ch_config_entry *e = find_entry(cfg, section, sub, key);
	if (!value) {
		if (e) {
			entry_release(e);
			memmove(e, e + 1, (size_t)(cfg->v + cfg->n - e - 1) *
						  sizeof(*e));
			cfg->n--;
		}
		return 0;
	}
	if (strchr(value, '\n'))
		return ch_error_usage(err, "a config value holds no line break");
	if (e) {
		char *copy = strdup(value);
		if (!copy)
			return ch_error_nomem(err);
		free(e->value);
		e->value = copy;
		return 0;
	}
	return append_entry(cfg, (struct ch_config_entry){
		strdup(section), sub ? strdup(sub) : NULL, strdup(key),
		strdup(value), 0}, err);
}

void ch_config_remove_section(struct ch_config *cfg, const char *section,
			      const char *sub)
{
	size_t k = 0;
	for (size_t i = 0; i < cfg->n; i++) {
		if (strcmp(cfg->v[i].section, section) == 0 &&
		    same_or_both_null(cfg->v[i].sub, sub))
			entry_release(&cfg->v[i]);
		else
			cfg->v[k++] = cfg->v[i];
	}
	cfg->n = k;
}

void ch_config_release(struct ch_config *cfg)
{
	for (size_t i = 0; i < cfg->n; i++)
		entry_release(&cfg->v[i]);
	free(cfg->v);
	free(cfg->path);
	memset(cfg, 0, sizeof(*cfg));
}

int ch_config_remote_names(const struct ch_config *cfg, const char ***names,
			   size_t *n, struct ch_error *err)
{
	*n = 0;
	if (!(*names = calloc(cfg->n + 1, sizeof(**names))))
		return ch_error_nomem(err);
	for (size_t i = 0; i < cfg->n; i++)
		if (strcmp(cfg->v[i].section, "remote") == 0 &&
		    strcmp(cfg->v[i].key, "url") == 0 && cfg->v[i].sub)
			(*names)[(*n)++] = cfg->v[i].sub;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Names and urls                                                       */

int ch_remote_name_check(const char *name, struct ch_error *err)
{
	size_t n = strlen(name);
	if (n == 0 || n > REMOTE_NAME_MAX || !isalnum((unsigned char)*name))
		goto bad;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
			goto bad;
	return 0;
bad:
	return ch_error_usage(err, "'%s' is not a remote name: 1 to %d "
			      "letters, digits, '.', '_' or '-', starting "
			      "with a letter or a digit", name,
			      REMOTE_NAME_MAX);
}

/* A user or a password, whatever it holds (the rule that hides them in
 * messages, ch_url_userinfo_end), or a query: secrets, not config. */
static int refuse_credentials(const char *url, struct ch_error *err)
{
	int s3 = strncmp(url, "s3://", 5) == 0;
	const char *hint = s3 ? "give S3 credentials in the environment "
				"(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
				"AWS_SESSION_TOKEN)"
			      : "give HTTP credentials in ~/.netrc (machine "
				"HOST login USER password PASSWORD)";
	const char *host = strstr(url, "://") + 3;
	if (strncmp(url, "file://", 7) != 0 &&
	    ch_url_userinfo_end(host, host + strlen(host)))
		return ch_error_usage(err, "'%.*s...': a user or password in "
				      "a url is not kept in a config file: "
				      "%s", (int)(strstr(url, "://") + 3 - url),
				      url, hint);
	if (strchr(url, '?'))
		return ch_error_usage(err, "'%.*s?...': a query string (a "
				      "signature or a token) is not kept in a "
				      "config file: %s",
				      (int)(strchr(url, '?') - url), url, hint);
	return 0;
}

/* A byte that would reach a terminal or a file as a control. */
static int refuse_controls(const char *url, struct ch_error *err)
{
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return ch_error_usage(err, "'%s': a remote url holds no "
					      "control character (byte 0x%02x "
					      "at offset %zu)", url,
					      (unsigned char)*p,
					      (size_t)(p - url));
	return 0;
}

/* An http(s) url's host or an s3 url's bucket: there, and an IPv6
 * address closed by its ']'. */
static int check_host(const char *url, struct ch_error *err)
{
	const char *host = strstr(url, "://") + 3;
	size_t n = strcspn(host, "/#");
	const char *close = memchr(host, ']', n);
	if (n == 0 && strncmp(url, "s3://", 5) == 0)
		return ch_error_usage(err, "'%s': no bucket (s3://BUCKET/PREFIX)",
				      url);
	if (n == 0)
		return ch_error_usage(err, "'%s': no host (http://HOST/PATH)",
				      url);
	if (host[0] == '[' ? !close || (close[1] != ':' &&
					 close + 1 != host + n)
			   : memchr(host, '[', n) || close)
		return ch_error_usage(err, "'%s': not a host: an IPv6 address "
				      "is written [ADDRESS], its ']' before "
				      "the port or the path", url);
	return 0;
}

/* Drops the "." and "NAME/.." components and repeated '/' of an absolute
 * path, in place, without asking the file system (the folder may not
 * exist yet): "/a/./b/../c/" becomes "/a/c". */
static void normalize_path(char *path)
{
	char *w = path, *r = path;
	while (*r) {
		size_t n;
		while (*r == '/')
			r++;
		n = strcspn(r, "/");
		if (n == 2 && r[0] == '.' && r[1] == '.') {
			while (w > path && *--w != '/')
				;
		} else if (n && !(n == 1 && r[0] == '.')) {
			*w++ = '/';
			memmove(w, r, n);
			w += n;
		}
		r += n;
	}
	if (w == path)
		*w++ = '/';
	*w = '\0';
}

/* path made absolute against the current folder, and normalized. */
static char *absolute_path(const char *path, struct ch_error *err)
{
	char *cwd = NULL, *out = NULL;
	if (path[0] != '/' && !(cwd = getcwd(NULL, 0))) {
		ch_error_errno(err, errno, "cannot tell the current folder");
		return NULL;
	}
	if (asprintf(&out, "%s/%s", cwd ? cwd : "", path) < 0) {
		free(cwd);
		ch_error_nomem(err);
		return NULL;
	}
	free(cwd);
	normalize_path(out);
	return out;
}

int ch_remote_url_check(const char *url, char **out, struct ch_error *err)
{
	*out = NULL;
	if (!*url)
		return ch_error_usage(err, "an empty remote url");
	if (strstr(url, "://") && !ch_ref_is_remote(url))
		return ch_error_usage(err, "'%.*s': not a remote url (give "
				      "file://, http://, https://, s3:// or a "
				      "folder)", (int)(strstr(url, "://") + 3 -
						       url), url);
	/* credentials first: their message shows no more than the scheme */
	if ((ch_ref_is_remote(url) && refuse_credentials(url, err) < 0) ||
	    refuse_controls(url, err) < 0)
		return -1;
	if (ch_ref_is_remote(url) && strncmp(url, "file://", 7) != 0 &&
	    check_host(url, err) < 0)
		return -1;
	if (strncmp(url, "file://", 7) == 0 && url[7] != '/')
		return ch_error_usage(err, "'%s': a file:// url takes an "
				      "absolute path (file:///PATH)", url);
	*out = ch_ref_is_remote(url) ? strdup(url) : absolute_path(url, err);
	if (!*out && ch_ref_is_remote(url))
		return ch_error_nomem(err);
	return *out ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Reading                                                              */

struct reader {
	struct ch_config *cfg;
	unsigned line;
	char *section, *sub; /* the current section header */
	struct ch_error *err;
	char what[sizeof(((struct ch_error *)0)->msg)];
};

static int bad_line(struct reader *r, const char *what)
{
	return ch_error_usage(r->err, "%s:%u: %s", r->cfg->path, r->line,
			      what);
}

static size_t name_span(const char *s)
{
	size_t n = 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '-')
		n++;
	return n;
}

/* A quoted string from s (at its opening '"') with \" and \\ escapes,
 * into *out; *end past the closing quote.  -1: not closed. */
static int unquote(const char *s, char **out, const char **end)
{
	char *o = malloc(strlen(s) + 1), *w = o;
	if (!o)
		return -2;
	for (s++; *s && *s != '"'; s++) {
		if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
			s++;
		*w++ = *s;
	}
	*w = '\0';
	if (*s != '"') {
		free(o);
		return -1;
	}
	*out = o;
	*end = s + 1;
	return 0;
}

static int read_section(struct reader *r, char *s)
{
	const char *want = "a section header is [NAME] or [NAME \"SUB\"]";
	size_t n = name_span(s + 1), len = strlen(s);
	char *sub = NULL;
	const char *end = s + 1 + n;
	if (n == 0 || s[len - 1] != ']')
		return bad_line(r, want);
	if (*end == ' ' || *end == '\t') {
		end += strspn(end, " \t");
		int rc = *end == '"' ? unquote(end, &sub, &end) : -1;
		if (rc == -2)
			return ch_error_nomem(r->err);
		if (rc < 0)
			return bad_line(r, want);
	}
	if (end != s + len - 1) {
		free(sub);
		return bad_line(r, want);
	}
	free(r->section);
	free(r->sub);
	r->sub = sub;
	if (!(r->section = strndup(s + 1, n)))
		return ch_error_nomem(r->err);
	lowercase(r->section);
	if (strcmp(r->section, "remote") != 0)
		return 0;
	if (!sub)
		return bad_line(r, "[remote] without a name ([remote \"NAME\"])");
	if (ch_remote_name_check(sub, r->err) < 0)
		return bad_line(r, strcpy(r->what, r->err->msg));
	return 0;
}

static int read_key(struct reader *r, char *s)
{
	size_t n = name_span(s);
	const char *p = s + n + strspn(s + n, " \t");
	char *value;
	const char *end;
	if (n == 0 || !isalpha((unsigned char)*s) || *p != '=')
		return bad_line(r, "not a [section] nor KEY = VALUE");
	if (!r->section)
		return bad_line(r, "a key before any [section]");
	p += 1 + strspn(p + 1, " \t");
	if (*p == '"') {
		int rc = unquote(p, &value, &end);
		if (rc == -2)
			return ch_error_nomem(r->err);
		if (rc < 0)
			return bad_line(r, "a quote is not closed");
		if (*end) {
			free(value);
			return bad_line(r, "text after a quoted value");
		}
	} else if (!(value = strdup(p))) {
		return ch_error_nomem(r->err);
	}
	char *key = strndup(s, n);
	return append_entry(r->cfg, (struct ch_config_entry){
		strdup(r->section), r->sub ? strdup(r->sub) : NULL,
		key ? lowercase(key) : NULL, value, r->line}, r->err);
}

/* One line, its blanks trimmed. */
static int read_line(struct reader *r, char *s)
{
	size_t len;
	s += strspn(s, " \t");
	len = strlen(s);
	while (len && strchr(" \t\r", s[len - 1]))
		s[--len] = '\0';
	if (!*s || *s == '#' || *s == ';')
		return 0;
	return *s == '[' ? read_section(r, s) : read_key(r, s);
}

static int entry_error(const struct ch_config *cfg,
		       const struct ch_config_entry *e, struct ch_error *err)
{
	char what[1024];
	snprintf(what, sizeof(what), "%s", err->msg);
	return ch_error_usage(err, "%s:%u: %s", cfg->path, e->line, what);
}

/* What chute reads must make sense: names, urls, one url a remote. */
static int check_entries(const struct ch_config *cfg, struct ch_error *err)
{
	for (size_t i = 0; i < cfg->n; i++) {
		const struct ch_config_entry *e = &cfg->v[i];
		char *url;
		int remote = strcmp(e->section, "remote") == 0;
		if (strcmp(e->section, "core") == 0 &&
		    strcmp(e->key, "remote") == 0 &&
		    ch_remote_name_check(e->value, err) < 0)
			return entry_error(cfg, e, err);
		if (!remote || strcmp(e->key, "url") != 0)
			continue;
		if (find_entry(cfg, "remote", e->sub, "url") != e)
			return ch_error_usage(err, "%s:%u: a second url for "
					      "remote '%s'", cfg->path,
					      e->line, e->sub);
		if (ch_remote_url_check(e->value, &url, err) < 0)
			return entry_error(cfg, e, err);
		int relative = strcmp(url, e->value) != 0 && e->value[0] != '/';
		free(url);
		if (relative)
			return ch_error_usage(err, "%s:%u: '%s': a folder remote "
					      "in a config file is an absolute "
					      "path", cfg->path, e->line,
					      e->value);
	}
	return 0;
}

/* Parses text (len bytes, NUL-terminated at len) into cfg, whose path
 * is set; text is cut into lines in place. */
static int parse_text(struct ch_config *cfg, char *text, size_t len,
		      struct ch_error *err)
{
	struct reader r = {cfg, 0, NULL, NULL, err, ""};
	char *line, *next;
	int rc = -1;
	if (memchr(text, '\0', len)) {
		ch_error_usage(err, "%s: a NUL byte: not a config file",
			       cfg->path);
		goto out;
	}
	/* a UTF-8 byte order mark, as some editors write, is not text: git
	 * skips it too */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		text += 3;
	for (line = text; line; line = next) {
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		r.line++;
		if (read_line(&r, line) < 0)
			goto out;
	}
	rc = check_entries(cfg, err);
out:
	free(r.section);
	free(r.sub);
	return rc;
}

int ch_config_parse(struct ch_config *cfg, const char *path,
		    const char *text, size_t len, struct ch_error *err)
{
	char *copy;
	int rc = -1;
	memset(cfg, 0, sizeof(*cfg));
	if (!(cfg->path = strdup(path)) || !(copy = malloc(len + 1))) {
		ch_config_release(cfg);
		return ch_error_nomem(err);
	}
	memcpy(copy, text, len);
	copy[len] = '\0';
	rc = parse_text(cfg, copy, len, err);
	free(copy);
	if (rc < 0)
		ch_config_release(cfg);
	return rc;
}

int ch_config_load(struct ch_config *cfg, const char *path,
		   struct ch_error *err)
{
	char *text = NULL;
	size_t len;
	int rc = -1;
	memset(cfg, 0, sizeof(*cfg));
	if (!(cfg->path = strdup(path)))
		return ch_error_nomem(err);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	if (ch_read_file(path, CONFIG_MAX_BYTES, &text, &len, err) == 0)
		rc = parse_text(cfg, text, len, err);
	free(text);
	if (rc < 0)
		ch_config_release(cfg);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Writing                                                              */

/* s as a quoted string when it needs quotes to read back the same. */
static int put_value(struct ch_buf *b, const char *s, int always)
{
	size_t n = strlen(s);
	int quote = always || !n || *s == '"' || isspace((unsigned char)*s) ||
		    isspace((unsigned char)s[n - 1]);
	if (!quote)
		return ch_buf_append(b, s, n, NULL);
	if (ch_buf_append(b, "\"", 1, NULL) < 0)
		return -1;
	for (; *s; s++)
		if ((strchr("\"\\", *s) && ch_buf_append(b, "\\", 1, NULL) < 0) ||
		    ch_buf_append(b, s, 1, NULL) < 0)
			return -1;
	return ch_buf_append(b, "\"", 1, NULL);
}

static int put_section(struct ch_buf *b, const struct ch_config *cfg,
		       const struct ch_config_entry *head)
{
	if (ch_buf_append(b, "[", 1, NULL) < 0 ||
	    ch_buf_append(b, head->section, strlen(head->section), NULL) < 0 ||
	    (head->sub && (ch_buf_append(b, " ", 1, NULL) < 0 ||
			   put_value(b, head->sub, 1) < 0)) ||
	    ch_buf_append(b, "]\n", 2, NULL) < 0)
		return -1;
	for (size_t i = 0; i < cfg->n; i++) {
		const struct ch_config_entry *e = &cfg->v[i];
		if (strcmp(e->section, head->section) != 0 ||
		    !same_or_both_null(e->sub, head->sub))
			continue;
		if (ch_buf_append(b, "\t", 1, NULL) < 0 ||
		    ch_buf_append(b, e->key, strlen(e->key), NULL) < 0 ||
		    ch_buf_append(b, " = ", 3, NULL) < 0 ||
		    put_value(b, e->value, 0) < 0 ||
		    ch_buf_append(b, "\n", 1, NULL) < 0)
			return -1;
	}
	return 0;
}

/* Whether an entry before i opened the same section. */
static int seen_before(const struct ch_config *cfg, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (strcmp(cfg->v[k].section, cfg->v[i].section) == 0 &&
		    same_or_both_null(cfg->v[k].sub, cfg->v[i].sub))
			return 1;
	return 0;
}

int ch_config_save(const struct ch_config *cfg, struct ch_error *err)
{
	struct ch_buf b = {0};
	char *dir = strdup(cfg->path), *slash;
	int rc = -1;
	if (!dir)
		return ch_error_nomem(err);
	if ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		if (ch_mkdir_p(dir, err) < 0)
			goto out;
	}
	for (size_t i = 0; i < cfg->n; i++)
		if (!seen_before(cfg, i) && put_section(&b, cfg, &cfg->v[i]) < 0) {
			ch_error_nomem(err);
			goto out;
		}
	rc = ch_write_file_atomic(cfg->path, b.data ? (char *)b.data : "",
				  b.len, err);
out:
	ch_buf_release(&b);
	free(dir);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Where the files are                                                  */

char *ch_config_dataset_path(const char *dir)
{
	char *p = NULL;
	size_t n = strlen(dir);
	if (strcmp(dir, ".") == 0)
		return strdup(".chute/config");
	if (asprintf(&p, "%s%s.chute/config", dir,
		     n && dir[n - 1] == '/' ? "" : "/") < 0)
		return NULL;
	return p;
}

char *ch_config_user_path(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *p = NULL;
	int rc;
	if (xdg && *xdg)
		rc = asprintf(&p, "%s/chute/config", xdg);
	else if (home && *home)
		rc = asprintf(&p, "%s/.config/chute/config", home);
	else
		return NULL;
	return rc < 0 ? NULL : p;
}

int ch_config_is_dataset(const char *dir)
{
	char *man = ch_path_join(dir, "manifest.json");
	char *chute = ch_path_join(dir, ".chute");
	struct stat st;
	int yes = (man && stat(man, &st) == 0 && S_ISREG(st.st_mode)) ||
		  (chute && stat(chute, &st) == 0 && S_ISDIR(st.st_mode));
	free(man);
	free(chute);
	return yes;
}
