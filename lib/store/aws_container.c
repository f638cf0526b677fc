/* store/aws_container.c - credentials from a container's endpoint (ECS
 * tasks, EKS Pod Identity, any AWS_CONTAINER_CREDENTIALS_FULL_URI): one
 * GET, answered with JSON {AccessKeyId, SecretAccessKey, Token,
 * Expiration}.  They are fetched once, when the store is opened; a
 * command that outlives them gets 403s (ExpiredToken). */
#include <arpa/inet.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/aws_config.h"
#include "store/http.h"

enum { ANSWER_MAX = 64 * 1024, ATTEMPTS = 3 };

struct answer {
	char text[ANSWER_MAX];
	size_t len;
	int too_long;
};

static size_t on_answer(char *p, size_t size, size_t nmemb, void *arg)
{
	struct answer *a = arg;
	size_t n = size * nmemb;
	if (a->len + n >= sizeof(a->text)) {
		a->too_long = 1;
		return 0;
	}
	memcpy(a->text + a->len, p, n);
	a->len += n;
	return n;
}

/* uri's host: after "://", up to the port or path; [v6] unbracketed. */
static void uri_host(const char *uri, char *out, size_t cap)
{
	const char *h = strstr(uri, "://");
	h = h ? h + 3 : uri;
	const char *at = strpbrk(h, "@/");
	if (at && *at == '@') /* user info */
		h = at + 1;
	size_t n;
	if (*h == '[') {
		h++;
		n = strcspn(h, "]");
	} else {
		n = strcspn(h, ":/?#");
	}
	snprintf(out, cap, "%.*s", (int)n, h);
}

/* botocore's rule: a loopback address, or a host AWS serves container
 * credentials on.  The Authorization token goes nowhere else. */
static int allowed_host(const char *host)
{
	static const char *const aws[] = {
		"169.254.170.2", "169.254.170.23", "fd00:ec2::23", "localhost",
	};
	unsigned char ip[16];
	if (inet_pton(AF_INET, host, ip) == 1)
		return ip[0] == 127 || !strcmp(host, aws[0]) ||
		       !strcmp(host, aws[1]);
	if (inet_pton(AF_INET6, host, ip) == 1) {
		static const unsigned char loop6[16] = { [15] = 1 };
		unsigned char ec2[16];
		inet_pton(AF_INET6, aws[2], ec2);
		return !memcmp(ip, loop6, 16) || !memcmp(ip, ec2, 16);
	}
	return !strcmp(host, aws[3]);
}

/* One GET, retried on a failed connection or a 5xx as botocore does. */
static int get_answer(const char *uri, const char *auth, struct answer *ans,
		      struct ch_error *err)
{
	char msg[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers = NULL;
	char *line = NULL;
	CURL *h = curl_easy_init();
	int rc = -1;
	if (!h || (auth && asprintf(&line, "Authorization: %s", auth) < 0)) {
		line = NULL;
		ch_error_nomem(err);
		goto out;
	}
	if (line && !(headers = curl_slist_append(NULL, line))) {
		ch_error_nomem(err);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, uri);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 2L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, msg);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, ans);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "chute/" CH_VERSION);
	CURLcode c = CURLE_OK;
	long status = 0;
	for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
		ans->len = 0;
		ans->too_long = 0;
		status = 0;
		c = curl_easy_perform(h);
		if (c == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		if ((c == CURLE_OK && status < 500) || ans->too_long)
			break;
		if (attempt < ATTEMPTS)
			ch_store_sleep_ms(100L * attempt);
	}
	if (ans->too_long)
		ch_error_set(err, "the container endpoint %s answered more "
			     "than %d bytes", uri, ANSWER_MAX - 1);
	else if (c != CURLE_OK)
		ch_error_set(err, "cannot get container credentials from %s: "
			     "%s (after %d attempts)", uri,
			     *msg ? msg : curl_easy_strerror(c), ATTEMPTS);
	else if (status == 401 || status == 403)
		ch_error_set(err, "the container endpoint %s refused chute "
			     "(HTTP %ld): check "
			     "AWS_CONTAINER_AUTHORIZATION_TOKEN or "
			     "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
			     uri, status);
	else if (status < 200 || status >= 300)
		ch_error_set(err, "cannot get container credentials from %s: "
			     "HTTP %ld", uri, status);
	else
		rc = 0;
out:
	if (line)
		explicit_bzero(line, strlen(line));
	free(line);
	curl_slist_free_all(headers);
	if (h)
		curl_easy_cleanup(h);
	return rc;
}

static const char *json_text(json_t *o, const char *name)
{
	const char *s = json_string_value(json_object_get(o, name));
	return s && *s ? s : NULL;
}

/* "2026-12-02T10:00:00Z" (or with fractions or an offset, read as UTC
 * to the second, near enough to tell an expired answer); 0: unknown. */
static time_t expiration(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return timegm(&tm);
}

/* The answer's fields into a.  The answer's text is never quoted: it
 * holds the secret. */
static int read_answer(struct ch_aws *a, const char *uri,
		       const struct answer *ans, struct ch_error *err)
{
	json_t *o = json_loadb(ans->text, ans->len, 0, NULL);
	const char *id = json_text(o, "AccessKeyId");
	const char *secret = json_text(o, "SecretAccessKey");
	const char *token = json_text(o, "Token");
	const char *expires = json_text(o, "Expiration");
	time_t until = expiration(expires);
	int rc = 0;
	if (!json_is_object(o) || !id || !secret)
		rc = ch_error_set(err, "the container endpoint %s did not "
				  "answer JSON with AccessKeyId and "
				  "SecretAccessKey", uri);
	else if (until && until < time(NULL))
		rc = ch_error_set(err, "the container endpoint %s gave "
				  "credentials that expired at %s", uri,
				  expires);
	else if (!(a->key_id = strdup(id)) || !(a->secret = strdup(secret)) ||
		 (token && !(a->token = strdup(token))))
		rc = ch_error_nomem(err);
	json_decref(o);
	return rc;
}

int ch_aws_container_fetch(struct ch_aws *a, const char *uri,
			   const char *auth, struct ch_error *err)
{
	char host[256];
	uri_host(uri, host, sizeof(host));
	if (!allowed_host(host))
		return ch_error_usage(err, "container credentials from %s: "
				      "its host '%s' is neither a loopback "
				      "address nor 169.254.170.2, "
				      "169.254.170.23 or fd00:ec2::23",
				      uri, host);
	if (ch_curl_load(err) < 0)
		return -1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return ch_error_set(err, "cannot start libcurl");
	struct answer *ans = malloc(sizeof(*ans));
	int rc = ans ? get_answer(uri, auth, ans, err) : ch_error_nomem(err);
	if (rc == 0)
		rc = read_answer(a, uri, ans, err);
	if (ans)
		explicit_bzero(ans, sizeof(*ans));
	free(ans);
	curl_global_cleanup();
	return rc;
}
