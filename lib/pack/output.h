/* pack/output.h - writing a dataset folder aside and swapping it into
 * place, with its history: shared by pack/pack.c and pack/merge.c. */
#ifndef CH_PACK_OUTPUT_H
#define CH_PACK_OUTPUT_H

#include "chute/version.h"
#include "common/internal.h"

/* *exists: 1 if dir exists.  Refuses a dir that is neither a chute
 * dataset nor empty: a typo must not wipe out unrelated data. */
int ch_pack_check_replaceable(const char *dir, int *exists,
			      struct ch_error *err);
/* Claims the temporary folder beside out_dir (OUT_PARENT/.OUT.tmp-PID),
 * removing those of runs that died. */
int ch_pack_claim_temp(const char *out_dir, struct ch_temp *t,
		       struct ch_error *err);
/* Renames tmp to out, or exchanges them when out exists (the old
 * dataset is then removed). */
int ch_pack_swap_into_place(const char *tmp, const char *out, int exists,
			    struct ch_error *err);
/* The version out_dir holds, which becomes the parent (id empty: none). */
void ch_pack_read_previous(const char *out_dir, int exists,
			   struct ch_manifest *old);
/* Sets m's parent, carries out_dir's history into tmp and adds m to it,
 * writes tmp/manifest.json and the stat cache. */
int ch_pack_write_version(const char *tmp, const char *out_dir,
			  struct ch_manifest *m, struct ch_manifest *old,
			  struct ch_error *err);
/* Refuses, unless force, a version v that loses fields, labels or
 * splits of old; the message says to `verb` ("pack") with --force. */
int ch_pack_refuse_losses(const char *verb, int force, const char *out_dir,
			  const struct ch_manifest *old,
			  const struct ch_manifest *v, struct ch_error *err);
/* The name of a dataset given none: out_dir's last component (*owned,
 * the caller's to free, holds it). */
const char *ch_pack_default_name(const char *out_dir, char **owned);
/* "shards/NAME-NNNNNN.chs" (caller frees; NULL: no memory). */
char *ch_pack_shard_name(const char *name, size_t i);
/* What v changed against old, into changes ("" when old has no id). */
#define CH_CHANGES_SIZE 512
void ch_pack_changes(const struct ch_manifest *v,
		     const struct ch_manifest *old,
		     char changes[CH_CHANGES_SIZE]);

#endif
