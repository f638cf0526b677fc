/* remote/url.h - remote urls (remote/url.c); ch_ref_is_remote itself is
 * public, in chute/remote.h. */
#ifndef CH_REMOTE_URL_H
#define CH_REMOTE_URL_H

/* url as a store takes it, "@TAG" after it reading the same for every
 * kind: a store url as it is, a folder as file:// its absolute path.
 * NULL when out of memory or the current folder cannot be told. */
char *ch_remote_store_url(const char *url);

#endif
