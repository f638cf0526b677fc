/* store/testing.h - functions of store/ that only tests call
 * (tests/unit/test_aws_config.c, tests/store_tool.c): the parts of the
 * AWS files' reader, and a put from a file. */
#ifndef CH_STORE_TESTING_H
#define CH_STORE_TESTING_H

#include "chute/store.h"
#include "store/aws_config.h"

/* Parses text (NUL-terminated) read from path.  On error ini is empty
 * and err says "PATH line N: what" (kind CH_ERR_USAGE). */
int ch_ini_parse(struct ch_ini *ini, const char *path, const char *text,
		 struct ch_error *err);
/* Reads and parses path.  A file that does not exist is an empty ini
 * and *found = 0; one that cannot be read is an I/O error. */
int ch_ini_load(struct ch_ini *ini, const char *path, int *found,
		struct ch_error *err);
void ch_ini_release(struct ch_ini *ini);
/* The index of section name, or -1. */
long ch_ini_section(const struct ch_ini *ini, const char *name);
/* key's value in section (sub NULL), or the nested sub under key; NULL
 * when the section is -1 or the key is not there. */
const struct ch_ini_entry *ch_ini_get(const struct ch_ini *ini,
				      long section, const char *key,
				      const char *sub);
void ch_aws_release(struct ch_aws *a);

/* ch_store_put (chute/store.h) of the bytes of the file at path. */
int ch_store_put_file(struct ch_store *st, const char *key,
		      const char *path, struct ch_error *err);

#endif
