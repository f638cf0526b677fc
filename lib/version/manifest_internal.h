/* version/manifest_internal.h - what the files of the manifest code
 * (man/chute-manifest.5) share, private to version/:
 *
 *   manifest_check.c  the rules: names, shard paths, the format, totals;
 *                     and the form of a decoding error
 *   manifest_id.c     the id: the canonical form and its hash
 *   manifest_parse.c  JSON tree -> struct (decode), checking everything
 *   manifest_read.c   text -> struct: piecewise, hashing the id as it
 *                     goes, or as a whole tree
 *   manifest_write.c  struct -> JSON tree (encode) -> text, and the file
 *
 * They call each other in that order only (check-layout refuses a
 * circle): check and id call none of the others, parse calls them, read
 * calls parse, write calls them all.
 *
 * One JSON document per dataset version, through jansson.  A manifest goes
 * struct -> JSON tree (encode) -> text on write, and text -> JSON tree ->
 * struct (decode) on read.  Every check lives in decode, and write decodes
 * the tree it is about to store, so chute never writes a manifest it would
 * refuse to read.
 *
 * The id is XXH3-128 of the canonical form of the tree without "id"
 * (compact, keys sorted), computed from the parsed tree on read, so it
 * covers exactly the bytes' meaning, split file hashes included.
 */
#ifndef CH_VERSION_MANIFEST_INTERNAL_H
#define CH_VERSION_MANIFEST_INTERNAL_H

#include <limits.h>

#include <jansson.h>

#include "chute/version.h"
#include "common/internal.h"
#include "common/xxh.h"

#define FORMAT_NAME "chute-manifest"
/* Version 2: the id names the content only (THE ID in chute-manifest(5))
 * and each shard has a "seal"; a manifest with a shard that has none
 * (read from version 1) is written as version 1, under version 1's id
 * rule, so that the versions that name it as parent still find it. */
#define FORMAT_VERSION 2
#define FORMAT_VERSION_MIN 1

/* jansson's integers are signed 64-bit: the largest count a manifest holds. */
#define U64_MAX_JSON ((uint64_t)LLONG_MAX)

/* Split fractions are multiples of 1/10000, written with 15 significant
 * digits: the shortest form that reads back the same ("0.05", not
 * "0.050000000000000003"), which is also what Python writes, so that the
 * id can be recomputed without chute. */
#define FRACTION_UNITS 10000
#define REAL_FLAGS JSON_REAL_PRECISION(15)

/* Pages of text given back at a time: few calls, a small window. */
static const size_t drop_chunk = (size_t)1 << 20;

/* Where one element of the "shards" array lies in the text. */
struct span {
	size_t at, len;
};

struct dec {
	const char *origin; /* file name, for messages */
	struct ch_error *err;
	int version;	    /* format_version, once checked */
	/* Read piecewise (see read_piecewise): the shards come from these
	 * spans of text, not from the tree, each hashed into id_state. */
	const char *text;
	struct ch_file_text *file; /* the text, when given back as read */
	const struct span *spans;
	size_t nspans;
	XXH3_state_t *id_state;
	int content_only; /* version 2's id: no locations (strip_locations) */
};

/* manifest_check.c */
int manifest_bad(struct dec *d, const char *ctx, const char *key,
		 const char *what);
json_t *manifest_member(json_t *obj, const char *ctx, const char *key,
			struct dec *d);
int manifest_is_shard_path(const char *p);
int manifest_is_split_name(const char *s);
long manifest_fraction_units(double f);
int manifest_check_name(const char *name, struct dec *d);
int manifest_check_format(json_t *doc, struct dec *d);
int manifest_check_shard_totals(struct ch_manifest *m, struct dec *d);
int manifest_check_split_totals(struct ch_manifest *m, struct dec *d);

/* manifest_id.c */
int manifest_canonical_id(json_t *doc, char out[33], struct ch_error *err);
int manifest_hash_shard(json_t *o, size_t i, struct dec *d);
char *manifest_dump_side(json_t *rest, int before, int content_only);

/* manifest_parse.c */
int manifest_decode(json_t *doc, struct ch_manifest *m, struct dec *d);
int manifest_json_error(struct ch_error *err, const json_error_t *jerr,
			const char *origin, int at);

#endif
