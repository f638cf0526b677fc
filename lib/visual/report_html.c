/* visual/report_html.c - chute check --html: the report as one page that
 * needs nothing but itself.  The rules' table and the class counts come
 * from the report; the examples' samples are read again from the
 * dataset, their images shrunk to JPEG thumbnails inlined as data: URIs.
 * Nothing depends on the clock or the machine: the same report of the
 * same dataset is the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "chute/version.h"
#include "chute/visual.h"
#include "visual/html.h"
#include "visual/internal.h"

#define EXCERPT 80 /* bytes of a text field shown */

struct report {
	struct html h;
	const struct ch_check_report *rep;
	struct ch_dataset ds;
	struct ch_block_reader *r;
	struct thumb_maker t;
	uint32_t thumb;
};

static const char style[] =
	"body{font:14px/1.4 sans-serif;margin:1.5em;color:#222}"
	"table{border-collapse:collapse;margin:.5em 0}"
	"td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;"
	"vertical-align:top}"
	"td.n{text-align:right}td[data-group]{min-width:7em}"
	".pass{color:#1a7f37}.warn{color:#9a6700}.fail{color:#cf222e}"
	"b.fail,b.warn,b.pass{font-weight:bold}"
	".bar{background:#8cb4e6;height:.6em;margin-top:.15em}"
	".example{display:flex;gap:1em;align-items:flex-start;margin:.6em 0;"
	"padding:.5em;border:1px solid #ddd}"
	".sample{margin:0;max-width:22em}"
	".sample figcaption{font-size:12px;color:#555;word-break:break-all}"
	".broken{background:#fbe9e9;border:1px dashed #cf222e;padding:.4em;"
	"font-size:12px;max-width:20em;word-break:break-all}"
	".rel{align-self:center;font-size:20px}"
	"code{font-size:12px}";

static const char *status_word(enum ch_check_status s)
{
	return s == CH_STATUS_FAIL ? "fail" : s == CH_STATUS_WARN ? "warn" :
								    "pass";
}

/* ------------------------------------------------------------------ */
/* One sample: its fields, shown                                        */

static void image_field(struct report *r, const char *name,
			const uint8_t *data, size_t size)
{
	struct ch_error err = {0};
	struct ch_buf jpg = {0};
	if (thumb_fit(&r->t, data, size, r->thumb, &err) < 0 ||
	    ch_image_jpeg_encode(&r->t.img, 85, &jpg, &err) < 0) {
		html_put(&r->h, "<div class=\"broken\" data-field=\"");
		html_str(&r->h, name);
		html_put(&r->h, "\">");
		html_str(&r->h, name);
		html_put(&r->h, ": ");
		html_str(&r->h, err.msg);
		html_put(&r->h, "</div>");
		ch_buf_release(&jpg);
		return;
	}
	html_put(&r->h, "<img class=\"thumb\" width=\"%u\" height=\"%u\" "
		 "data-field=\"", r->t.img.w, r->t.img.h);
	html_str(&r->h, name);
	html_put(&r->h, "\" alt=\"");
	html_str(&r->h, name);
	html_put(&r->h, "\" src=\"data:image/jpeg;base64,");
	html_base64(&r->h, jpg.data, jpg.len);
	html_put(&r->h, "\">");
	ch_buf_release(&jpg);
}

/* How many of the first bytes of data make text worth showing (whole
 * UTF-8 characters, no control byte but tab and newline); 0: not text. */
static size_t text_prefix(const uint8_t *data, size_t size)
{
	size_t i = 0;
	uint32_t cp;
	while (i < size && i < EXCERPT) {
		size_t n = ch_utf8_len(data + i, size - i, &cp);
		if (n == 0 || (cp < 0x20 && cp != '\n' && cp != '\t') ||
		    cp == 0x7f)
			return 0;
		i += n;
	}
	return i;
}

