/*
 * test_config.c - the config file of named remotes (chute/remote.h):
 * what it reads, the file and line of what it refuses, what it writes
 * back, and the names and urls it takes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chute.h"
#include "chute/remote.h"
#include "remote/testing.h"
#include "unit.h"

static char dir[] = "/tmp/chute-test-config-XXXXXX";
static char path[256];

static void write_text(const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

/* The message of loading text, or "" when it loads. */
static const char *load_error(const char *text)
{
	static struct ch_error err;
	struct ch_config cfg;
	memset(&err, 0, sizeof err);
	write_text(text);
	if (ch_config_load(&cfg, path, &err) == 0) {
		ch_config_release(&cfg);
		return "";
	}
	CHECK_EQ_U64(err.kind, CH_ERR_USAGE); /* exit 2, not 1 */
	/* the path is the same everywhere: keep "LINE: what" */
	return strncmp(err.msg, path, strlen(path)) == 0
		       ? err.msg + strlen(path) + 1
		       : err.msg;
}

static void reads_sections_keys_and_quotes(void)
{
	struct ch_config cfg;
	struct ch_error err = {0};
	write_text("# a comment\n; another\n\n"
		   "[Core]\n  REMOTE = origin  \r\n"
		   "[remote \"origin\"]\n\turl = s3://b/p\n"
		   "[other \"we\\\"ird\"]\n\turl=/srv/x\n"
		   "[misc]\n\tnote = \"  two words \\\\ \"\n");
	if (!CHECK(ch_config_load(&cfg, path, &err) == 0)) {
		unit_note("%s", err.msg);
		return;
	}
	CHECK_STR(ch_config_get(&cfg, "core", NULL, "remote"), "origin");
	CHECK_STR(ch_config_get(&cfg, "remote", "origin", "url"), "s3://b/p");
	CHECK(ch_config_get(&cfg, "remote", "Origin", "url") == NULL);
	CHECK_STR(ch_config_get(&cfg, "other", "we\"ird", "url"), "/srv/x");
	CHECK_STR(ch_config_get(&cfg, "misc", NULL, "note"), "  two words \\ ");
	CHECK_EQ_U64(cfg.v[0].line, 5);
	ch_config_release(&cfg);
}

static void missing_file_is_empty(void)
{
	struct ch_config cfg;
	struct ch_error err = {0};
	char missing[300];
	snprintf(missing, sizeof missing, "%s/nothing/config", dir);
	CHECK(ch_config_load(&cfg, missing, &err) == 0);
	CHECK_EQ_U64(cfg.n, 0);
	ch_config_release(&cfg);
}

static void refusals_name_the_line(void)
{
	CHECK_STR(load_error("[remote \"a\"\n"),
		  "1: a section header is [NAME] or [NAME \"SUB\"]");
	CHECK_STR(load_error("\n[remote \"a\"] x\n"),
		  "2: a section header is [NAME] or [NAME \"SUB\"]");
	CHECK_STR(load_error("url = /x\n"), "1: a key before any [section]");
	CHECK_STR(load_error("[a]\n\n  just words\n"),
		  "3: not a [section] nor KEY = VALUE");
	CHECK_STR(load_error("[a]\nk = \"open\n"), "2: a quote is not closed");
	CHECK_STR(load_error("[remote]\nurl = /x\n"),
		  "1: [remote] without a name ([remote \"NAME\"])");
	CHECK_STR(load_error("[remote \"o\"]\nurl = /x\nurl = /y\n"),
		  "3: a second url for remote 'o'");
	CHECK_STR(load_error("[remote \"o\"]\nurl = rel\n"),
		  "2: 'rel': a folder remote in a config file is an absolute "
		  "path");
	CHECK(strstr(load_error("[remote \"o\"]\nurl = http://u:pw@h/\n"),
		     "2: 'http://...': a user or password") != NULL);
	CHECK(strstr(load_error("[core]\nremote = -x\n"),
		     "2: '-x' is not a remote name") != NULL);
}

/* A UTF-8 byte order mark opening the file is skipped, as git skips it;
 * lines are counted as before; one anywhere else is text. */
static void bom_is_skipped(void)
{
	struct ch_config cfg;
	struct ch_error err = {0};
	write_text("\xef\xbb\xbf[remote \"o\"]\n\turl = /x\n");
	if (!CHECK(ch_config_load(&cfg, path, &err) == 0)) {
		unit_note("%s", err.msg);
		return;
	}
	CHECK_STR(ch_config_get(&cfg, "remote", "o", "url"), "/x");
	CHECK_EQ_U64(cfg.v[0].line, 2);
	ch_config_release(&cfg);
	const char *bom = "\xef\xbb\xbf[a]\nk = 1\n";
	CHECK(ch_config_parse(&cfg, "p", bom, strlen(bom), &err) == 0);
	ch_config_release(&cfg);
	CHECK_STR(load_error("\xef\xbb\xbf\xef\xbb\xbf[a]\n"),
		  "1: not a [section] nor KEY = VALUE");
	CHECK_STR(load_error("[a]\n\xef\xbb\xbfk = 1\n"),
		  "2: not a [section] nor KEY = VALUE");
}

