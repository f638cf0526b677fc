#!/usr/bin/env bats
# The docs and the binary tell the same story: every command has a man
# page, --help and the page list the same options with the same synopsis,
# the pages lint clean, and usage mistakes get one helpful line.

load helper

MAN="$REPO_ROOT/man"

# commands: the command names that `chute help` lists, one a line.
commands() {
	chute help | awk '/^commands:$/ { on = 1; next }
		on && /^$/ { exit }
		on { print $1 }'
}

# documented_commands: those that have their own page (help is described
# in chute.1).
documented_commands() {
	commands | grep -vx help
}

# help_tags CMD: the option column of `chute CMD --help` ("-o, --output DIR").
help_tags() {
	chute "$1" --help | awk '/^options:$/ { on = 1; next }
		on && /^$/ { exit }
		on && /^ +-/ { sub(/^ +/, ""); sub(/  .*/, ""); print }'
}

# man_part PAGE WHAT: from the page as mandoc renders it to HTML, either
# the option tags of OPTIONS, one a line ("tags"), or the text of one
# section on one line ("NAME", "SYNOPSIS", "COMMANDS").
man_part() {
	mandoc -T html -O fragment "$1" | "$PYTHON" -c '
import html.parser, sys

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.section, self.where, self.text = None, None, ""
        self.tags, self.sections = [], {}

    def handle_starttag(self, tag, attrs):
        if tag == "h1" or (tag == "dt" and self.section == "OPTIONS"):
            self.where, self.text = tag, ""

    def handle_endtag(self, tag):
        if tag != self.where:
            return
        words = " ".join(self.text.split())
        if tag == "h1":
            self.section = words
            self.sections[words] = ""
        else:
            self.tags.append(words)
        self.where = None

    def handle_data(self, data):
        if self.where:
            self.text += data
        elif self.section:
            self.sections[self.section] += data

page = Page()
page.feed(sys.stdin.read())
what = sys.argv[1]
if what == "tags":
    print("\n".join(page.tags))
else:
    print(" ".join(page.sections.get(what, "").split()))
' "$2"
}

@test "docs: chute help lists the commands of the contract" {
	run -0 commands
	assert_output "$(printf '%s\n' bench cat check diff export gc help log ls manifest merge pack preview pull push remote split status stream tags verify)"
}

@test "docs: every command in chute help has a man page" {
	local cmd
	for cmd in $(documented_commands); do
		assert_file_exists "$MAN/chute-$cmd.1"
	done
}

@test "docs: chute.1 lists exactly the commands of chute help" {
	run -0 bash -c "mandoc -T utf8 '$MAN/chute.1' | col -b |
		sed -n '/^COMMANDS/,/^[A-Z]/p' | grep -o '^       [a-z]\\+' | tr -d ' '"
	assert_output "$(commands)"
}