static void other_field(struct report *r, const char *name,
			const uint8_t *data, size_t size)
{
	size_t text = text_prefix(data, size);
	html_put(&r->h, "<div class=\"field\" data-field=\"");
	html_str(&r->h, name);
	html_put(&r->h, "\"><b>");
	html_str(&r->h, name);
	html_put(&r->h, "</b> ");
	if (text) { /* on one line: tabs and newlines as spaces */
		char line[EXCERPT + 4];
		for (size_t i = 0; i < text; i++)
			line[i] = data[i] == '\n' || data[i] == '\t' ?
				  ' ' : (char)data[i];
		html_put(&r->h, "<q>");
		html_text(&r->h, line, text);
		html_put(&r->h, "%s</q> ", text < size ? "&hellip;" : "");
	}
	html_put(&r->h, "%llu %s</div>", (unsigned long long)size,
		 ch_plural(size, "byte", "bytes"));
}

static void broken(struct report *r, const char *why)
{
	html_put(&r->h, "<div class=\"broken\">");
	html_str(&r->h, why);
	html_put(&r->h, "</div>");
}

/* The fields of sample i of sh: images first, in name order, then the
 * others. */
static void fields(struct report *r, const struct ch_shard *sh, uint64_t i,
		   const uint8_t *data)
{
	struct ch_sample_info si;
	struct ch_field_info fi;
	ch_shard_sample(sh, i, &si);
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t f = 0; f < si.nfields; f++) {
			ch_shard_field(sh, i, f, &fi);
			int image = visual_is_image(fi.name) && fi.size;
			if (pass == 0 && image)
				image_field(r, fi.name, data + fi.offset,
					    fi.size);
			else if (pass == 1 && !image)
				other_field(r, fi.name, data + fi.offset,
					    fi.size);
		}
	}
}

/* A sample (dataset-wide number n) as a card: its fields over its key,
 * split, shard and where its block lies in the shard. */
static void card(struct report *r, const struct ch_check_ref *ref,
		 uint64_t n)
{
	struct ch_error err = {0};
	struct ch_shard *sh = NULL;
	struct ch_sample_info si;
	struct ch_block_stat bs;
	const uint8_t *data;
	size_t s;
	uint64_t i;
	html_put(&r->h, "<figure class=\"sample\">");
	if (ch_dataset_locate(&r->ds, n, &s, &i, &err) < 0 ||
	    ch_dataset_shard(&r->ds, s, &sh, &err) < 0 ||
	    ch_sample_read(r->r, sh, i, &data, &err) < 0)
		broken(r, err.msg);
	else
		fields(r, sh, i, data);
	html_put(&r->h, "<figcaption><code class=\"key\">");
	html_str(&r->h, ref->key);
	html_put(&r->h, "</code><br>");
	if (ref->split) {
		html_str(&r->h, ref->split);
		html_put(&r->h, " &middot; ");
	}
	html_str(&r->h, ref->shard);
	if (sh) {
		ch_shard_sample(sh, i, &si);
		ch_shard_block(sh, si.block, &bs);
		html_put(&r->h, ", block %u at byte %llu", si.block,
			 (unsigned long long)bs.offset);
	}
	html_put(&r->h, "</figcaption></figure>");
}

/* ------------------------------------------------------------------ */
/* The examples of a rule                                               */

static void what(struct report *r, const struct ch_check_example *ex)
{
	html_put(&r->h, "<p class=\"what\">");
	if (ex->field) {
		html_str(&r->h, ex->field);
		html_put(&r->h, ": ");
	}
	if (ex->message)
		html_str(&r->h, ex->message);
	if (ex->median)
		html_put(&r->h, "%llu bytes, median %llu bytes",
			 (unsigned long long)ex->size,
			 (unsigned long long)ex->median);
	html_put(&r->h, "</p>");
}

