#!/usr/bin/env bats
# The README runs as written: the commands of its tour ("## A one-minute
# tour", every indented block, in order) run in one shell, in a scratch
# folder that has the repository's build/ and scripts/, and each must
# succeed.  A command of a pipeline killed by SIGPIPE because the reader
# stopped early (head) is fine; any other failure names the line.
#
# Made smaller, and only these: Fashion-MNIST is cut with the script's own
# --limit-* options and make-images makes 64 images instead of 1000.
# `make` is the repository's (a no-op after the build under test).

load helper

# readme_commands SECTION: the indented lines of SECTION, continuation
# lines joined, one command a line.
readme_commands() {
	awk -v want="## $1" '
		/^## / { on = ($0 == want); next }
		!on || !/^    / { next }
		{
			line = substr($0, 5)
			if (cont != "") { line = cont " " line; cont = "" }
			if (line ~ /\\$/) { cont = substr(line, 1, length(line) - 1); next }
			print line
		}' "$REPO_ROOT/README.md"
}

# as_script: the commands on stdin as a bash script that stops at the
# first one that fails and names it.
as_script() {
	cat <<-'PRE'
		set -u -o pipefail
		make() { command make -s -C "$REPO_ROOT" "$@" >/dev/null; }
		readme_failed() {
			echo "README command failed (exit $1): $2" >&2
			exit 1
		}
		trap 's=$?; [ $s -eq 141 ] || readme_failed $s "$README_LINE"' ERR
	PRE
	local line
	while IFS= read -r line; do
		case $line in '' | '#'*) continue ;; esac
		printf 'README_LINE=%q\n' "$line"
		printf 'printf "$ %%s\\n" "$README_LINE"\n'
		printf '%s\n' "$line"
		printf 's=$?; [ $s -eq 0 ] || [ $s -eq 141 ] || readme_failed $s "$README_LINE"\n'
	done
}

setup() {
	chute_setup
	ln -s "$(dirname "$CHUTE_BIN")" build
	ln -s "$REPO_ROOT/scripts" scripts
	export REPO_ROOT XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
}

@test "README: the tour, Fashion-MNIST, transform, shm and versions blocks run as written" {
	readme_commands "A one-minute tour" >commands.txt
	# the blocks are there: an empty extraction must not pass
	for want in 'chute pack --label-from dir photos' 'chute check ds' \
		'--split train ds' '--split val --mode eval' 'train_fashion_mnist.py' \
		"random-resized-crop 224" '--shm tour' 'chute push ds $REMOTE' \
		'--replay run.json'; do
		grep -qF -- "$want" commands.txt || fail "no '$want' in the README's tour"
	done
	sed -e 's|fashion_mnist.py fm |fashion_mnist.py fm --limit-train 2000 --limit-test 500 |' \
		-e 's|make-images imgs 1000|make-images imgs 64|' commands.txt |
		as_script >tour.sh
	run bash tour.sh
	[ "$status" -eq 0 ] || fail "the tour failed (exit $status): $output"
	# what the README says the commands print
	assert_output --partial "PASS field-types"
	assert_output --regexp "check: 10 rules, 10 passed"
	assert_output --partial "cls=i64(64) jpg=u8(64,3,224,224)"
	assert_output --partial "split 200 samples into 2 splits"
	refute_output --partial "Traceback"
	[ ! -e /dev/shm/chute-tour ] || fail "the ring of --shm tour was left behind"
}

@test "README: the Manual lists every man page" {
	local page
	for page in "$REPO_ROOT"/man/*.[157]; do
		grep -qE "[\`/]$(basename "$page")\`" "$REPO_ROOT/README.md" ||
			fail "README's Manual does not list $(basename "$page")"
	done
}

@test "README: a failing command fails the run and is named, a SIGPIPE'd one does not" {
	printf '%s\n' 'yes | head -n 1' 'X=1' 'echo "x=$X"' 'false; true' 'echo not reached' |
		as_script >t.sh
	run -1 bash t.sh
	assert_output --partial 'x=1'
	assert_output --partial 'README command failed (exit 1): false; true'
	refute_output --partial 'not reached'
	printf '%s\n' 'true && false' | as_script >t.sh
	run -1 bash t.sh
	printf '%s\n' 'exit 2 | cat' | as_script >t.sh
	run -1 bash t.sh
	assert_output --partial 'README command failed (exit 2): exit 2 | cat'
}