@test "docs: every long option printed by chute CMD --help appears in its man page" {
	local cmd opt page
	for cmd in $(documented_commands); do
		page=$(sed 's/\\-/-/g' "$MAN/chute-$cmd.1")
		for opt in $(chute "$cmd" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
			[[ $page == *"$opt"* ]] ||
				fail "chute $cmd --help prints $opt, man/chute-$cmd.1 does not"
		done
	done
}

@test "docs: the OPTIONS of each man page are the options of --help, in the same order and words" {
	local cmd
	for cmd in $(documented_commands); do
		run -0 man_part "$MAN/chute-$cmd.1" tags
		assert_output "$(help_tags "$cmd")"
	done
	run -0 man_part "$MAN/chute.1" tags
	assert_output "$(printf '%s\n' '-h, --help' '--version')"
}

# Held to the option tables themselves (tests/options_tool prints them):
# an option in a table and not on its page, or on a page and in no
# table, or with another letter or argument, fails.
@test "docs: the OPTIONS of each man page are the rows of its command's option table" {
	local tool="${CHUTE_BIN%/*}/tests/options_tool" cmd
	[ -x "$tool" ] || fail "options_tool not found at '$tool' (run make)"
	for cmd in $(documented_commands); do
		run -0 man_part "$MAN/chute-$cmd.1" tags
		assert_output "$("$tool" "$cmd")"
	done
}

@test "docs: each man page's synopsis is the usage lines of --help" {
	local cmd help usage
	for cmd in $(documented_commands); do
		help=$(chute "$cmd" --help)
		usage=$(head -1 <<<"$help")
		assert_equal "${usage%% *}" "usage:"
		# "usage: chute X ..." and any "   or: chute X ..." lines
		usage=$(sed -n '1,/^$/s/^ *\(usage\|or\): //p' <<<"$help" |
			paste -sd ' ')
		run -0 man_part "$MAN/chute-$cmd.1" SYNOPSIS
		assert_output "$usage"
		assert_output --regexp "^chute $cmd( |\$)"
	done
}

@test "docs: each man page's NAME line is the command's summary in chute help" {
	local cmd summary nusage help
	help=$(chute help)
	for cmd in $(documented_commands); do
		summary=$(awk -v c="$cmd" '$1 == c { sub(/^ +[a-z]+ +/, ""); print; exit }' <<<"$help")
		[ -n "$summary" ] || fail "no summary for $cmd in chute help"
		run -0 man_part "$MAN/chute-$cmd.1" NAME
		assert_output "chute-$cmd - $summary"
		run -0 chute "$cmd" --help
		# after the usage lines ("usage:", then any "or:")
		nusage=$(grep -c '^ *\(usage\|or\): ' <<<"$output")
		assert_line --index "$nusage" "$summary"
	done
}

@test "docs: mandoc -T lint finds nothing in any man page" {
	local page
	for page in "$MAN"/*.[1-8]; do
		run -0 mandoc -T lint "$page"
		assert_output ""
	done
}

@test "docs: every man page's .TH says \"chute\" with no version (installing adds it)" {
	local page
	for page in "$MAN"/*.[1-8]; do
		grep -q '^\.TH [^"]*"chute" ' "$page" ||
			fail "$page: .TH does not say \"chute\" (make install and the wheel put the version there)"
	done
}

# The version lives in CH_VERSION alone (README.md, "Releasing"): the
# binary, the Python package, its wheel's metadata and the latest release of
# CHANGELOG.md must say the same.
@test "docs: one version: chute --version, CH_VERSION, the Python package and CHANGELOG.md's latest release agree" {
	local version
	run -0 chute --version
	[[ $output =~ ^chute\ ([0-9]+\.[0-9]+\.[0-9]+)$ ]] || fail "chute --version: $output"
	version=${BASH_REMATCH[1]}
	run -0 make -C "$REPO_ROOT" --no-print-directory version
	assert_output "$version"
	run -0 "$PYTHON" -c '
import sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/_build"]
import chute, chute_build
print(chute.__version__, chute_build._project()["version"])' "$REPO_ROOT/python"
	assert_output "$version $version"
	# the first section after [Unreleased] is the release just cut, dated
	run -0 grep -m 2 '^## \[' "$REPO_ROOT/CHANGELOG.md"
	assert_line --index 0 "## [Unreleased]"
	assert_line --index 1 --regexp "^## \[$version\] - [0-9]{4}-[0-9]{2}-[0-9]{2}\$"
}

@test "docs: CHANGELOG.md has one line an entry, none over 160 characters" {
	run -0 "$PYTHON" -c '
import sys
sections = False
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    line = line.rstrip("\n")
    sections = sections or line.startswith("## ")
    if len(line) > 160:
        print("line %d: %d characters" % (n, len(line)))
    elif sections and line and not line.startswith(("## ", "### ", "- ")):
        print("line %d: not an entry, nor a heading: %s" % (n, line[:40]))' \
		"$REPO_ROOT/CHANGELOG.md"
	assert_output ""
}

@test "docs: chute --version prints the version" {
	local version
	version=$(sed -n 's/^#define CH_VERSION "\(.*\)"$/\1/p' "$REPO_ROOT/include/chute/common.h")
	[ -n "$version" ] || fail "no CH_VERSION in include/chute/common.h"
	run -0 chute --version
	assert_output "chute $version"
}

@test "docs: chute help CMD prints the same as chute CMD --help" {
	local cmd
	for cmd in $(commands); do
		run -0 chute help "$cmd"
		assert_output "$(chute "$cmd" --help)"
	done
	run -0 chute --help
	assert_output "$(chute help)"
}

@test "docs: chute alone prints the usage on stderr and exits 2" {
	run -2 --separate-stderr chute
	assert_output ""
	[[ $stderr == usage:* ]] || fail "stderr: $stderr"
}

# ---------------------------------------------------------------- mistakes

@test "docs: an unknown command suggests the closest one" {
	run -2 chute pakc
	assert_output "chute: 'pakc' is not a chute command; did you mean 'pack'?"
	run -2 chute verfy ds
	assert_output "chute: 'verfy' is not a chute command; did you mean 'verify'?"
	run -2 chute help lss
	assert_output --partial "did you mean 'ls'?"
}

@test "docs: an unknown command far from every name gets no suggestion" {
	run -2 chute frobnicate
	assert_output "chute: 'frobnicate' is not a chute command; see 'chute help'"
	run -2 chute x
	refute_output --partial "did you mean"
}

@test "docs: an unknown option suggests the closest one" {
	run -2 chute pack --levle 3 src -o ds
	assert_output "chute pack: unknown option '--levle'; did you mean '--level'?"
	run -2 chute verify --jsno ds
	assert_output "chute verify: unknown option '--jsno'; did you mean '--json'?"
	run -2 chute cat --feild=jpg ds k
	assert_output "chute cat: unknown option '--feild'; did you mean '--field'?"
	run -2 chute --verison
	assert_output "chute: unknown option '--verison'; did you mean '--version'?"
}

@test "docs: an unknown option far from every name points at --help" {
	run -2 chute ls --frobnicate ds
	assert_output "chute ls: unknown option '--frobnicate'; see 'chute ls --help'"
	run -2 chute ls -Z ds
	assert_output "chute ls: unknown option '-Z'; see 'chute ls --help'"
}

@test "docs: a missing option value and a bad number are one clear line each" {
	run -2 chute pack src -o
	assert_output "chute pack: option '-o' needs a value (DIR)"
	run -2 chute pack src --output
	assert_output "chute pack: option '--output' needs a value (DIR)"
	run -2 chute pack -l 99 src -o ds
	assert_output "chute pack: invalid value '99' for --level: expected a whole number from 0 to 19"
	run -2 chute verify -j 2x ds
	assert_one_line_error verify
	assert_output --partial "'2x'"
	run -2 chute pack -s 0 src -o ds
	assert_one_line_error pack
	run -2 chute ls --json=yes ds
	assert_output "chute ls: option '--json' takes no value"
}

@test "docs: an ambiguous abbreviation names the candidates" {
	run -2 chute pack --l 3 src -o ds
	assert_output "chute pack: option '--l' is ambiguous; could be '--label-from' or '--level'"
}