static void example(struct report *r, int rule,
		    const struct ch_check_example *ex)
{
	html_put(&r->h, "<div class=\"example\">");
	if (rule == CH_RULE_LABELS) {
		html_put(&r->h, "<p class=\"what\">");
		html_str(&r->h, ex->at.split);
		html_put(&r->h, " class %llu: %.4f, baseline %.4f</p>",
			 (unsigned long long)ex->value, ex->share,
			 ex->baseline_share);
	} else if (!ex->at.key) { /* a shard, a block or a split file */
		html_put(&r->h, "<div class=\"broken\"><code>");
		html_str(&r->h, ex->at.shard);
		html_put(&r->h, "</code>: ");
		html_str(&r->h, ex->message);
		html_put(&r->h, "</div>");
	} else {
		card(r, &ex->at, ex->sample);
		if (ex->has_other) {
			if (rule == CH_RULE_NEAR_DUPLICATES)
				html_put(&r->h, "<div class=\"rel\">~<br>"
					 "<small>distance %d</small></div>",
					 ex->distance);
			else
				html_put(&r->h, "<div class=\"rel\">=</div>");
			card(r, &ex->other, ex->other_sample);
		} else {
			what(r, ex);
		}
	}
	html_put(&r->h, "</div>");
}

static void rule_examples(struct report *r, int rule)
{
	const struct ch_check_rule_result *rr = &r->rep->rules[rule];
	html_put(&r->h, "<section class=\"rule\" data-rule=\"%s\"><h3>"
		 "<b class=\"%s\">%s</b> %s: ", ch_check_rule_name(rule),
		 status_word(rr->status), status_word(rr->status),
		 ch_check_rule_name(rule));
	html_str(&r->h, rr->message);
	html_put(&r->h, "</h3>");
	if (rr->count > rr->nexamples)
		html_put(&r->h, "<p>the first %zu of %llu</p>", rr->nexamples,
			 (unsigned long long)rr->count);
	for (size_t i = 0; i < rr->nexamples; i++)
		example(r, rule, &rr->examples[i]);
	html_put(&r->h, "</section>");
}

/* ------------------------------------------------------------------ */
/* The tables                                                           */

/* The rules that failed, then those that warned, then those that
 * passed, as the text report has them. */
static const enum ch_check_status order[] = {
	CH_STATUS_FAIL, CH_STATUS_WARN, CH_STATUS_PASS,
};

static void rules_table(struct report *r)
{
	html_put(&r->h, "<h2>Rules</h2><table id=\"rules\"><tr><th>rule</th>"
		 "<th>status</th><th>problems</th><th>not examined</th>"
		 "<th>what was found</th></tr>");
	for (int k = 0; k < 3; k++) {
		for (int rule = 0; rule < CH_RULE_COUNT; rule++) {
			const struct ch_check_rule_result *rr =
				&r->rep->rules[rule];
			if (rr->status != order[k])
				continue;
			const char *st = status_word(rr->status);
			html_put(&r->h, "<tr data-rule=\"%s\" data-status=\"%s\">"
				 "<td>%s</td><td class=\"%s\">%s</td>"
				 "<td class=\"n count\">%llu</td>"
				 "<td class=\"n unexamined\">%llu</td><td>",
				 ch_check_rule_name(rule), st,
				 ch_check_rule_name(rule), st, st,
				 (unsigned long long)rr->count,
				 (unsigned long long)rr->unexamined);
			html_str(&r->h, rr->message);
			html_put(&r->h, "</td></tr>");
		}
	}
	html_put(&r->h, "</table>");
}

/* A count and its bar: its share of the group, in tenths of a percent
 * (integers, so that the page is the same everywhere). */
static void class_cell(struct report *r, const char *group, uint64_t count,
		       uint64_t total)
{
	uint64_t permille = total ? (count * 1000 + total / 2) / total : 0;
	html_put(&r->h, "<td class=\"n\" data-group=\"");
	html_str(&r->h, group);
	html_put(&r->h, "\" data-count=\"%llu\">%llu<div class=\"bar\" "
		 "style=\"width:%llu.%llu%%\"></div></td>",
		 (unsigned long long)count, (unsigned long long)count,
		 (unsigned long long)(permille / 10),
		 (unsigned long long)(permille % 10));
}

