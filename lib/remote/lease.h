/* remote/lease.h - chute gc's lease on a remote (gc/lease), which a push
 * or a merge on the remote honours before it moves its tags: the
 * protocol is man/chute-remote.7, GC AND PUSH AT THE SAME TIME. */
#ifndef CH_REMOTE_LEASE_H
#define CH_REMOTE_LEASE_H

#include <stdint.h>

#include "chute/store.h"

/* The lease lasts this long past its last write; gc writes it again
 * every LEASE_RENEW_S while it removes objects. */
enum { CH_LEASE_S = 900, CH_LEASE_RENEW_S = 60 };

#define CH_LEASE_KEY "gc/lease"

struct ch_lease {
	char line[128];	   /* what gc wrote: "EXPIRY OWNER\n" */
	int64_t written;   /* when, by gc's clock */
	int held;
};

/* Takes the lease for gc: refused (nothing written) while another gc's
 * lease has not expired. */
int ch_lease_take(struct ch_store *st, struct ch_lease *l,
		  struct ch_error *err);
/* Writes it again when CH_LEASE_RENEW_S have passed; an error when it
 * may have expired meanwhile (gc then stops before removing more). */
int ch_lease_renew(struct ch_store *st, struct ch_lease *l,
		   struct ch_error *err);
/* Removes it, when it is still this gc's. */
void ch_lease_release(struct ch_store *st, struct ch_lease *l);

/* Waits while a gc holds the lease (until it is removed or expires);
 * point, when not NULL, is called with "push:waiting-for-gc" (or the
 * name given) once, when a lease is first seen.  Sets *waited to 1 when
 * there was one. */
int ch_lease_wait(struct ch_store *st, const char *point_name,
		  void (*point)(void *arg, const char *name), void *arg,
		  int *waited, struct ch_error *err);

#endif
