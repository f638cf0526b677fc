/* check/scan.c - one pass over a range of a shard's samples: the index
 * gives content hashes, sizes and field names (duplicates, leakage,
 * required fields, empty fields, sizes for the medians); blocks are read
 * only for fields whose type is checked, for cls, for the inputs of
 * samples with label fields, and with --deep.  A block that does not
 * read fails readable, and each rule counts the samples it then missed. */
#include <stdlib.h>
#include <string.h>

#include "check/internal.h"

struct scan {
	struct checker *c;
	const struct ch_shard *sh;
	struct ch_block_reader *r;
	struct check_decoder *d;
	uint64_t i, n; /* sample in the shard, in the dataset */
	struct ch_sample_info si;
	int64_t bad_block;	/* a block that would not read: not retried */
	int64_t last_block;	/* the block read last, to count blocks */
	uint64_t typed, blocks, hashed, bad_blocks;
	uint64_t unexamined[CH_RULE_COUNT];
	/* what the sample at hand holds, by its index entry */
	int typed_bytes, cls, image, label, input;
};

static int64_t field_index(const struct ch_manifest *m, const char *name)
{
	size_t lo = 0, hi = m->nfields;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(m->fields[mid].name, name);
		if (d == 0)
			return (int64_t)mid;
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Whether the sample's fields include name. */
static int has_field(struct scan *sc, const char *name)
{
	struct ch_field_info fi;
	for (uint32_t f = 0; f < sc->si.nfields; f++) {
		ch_shard_field(sc->sh, sc->i, f, &fi);
		if (strcmp(fi.name, name) == 0)
			return 1;
	}
	return 0;
}

/* "no cls, jpg": the required fields this sample lacks. */
static void note_missing(struct scan *sc)
{
	const struct ch_check_opts *o = sc->c->o;
	const struct ch_manifest *m = &sc->c->ds.manifest;
	char msg[512] = "no";
	size_t used = 2, k = 0;
	size_t n = o->required ? o->nrequired : m->nfields;
	for (size_t j = 0; j < n && used < sizeof(msg); j++) {
		const char *name = o->required ? o->required[j] :
						 m->fields[j].name;
		if ((!o->required && !sc->c->required[j]) ||
		    has_field(sc, name))
			continue;
		int w = snprintf(msg + used, sizeof(msg) - used, "%s %s",
				 k++ ? "," : "", name);
		used += w > 0 ? (size_t)w : 0;
	}
	struct check_hit h = { .sample = sc->n, .other = -1, .message = msg };
	check_note(sc->c, CH_RULE_REQUIRED, &h);
}

static int is_label(const struct checker *c, int64_t k, const char *name)
{
	return k >= 0 ? c->is_label[k] : strcmp(name, "cls") == 0;
}

/* What kinds of field the sample holds, for the rules that miss it when
 * its block does not read. */
static void note_kind(struct scan *sc, const struct ch_field_info *fi,
		      int64_t k)
{
	enum check_type type = check_type_of(fi->name);
	int label = is_label(sc->c, k, fi->name);
	sc->typed_bytes |= type != TYPE_NONE && fi->size > 0;
	sc->cls |= strcmp(fi->name, "cls") == 0;
	sc->image |= (type == TYPE_JPEG || type == TYPE_PNG) && fi->size > 0;
	sc->label |= label;
	sc->input |= !label;
}

/* The sample's record; one with label fields gets the hash of its inputs
 * once its bytes are read (until then it is absent). */
static int record(struct scan *sc)
{
	struct checker *c = sc->c;
	uint64_t split = c->split_of ? c->split_of[sc->n] : SPLIT_NONE;
	if (!c->recs)
		return 0;
	if (!sc->input)
		split = SPLIT_NOINPUT;
	else if (sc->label)
		split = SPLIT_ABSENT;
	c->recs[sc->n] = (struct check_rec){ sc->si.hash, sc->si.size,
					     split << 56 | sc->n, 0 };
	return split == SPLIT_ABSENT;
}

/* The index's part: one record, sizes, required and empty fields.
 * Returns whether the sample's bytes are needed. */
static int scan_index(struct scan *sc)
{
	struct checker *c = sc->c;
	const struct ch_manifest *m = &c->ds.manifest;
	struct ch_field_info fi;
	size_t found = 0;
	int need = c->o->deep && c->run[CH_RULE_CORRUPTION];
	sc->typed_bytes = sc->cls = sc->image = sc->label = sc->input = 0;
	for (uint32_t f = 0; f < sc->si.nfields; f++) {
		ch_shard_field(sc->sh, sc->i, f, &fi);
		int64_t k = field_index(m, fi.name);
		note_kind(sc, &fi, k);
		if (k >= 0 && c->sizes)
			c->sizes[k][sc->n] = fi.size;
		if (k >= 0 && c->required && c->required[k])
			found++;
		if (fi.size == 0 && c->run[CH_RULE_EMPTY]) {
			struct check_hit h = { .sample = sc->n, .other = -1,
					       .field = fi.name };
			check_note(c, CH_RULE_EMPTY, &h);
		}
		if (c->labels_only ? strcmp(fi.name, "cls") == 0 :
				     check_type_of(fi.name) != TYPE_NONE)
			need = 1;
	}
	if (c->run[CH_RULE_REQUIRED] && found < c->nreq)
		note_missing(sc);
	return record(sc) | need;
}

/* The sample's bytes did not read: the rules that needed them count it. */
static void missed(struct scan *sc)
{
	struct checker *c = sc->c;
	int deep = c->o->deep && c->run[CH_RULE_CORRUPTION];
	sc->unexamined[CH_RULE_TYPES] += sc->typed_bytes && !c->labels_only;
	sc->unexamined[CH_RULE_LABELS] += sc->cls && c->cls;
	sc->unexamined[CH_RULE_NEAR_DUPLICATES] += sc->image && c->phash;
	sc->unexamined[CH_RULE_CORRUPTION] += deep;
}

/* The hashes of the sample's inputs and of its label fields. */
static void hash_inputs(struct scan *sc, const uint8_t *data)
{
	struct checker *c = sc->c;
	struct check_rec *rec = &c->recs[sc->n];
	struct ch_content_hash in, label;
	struct ch_field_info fi;
	uint64_t size = 0;
	ch_content_hash_init(&in);
	ch_content_hash_init(&label);
	for (uint32_t f = 0; f < sc->si.nfields; f++) {
		ch_shard_field(sc->sh, sc->i, f, &fi);
		int is = is_label(c, field_index(&c->ds.manifest, fi.name),
				  fi.name);
		ch_content_hash_field(is ? &label : &in, fi.name,
				      data + fi.offset, fi.size);
		size += is ? 0 : fi.size;
	}
	uint64_t split = c->split_of ? c->split_of[sc->n] : SPLIT_NONE;
	uint64_t l = ch_content_hash_final(&label);
	*rec = (struct check_rec){ ch_content_hash_final(&in), size,
				   split << 56 | sc->n, l ? l : 1 };
}

/* The sample's bytes, NULL when its block cannot be read: readable
 * fails, once per block, naming the shard, the block and its offset. */
static const uint8_t *read_sample(struct scan *sc)
{
	struct checker *c = sc->c;
	struct ch_error err;
	const uint8_t *data;
	if ((int64_t)sc->si.block == sc->bad_block)
		return NULL;
	if (ch_sample_read(sc->r, sc->sh, sc->i, &data, &err) == 0) {
		if ((int64_t)sc->si.block != sc->last_block)
			sc->blocks++;
		sc->last_block = sc->si.block;
		return data;
	}
	sc->bad_block = sc->si.block;
	sc->bad_blocks++;
	struct check_hit h = { .sample = sc->n, .shard_only = 1, .other = -1,
			       .message = err.msg };
	if (c->run[CH_RULE_READABLE])
		check_note(c, CH_RULE_READABLE, &h);
	return NULL;
}

static void check_field(struct scan *sc, const uint8_t *data,
			const struct ch_field_info *fi, int *hashed)
{
	struct checker *c = sc->c;
	enum check_type type = check_type_of(fi->name);
	int is_cls = strcmp(fi->name, "cls") == 0;
	int64_t cls = -1;
	char why[512];
	if (type == TYPE_NONE || fi->size == 0 || (c->labels_only && !is_cls))
		return;
	sc->typed++;
	int rc = check_type_valid(sc->d, type, data + fi->offset, fi->size,
				  c->ds.manifest.nclasses, &cls, why,
				  sizeof(why));
	if (rc < 0 && !c->labels_only && c->run[CH_RULE_TYPES]) {
		struct check_hit h = { .sample = sc->n, .other = -1,
				       .field = fi->name, .message = why };
		check_note(c, CH_RULE_TYPES, &h);
	}
	if (is_cls && c->cls)
		c->cls[sc->n] = cls;
	if (c->phash && !*hashed && rc == 0 &&
	    (type == TYPE_JPEG || type == TYPE_PNG)) {
		*hashed = 1; /* the first image of the sample stands for it */
		c->phash_ok[sc->n] = check_phash(sc->d, type, data + fi->offset,
						 fi->size, &c->phash[sc->n]) == 0;
	}
}

static void scan_bytes(struct scan *sc)
{
	struct checker *c = sc->c;
	struct ch_field_info fi;
	int hashed = 0;
	const uint8_t *data = read_sample(sc);
	if (!data) {
		missed(sc);
		return;
	}
	if (c->recs && sc->label && sc->input)
		hash_inputs(sc, data);
	if (c->o->deep && c->run[CH_RULE_CORRUPTION]) {
		sc->hashed++;
		if (ch_sample_hash(sc->sh, sc->i, data) != sc->si.hash) {
			struct check_hit h = { .sample = sc->n, .other = -1,
					       .message = "content hash "
							  "mismatch" };
			check_note(c, CH_RULE_CORRUPTION, &h);
		}
	}
	for (uint32_t f = 0; f < sc->si.nfields; f++) {
		ch_shard_field(sc->sh, sc->i, f, &fi);
		check_field(sc, data, &fi, &hashed);
	}
}

void check_scan(struct checker *c, const struct check_task *t,
		struct ch_block_reader *r, struct check_decoder *d)
{
	struct scan sc = { .c = c, .sh = c->sh[t->shard], .r = r, .d = d,
			   .bad_block = -1, .last_block = -1 };
	for (sc.i = t->begin; sc.i < t->end; sc.i++) {
		if (c->o->cancel && *c->o->cancel)
			break;
		sc.n = c->first[t->shard] + sc.i;
		ch_shard_sample(sc.sh, sc.i, &sc.si);
		if (scan_index(&sc))
			scan_bytes(&sc);
	}
	pthread_mutex_lock(&c->lock);
	c->typed_fields += sc.typed;
	c->blocks_read += sc.blocks;
	c->samples_hashed += sc.hashed;
	c->bad_blocks += sc.bad_blocks;
	for (int r = 0; r < CH_RULE_COUNT; r++)
		c->unexamined[r] += sc.unexamined[r];
	pthread_mutex_unlock(&c->lock);
}