static void classes_table(struct report *r)
{
	const struct ch_check_labels *l = &r->rep->labels;
	const struct ch_manifest *m = &r->ds.manifest;
	if (!r->rep->has_labels)
		return;
	html_put(&r->h, "<h2>Classes</h2><table id=\"classes\"><tr>"
		 "<th>class</th>");
	for (size_t g = 0; g < l->ngroups; g++) {
		html_put(&r->h, "<th>");
		html_str(&r->h, l->groups[g].name);
		html_put(&r->h, "</th>");
	}
	html_put(&r->h, "</tr>");
	for (size_t v = 0; v < l->nvalues; v++) {
		html_put(&r->h, "<tr data-class=\"%llu\"><td>%llu",
			 (unsigned long long)l->values[v],
			 (unsigned long long)l->values[v]);
		if (l->values[v] < m->nclasses) {
			html_put(&r->h, " ");
			html_str(&r->h, m->classes[l->values[v]]);
		}
		html_put(&r->h, "</td>");
		for (size_t g = 0; g < l->ngroups; g++)
			class_cell(r, l->groups[g].name,
				   l->groups[g].counts[v], l->groups[g].total);
		html_put(&r->h, "</tr>");
	}
	html_put(&r->h, "</table>");
}

/* ------------------------------------------------------------------ */
/* The page                                                             */

static void head(struct report *r)
{
	const struct ch_check_report *rep = r->rep;
	const char *name = rep->name ? rep->name : "";
	html_put(&r->h, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
		 "<meta charset=\"utf-8\"><title>chute check ");
	html_str(&r->h, name);
	html_put(&r->h, "</title><style>%s</style></head><body>\n"
		 "<h1>chute check ", style);
	html_str(&r->h, name);
	html_put(&r->h, "</h1><p>dataset <code id=\"dataset\">%s</code>: "
		 "%llu %s in %zu %s; chute <span id=\"version\">%s</span></p>"
		 "<p id=\"summary\" data-passed=\"%u\" data-warned=\"%u\" "
		 "data-failed=\"%u\"><b class=\"pass\">%u passed</b>, "
		 "<b class=\"warn\">%u warned</b>, <b class=\"fail\">%u "
		 "failed</b></p>\n", rep->id, (unsigned long long)rep->samples,
		 ch_plural(rep->samples, "sample", "samples"), rep->shards,
		 ch_plural(rep->shards, "shard", "shards"), CH_VERSION,
		 rep->passed, rep->warned, rep->failed, rep->passed,
		 rep->warned, rep->failed);
}

static void page(struct report *r)
{
	head(r);
	rules_table(r);
	classes_table(r);
	html_put(&r->h, "\n<h2>Examples</h2>\n");
	for (int k = 0; k < 2; k++)
		for (int rule = 0; rule < CH_RULE_COUNT; rule++)
			if (r->rep->rules[rule].status == order[k])
				rule_examples(r, rule);
	html_put(&r->h, "\n</body></html>\n");
}

int ch_check_html(const char *path, const struct ch_check_report *rep,
		  uint32_t thumb, struct ch_buf *out, struct ch_error *err)
{
	struct report r = { .h = { *out, err, 0 }, .rep = rep,
			    .thumb = thumb ? thumb : 96 };
	if (ch_dataset_open_folder(&r.ds, path, err) < 0)
		return -1;
	if (thumb_init(&r.t, err) < 0 || !(r.r = ch_block_reader_new())) {
		if (r.t.dec)
			ch_error_nomem(err);
		r.h.failed = 1;
	} else {
		page(&r);
	}
	*out = r.h.b;
	ch_block_reader_free(r.r);
	thumb_release(&r.t);
	ch_dataset_release(&r.ds);
	return r.h.failed ? -1 : 0;
}
