/*
 * test_text.c - what text output shows of keys and URLs: ch_escape and
 * ch_url_redact (chute/common.h).
 */
#include <stdlib.h>
#include <string.h>

#include "chute.h"
#include "unit.h"

static int escapes_to(const char *in, size_t len, const char *want)
{
	char out[256];
	size_t n = ch_escape(out, sizeof out, in, len);
	unit_note("ch_escape gave '%s'", out);
	return CHECK_EQ_U64(n, strlen(want)) & CHECK_STR(out, want);
}

/* Printable ASCII and well-formed UTF-8 pass; controls, the backslash,
 * C1 code points, bidi controls and bytes that are not UTF-8 are written
 * C-style. */
static void escape_bytes(void)
{
	escapes_to("plain key/0001", 14, "plain key/0001");
	escapes_to("a\x1b[31mb", 7, "a\\x1b[31mb");
	escapes_to("t\tn\nr\r\\", 7, "t\\tn\\nr\\r\\\\");
	escapes_to("nul\0x", 5, "nul\\x00x");
	escapes_to("del\x7f", 4, "del\\x7f");
	escapes_to("caf\xc3\xa9 \xe2\x82\xac", 9, "caf\xc3\xa9 \xe2\x82\xac");
	escapes_to("csi\xc2\x9b", 5, "csi\\xc2\\x9b");
	escapes_to("latin\xe9", 6, "latin\\xe9");
	escapes_to("cut\xe2\x82", 5, "cut\\xe2\\x82");
	/* bidi controls reorder what follows them: escaped */
	escapes_to("a\xe2\x80\xaegpj.exe", 11, "a\\xe2\\x80\\xaegpj.exe");
	escapes_to("\xe2\x81\xa6\xe2\x81\xa9", 6,
		   "\\xe2\\x81\\xa6\\xe2\\x81\\xa9");
	escapes_to("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", 8,
		   "\\xe2\\x80\\x8e\\xe2\\x80\\x8f\\xd8\\x9c");
	/* their neighbours are text */
	escapes_to("\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xaa", 9,
		   "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xaa");
}

/* Like snprintf: the whole length is returned, the output cut and
 * terminated. */
static void escape_truncates(void)
{
	char out[5];
	CHECK_EQ_U64(ch_escape(out, sizeof out, "\x1b\x1b", 2), 8);
	CHECK_STR(out, "\\x1b");
	CHECK_EQ_U64(ch_escape(NULL, 0, "ab", 2), 2);
}

static void redacts_to(const char *in, const char *want)
{
	char *out = ch_url_redact(in);
	if (CHECK(out != NULL))
		CHECK_STR(out, want);
	free(out);
}

/* Every URL of a text loses its password, whatever the scheme; the
 * user name, host and path stay. */
static void redact_urls(void)
{
	redacts_to("http://ci:pw@host:8080/a/b", "http://ci:***@host:8080/a/b");
	redacts_to("https://u:p@ss@h/x", "https://u:***@h/x");
	redacts_to("cannot GET http://a:b@h/k: 401 and 'https://c:d@i'",
		   "cannot GET http://a:***@h/k: 401 and 'https://c:***@i'");
	redacts_to("s3://k:s@bucket/p", "s3://k:***@bucket/p");
	redacts_to("http://host:8080/x@tag", "http://host:8080/x@tag");
	redacts_to("http://ci:pw@host/x@tag", "http://ci:***@host/x@tag");
	redacts_to("no url: a:b@c", "no url: a:b@c");
	redacts_to("file:///data/ds@v2/x", "file:///data/ds@v2/x");
	redacts_to("", "");
}

/* User information of any shape: a password holding '#', '/' or '?'
 * unencoded, a lone user name (a token), an '@' with no '/' at all. */
static void redact_userinfo(void)
{
	redacts_to("http://alice:Pw#Secret@h/", "http://alice:***@h/");
	redacts_to("http://alice:Pw/Secret@h/x", "http://alice:***@h/x");
	redacts_to("http://TOKEN@h/", "http://***@h/");
	redacts_to("http://TOKEN@h", "http://***@h");
	redacts_to("http://to/ken@h/x@v1", "http://***@h/x@v1");
	redacts_to("http://alice:Pw?Secret@h/x", "http://***");
	/* shown twice, the same */
	redacts_to("http://***@h/x: 401", "http://***@h/x: 401");
	redacts_to("http://a:***@h/x", "http://a:***@h/x");
}

/* Every value of a query, keys kept; the URL ends at a blank or at the
 * quote that opened it, and a value shown already keeps what follows. */
static void redact_queries(void)
{
	redacts_to("http://h/x.tar?X-Amz-Signature=SIG",
		   "http://h/x.tar?X-Amz-Signature=***");
	redacts_to("https://h/a?X-Amz-Credential=K%2Fd&X-Amz-Signature=S",
		   "https://h/a?X-Amz-Credential=***&X-Amz-Signature=***");
	redacts_to("http://h/r?TOKEN", "http://h/r?***");
	redacts_to("http://h/r?a=&&b=c#f", "http://h/r?a=***&&b=***");
	redacts_to("http://u:p@h/r@v1?t=a@b", "http://u:***@h/r@v1?t=***");
	redacts_to("no such object: 'http://h/x?s=S'y': gone",
		   "no such object: 'http://h/x?s=***': gone");
	redacts_to("cannot GET http://h/x?s=S: 403 (http://h/y?s=T)",
		   "cannot GET http://h/x?s=*** 403 (http://h/y?s=***");
	redacts_to("cannot GET http://h/x?s=***: 403",
		   "cannot GET http://h/x?s=***: 403");
	redacts_to("file:///a?b", "file:///a?b");
	/* a folder remote has no user: file://PATH@TAG, as a hint spells it */
	redacts_to("see file://PATH@TAG", "see file://PATH@TAG");
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(escape_bytes),
		UNIT(escape_truncates),
		UNIT(redact_urls),
		UNIT(redact_userinfo),
		UNIT(redact_queries),
	};
	return unit_run(tests, UNIT_COUNT(tests));
}
