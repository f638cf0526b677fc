/* remote/publish.h - how a version lands on a remote: its manifest as
 * versions/ID.json, then its tags; shared by push (remote/push_pull.c)
 * and a merge on a remote (remote/merge.c), which write a version the
 * same way. */
#ifndef CH_REMOTE_PUBLISH_H
#define CH_REMOTE_PUBLISH_H

#include "chute/store.h"

/* Refuses (usage) the first name ch_remote_tag_ok does not take. */
int ch_remote_check_tags(const char *const *tags, size_t ntags,
			 struct ch_error *err);
/* The manifest's bytes as versions/ID.json. */
int ch_remote_put_version(struct ch_store *st, const char *id,
			  const char *text, size_t len, struct ch_error *err);
/* Each of tags, then tags/latest if latest, pointing at id: only once
 * the version and every object it names are on the remote. */
int ch_remote_put_tags(struct ch_store *st, const char *id,
		       const char *const *tags, size_t ntags, int latest,
		       struct ch_error *err);

#endif