/* Written back: one header a section, keys in order, unknown ones kept,
 * and what is read again is what was written. */
static void saves_and_reads_back(void)
{
	struct ch_config cfg;
	struct ch_error err = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	write_text("[remote \"o\"]\n\turl = /x\n\tkeep = 1\n");
	if (!CHECK(ch_config_load(&cfg, path, &err) == 0))
		return;
	CHECK(ch_config_set(&cfg, "core", NULL, "remote", "o", &err) == 0);
	CHECK(ch_config_set(&cfg, "remote", "o", "url", "/y", &err) == 0);
	CHECK(ch_config_set(&cfg, "x", "p q", "k", " s ", &err) == 0);
	CHECK(ch_config_set(&cfg, "x", NULL, "k", "a\nb", &err) < 0);
	CHECK(ch_config_save(&cfg, &err) == 0);
	ch_config_release(&cfg);
	f = fopen(path, "r");
	if (!CHECK(f != NULL) || !CHECK(getdelim(&text, &len, '\0', f) > 0)) {
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	CHECK_STR(text, "[remote \"o\"]\n\turl = /y\n\tkeep = 1\n"
			"[core]\n\tremote = o\n"
			"[x \"p q\"]\n\tk = \" s \"\n");
	free(text);
	if (!CHECK(ch_config_load(&cfg, path, &err) == 0))
		return;
	CHECK_STR(ch_config_get(&cfg, "x", "p q", "k"), " s ");
	ch_config_remove_section(&cfg, "remote", "o");
	CHECK(ch_config_get(&cfg, "remote", "o", "url") == NULL);
	CHECK(ch_config_get(&cfg, "remote", "o", "keep") == NULL);
	CHECK_STR(ch_config_get(&cfg, "core", NULL, "remote"), "o");
	ch_config_release(&cfg);
}

static void names(void)
{
	struct ch_error err = {0};
	CHECK(ch_remote_name_check("origin", &err) == 0);
	CHECK(ch_remote_name_check("s3.backup_2-a", &err) == 0);
	CHECK(ch_remote_name_check("", &err) < 0);
	CHECK(ch_remote_name_check(".hidden", &err) < 0);
	CHECK(ch_remote_name_check("a/b", &err) < 0);
	CHECK(ch_remote_name_check("a@b", &err) < 0);
	CHECK(ch_remote_name_check("a b", &err) < 0);
}

/* The url kept for what was typed; credentials refused. */
static int url_is(const char *typed, const char *want)
{
	struct ch_error err = {0};
	char *out;
	if (ch_remote_url_check(typed, &out, &err) < 0) {
		unit_note("%s: %s", typed, err.msg);
		return CHECK(want == NULL);
	}
	int ok = want ? CHECK_STR(out, want) : CHECK(!"accepted");
	free(out);
	return ok;
}

static void urls(void)
{
	char cwd[4096], want[4200];
	if (!CHECK(getcwd(cwd, sizeof cwd) != NULL))
		return;
	url_is("s3://bucket/p", "s3://bucket/p");
	url_is("https://h:8080/x/", "https://h:8080/x/");
	url_is("file:///srv/r", "file:///srv/r");
	url_is("/a/./b/../c/", "/a/c");
	url_is("/", "/");
	url_is("/..", "/");
	snprintf(want, sizeof want, "%s/x/y", strcmp(cwd, "/") ? cwd : "");
	url_is("./x//y/.", want);
	url_is("file://relative", NULL);
	url_is("ftp://h/x", NULL);
	url_is("", NULL);
	url_is("https://user:pw@h/x", NULL);
	url_is("https://token@h/x", NULL);
	url_is("s3://b/x?X-Amz-Signature=1", NULL);
	url_is("http://h/x?token=1", NULL);
	/* user information of any shape, as messages hide it */
	url_is("http://alice:Pw#Secret@h/", NULL);
	url_is("http://alice:Pw/Secret@h/x", NULL);
	url_is("http://TOKEN@h", NULL);
	/* control bytes, no bucket, no host, an IPv6 host not closed */
	url_is("http://h/a\033b", NULL);
	url_is("http://h/a\tb", NULL);
	url_is("/srv/a\tb", NULL);
	url_is("s3://", NULL);
	url_is("s3:///prefix", NULL);
	url_is("http:///x", NULL);
	url_is("http://[::1/x", NULL);
	url_is("http://[::1]x/y", NULL);
	url_is("http://h]/y", NULL);
	url_is("http://[::1]:8080/x", "http://[::1]:8080/x");
	url_is("https://[::1]", "https://[::1]");
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(reads_sections_keys_and_quotes),
		UNIT(missing_file_is_empty),
		UNIT(refusals_name_the_line),
		UNIT(saves_and_reads_back),
		UNIT(names),
		UNIT(urls),
		UNIT(bom_is_skipped),
	};
	char cmd[128];
	int rc;
	if (!mkdtemp(dir))
		return 2;
	snprintf(path, sizeof path, "%s/config", dir);
	rc = unit_run(tests, UNIT_COUNT(tests));
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 2;
	return rc;
}
