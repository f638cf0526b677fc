/* store/curl_shim.c - libcurl, loaded when a remote is first opened.
 *
 * Linking libcurl pulls in some 27 more libraries (OpenSSL, GSSAPI, LDAP,
 * ...), and the dynamic loader's work on them made every chute command
 * start 13 ms slower (17 ms instead of 4), remote or not.  So chute does
 * not link it: these functions, with libcurl's own names and prototypes,
 * forward to the real ones, found with dlopen/dlsym the first time a
 * remote is opened (ch_curl_load).
 *
 * The table of functions is the one piece of process-wide state in lib/:
 * written once, under pthread_once, and only read afterwards. */
#define CURL_DISABLE_TYPECHECK /* the variadic functions are defined here */
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>

#include "store/http.h"

static struct {
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	CURLcode (*easy_perform)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_perform)(CURLM *, int *);
	CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int,
				int, int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
} api;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *load_error; /* NULL when every symbol was found */

#define FIND(field, name)                                                   \
	do {                                                                \
		*(void **)&api.field = dlsym(lib, name);                    \
		if (!api.field) {                                           \
			load_error = "a libcurl without " name;             \
			return;                                             \
		}                                                           \
	} while (0)

static void load(void)
{
	void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		load_error = "libcurl.so.4 could not be loaded (install "
			     "libcurl4, or libcurl4-openssl-dev to build)";
		return;
	}
	FIND(global_init, "curl_global_init");
	FIND(global_cleanup, "curl_global_cleanup");
	FIND(easy_init, "curl_easy_init");
	FIND(easy_cleanup, "curl_easy_cleanup");
	FIND(easy_reset, "curl_easy_reset");
	FIND(easy_setopt, "curl_easy_setopt");
	FIND(easy_getinfo, "curl_easy_getinfo");
	FIND(easy_perform, "curl_easy_perform");
	FIND(easy_strerror, "curl_easy_strerror");
	FIND(slist_append, "curl_slist_append");
	FIND(slist_free_all, "curl_slist_free_all");
	FIND(multi_init, "curl_multi_init");
	FIND(multi_cleanup, "curl_multi_cleanup");
	FIND(multi_add_handle, "curl_multi_add_handle");
	FIND(multi_remove_handle, "curl_multi_remove_handle");
	FIND(multi_perform, "curl_multi_perform");
	FIND(multi_poll, "curl_multi_poll");
	FIND(multi_info_read, "curl_multi_info_read");
	/* the library stays loaded: its handles may live to the end */
}

int ch_curl_load(struct ch_error *err)
{
	pthread_once(&once, load);
	if (load_error)
		return ch_error_set(err, "cannot use http(s):// or s3:// "
				    "remotes: %s", load_error);
	return 0;
}

CURLcode curl_global_init(long flags) { return api.global_init(flags); }
void curl_global_cleanup(void) { api.global_cleanup(); }
CURL *curl_easy_init(void) { return api.easy_init(); }
void curl_easy_cleanup(CURL *h) { api.easy_cleanup(h); }
void curl_easy_reset(CURL *h) { api.easy_reset(h); }
CURLcode curl_easy_perform(CURL *h) { return api.easy_perform(h); }
const char *curl_easy_strerror(CURLcode c) { return api.easy_strerror(c); }
CURLM *curl_multi_init(void) { return api.multi_init(); }
CURLMcode curl_multi_cleanup(CURLM *m) { return api.multi_cleanup(m); }

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
	return api.slist_append(l, s);
}

void curl_slist_free_all(struct curl_slist *l) { api.slist_free_all(l); }

CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
	return api.multi_add_handle(m, h);
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
	return api.multi_remove_handle(m, h);
}

CURLMcode curl_multi_perform(CURLM *m, int *running)
{
	return api.multi_perform(m, running);
}

CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd extra[],
			  unsigned int n, int timeout_ms, int *ret)
{
	return api.multi_poll(m, extra, n, timeout_ms, ret);
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
	return api.multi_info_read(m, left);
}

/* An option's argument is a long, a pointer (data or function) or a
 * curl_off_t, by the option's number range (curl.h's CURLOPTTYPE_*). */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	va_list ap;
	CURLcode rc;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = api.easy_setopt(h, opt, va_arg(ap, long));
	else if (opt >= CURLOPTTYPE_OFF_T && opt < CURLOPTTYPE_BLOB)
		rc = api.easy_setopt(h, opt, va_arg(ap, curl_off_t));
	else
		rc = api.easy_setopt(h, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	va_list ap;
	va_start(ap, info);
	CURLcode rc = api.easy_getinfo(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}
