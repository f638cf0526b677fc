#!/usr/bin/env python3
"""html_report.py - checks a chute check --html page against the --json
report of the same run (tests/cli/check_html.bats).

    html_report.py probe REPORT OUT      write OUT: REPORT plus a script
                                         that counts the decoded images
    html_report.py check REPORT JSON [--dom DOM] [--images N]

check: the page is self-contained (no script, no external reference); its
rules table, summary and class counts are the JSON report's; every data:
URI is an image that PIL decodes at the size the page gives it; N images
at least.  DOM, chromium's --dump-dom of the probe page, must hold the
same tables (the page rendered) and say that every image decoded.
Exits 1 with what differs.
"""
import argparse
import base64
import html.parser
import io
import json
import re
import sys

PROBE = ("<script>addEventListener('load', () => {"
         "const i = [...document.images];"
         "document.body.dataset.images = i.length;"
         "document.body.dataset.decoded = i.filter("
         "x => x.complete && x.naturalWidth > 0).length;});</script>")


class Page(html.parser.HTMLParser):
    """The figures a report shows, read from its markup."""

    def __init__(self):
        super().__init__()
        self.rules, self.classes, self.imgs, self.body = {}, {}, [], {}
        self.summary, self.ids, self.tags = None, {}, set()
        self._row, self._cell, self._id = None, None, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "body":
            self.body = a
        if tag == "tr" and "data-rule" in a:
            self._row = {"rule": a["data-rule"], "status": a["data-status"]}
            self.rules[a["data-rule"]] = self._row
        if tag == "tr" and "data-class" in a:
            self._row = None
            self._class = a["data-class"]
        if tag == "td" and "data-group" in a:
            self.classes.setdefault(a["data-group"], {})[self._class] = \
                int(a["data-count"])
        if tag == "td" and self._row is not None:
            cls = a.get("class", "")
            self._cell = ("count" if "count" in cls else
                          "unexamined" if "unexamined" in cls else None)
        if tag == "p" and a.get("id") == "summary":
            self.summary = tuple(int(a["data-" + k])
                                 for k in ("passed", "warned", "failed"))
        if tag == "img":
            self.imgs.append(a)
        self._id = a.get("id")

    def handle_endtag(self, tag):
        if tag == "table":
            self._row = None
        self._cell = None

    def handle_data(self, data):
        if self._cell and data.strip():
            self._row[self._cell] = int(data)
        if self._id in ("dataset", "version"):
            self.ids[self._id] = data
            self._id = None


def read(path):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    return p


def same_figures(page, r, what):
    want = {x["rule"]: {"rule": x["rule"], "status": x["status"],
                        "count": x["count"], "unexamined": x["unexamined"]}
            for x in r["rules"]}
    assert page.rules == want, "%s rules %s, JSON %s" % (what, page.rules, want)
    assert page.summary == (r["passed"], r["warned"], r["failed"]), \
        "%s summary %s" % (what, page.summary)
    labels = {g: dict(c) for g, c in (r["labels"] or {}).items()}
    assert page.classes == labels, "%s classes %s, JSON %s" % (
        what, page.classes, labels)
    assert page.ids.get("dataset") == r["dataset"], page.ids


def check_images(page):
    from PIL import Image
    for a in page.imgs:
        m = re.fullmatch(r"data:image/jpeg;base64,([A-Za-z0-9+/=]+)", a["src"])
        assert m, "an image that is not an inline JPEG: %.80s" % a["src"]
        im = Image.open(io.BytesIO(base64.b64decode(m.group(1), validate=True)))
        im.load()
        assert im.size == (int(a["width"]), int(a["height"])), (im.size, a)


def main(argv):
    if argv[0] == "probe":
        text = open(argv[1], encoding="utf-8").read()
        open(argv[2], "w").write(text.replace("</body>", PROBE + "</body>"))
        return
    ap = argparse.ArgumentParser(prog="html_report.py check")
    ap.add_argument("report")
    ap.add_argument("json")
    ap.add_argument("--dom")
    ap.add_argument("--images", type=int, default=0)
    a = ap.parse_args(argv[1:])
    text = open(a.report, encoding="utf-8").read()
    for bad in ("<script", "<link", "http:", "https:", "url(", "@import"):
        assert bad not in text, "the page holds %r" % bad
    r = json.load(open(a.json))
    page = read(a.report)
    same_figures(page, r, "page")
    assert len(page.imgs) >= a.images, "%d images, want %d at least" % (
        len(page.imgs), a.images)
    check_images(page)
    if a.dom:
        dom = read(a.dom)
        same_figures(dom, r, "rendered")
        n = str(len(page.imgs))
        assert (dom.body.get("data-images"), dom.body.get("data-decoded")) \
            == (n, n), "images in the browser: %s" % dom.body


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except AssertionError as e:
        print("html_report: %s" % e, file=sys.stderr)
        sys.exit(1)
