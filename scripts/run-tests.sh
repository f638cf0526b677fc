#!/bin/bash
# run-tests.sh - build chute and run every test suite: unit tests, the CLI
# tests (bats), both again under AddressSanitizer and UBSan, and the fuzz
# targets briefly when clang is there.
#
# Usage: scripts/run-tests.sh [--no-deps]
#
# Every suite prints TAP; its "ok" and "not ok" lines are counted, a plan
# ("1..N") that promises more tests than ran counts the missing ones as
# failed, and a suite that cannot build or run counts as one failure.  The
# last line is always "N passed, N failed"; the exit status is 0 only when
# nothing failed.

# no -e: a failing suite must not stop the count
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD

DEPS=1
for arg; do
	case $arg in
	--no-deps) DEPS=0 ;;
	-h | --help)
		sed -n 's/^# Usage: //p' "$0"
		exit 0
		;;
	*)
		echo "run-tests: unknown option '$arg'" >&2
		exit 2
		;;
	esac
done

JOBS=$(nproc 2>/dev/null || echo 2)
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/chute-tests.XXXXXX") || exit 2
trap 'rm -rf "$LOGDIR"' EXIT

PASSED=0
FAILED=0
SUMMARY=()

# note NAME PASSED FAILED [SECONDS]: records one suite's result.
note() {
	PASSED=$((PASSED + $2))
	FAILED=$((FAILED + $3))
	SUMMARY+=("$(printf '%-32s %4d passed, %4d failed  %4ss' "$1" "$2" "$3" "${4:-}")")
}

# broken NAME WHY: a suite that could not run counts as one failure.
broken() {
	echo "not ok - $1 could not run: $2"
	note "$1" 0 1
}

# count_tap NAME LOG STATUS SECONDS: counts the TAP lines of a finished suite.
count_tap() {
	local name=$1 log=$2 status=$3 secs=$4 ok notok plan missing=0
	ok=$(grep -c '^ok ' "$log")
	notok=$(grep -c '^not ok ' "$log")
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$log" | head -n 1)
	if [ -n "$plan" ] && [ $((ok + notok)) -lt "$plan" ]; then
		missing=$((plan - ok - notok))
		echo "not ok - $name: $missing of $plan planned tests did not run"
	fi
	# a non-zero exit that no "not ok" line explains: a crash, a failed
	# start, a sanitizer report after the last test
	if [ "$status" -ne 0 ] && [ "$notok" -eq 0 ] && [ "$missing" -eq 0 ]; then
		echo "not ok - $name exited with status $status"
		missing=1
	fi
	note "$name" "$ok" $((notok + missing)) "$secs"
}

# suite NAME CMD...: runs CMD, shows its output, counts its TAP lines.
suite() {
	local name=$1 log status start=$SECONDS
	shift
	log="$LOGDIR/$(echo "$name" | tr -c 'A-Za-z0-9_\n-' _).log"
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	count_tap "$name" "$log" "$status" $((SECONDS - start))
}

# step NAME CMD...: a build step; its failure counts as one failure.
step() {
	local name=$1
	shift
	echo "== $name: $*"
	if "$@"; then
		return 0
	fi
	broken "$name" "'$*' failed"
	return 1
}

# unit_suites BUILD_DIR [make args...]: builds and runs each unit test.
unit_suites() {
	local build=$1 src bin label
	shift
	for src in tests/unit/test_*.c; do
		[ -e "$src" ] || {
			echo "# no unit tests in tests/unit"
			return 0
		}
		bin="$build/tests/$(basename "$src" .c)"
		label="unit${build#build}/$(basename "$src" .c)"
		step "$label (build)" make -s "$@" "$bin" || continue
		suite "$label" "$bin"
	done
}

# Test files about the Makefile or the Python package more than about
# chute's C code: run once, against the normal build, not again under the
# sanitizers (they would add minutes and test no more C).
ONCE="makefile.bats python_dataset.bats ddp.bats"

# bats_suite NAME CHUTE_BIN [all|sanitized]: the CLI tests against one
# binary; "sanitized" leaves out the files of ONCE.
bats_suite() {
	local files=() f
	for f in tests/cli/*.bats; do
		if [ "${3:-all}" = sanitized ] && [[ " $ONCE " == *" ${f##*/} "* ]]; then
			echo "# $1: ${f##*/} runs in the normal pass only"
			continue
		fi
		files+=("$f")
	done
	if [ ${#files[@]} -eq 0 ] || [ ! -e "${files[0]}" ]; then
		broken "$1" "no tests/cli/*.bats"
		return
	fi
	if ! command -v bats >/dev/null; then
		broken "$1" "bats is not installed (scripts/install-deps.sh)"
		return
	fi
	suite "$1" env CHUTE_BIN="$ROOT/$2" bats --tap --timing "${files[@]}"
}

if [ "$DEPS" = 1 ]; then
	step deps ./scripts/install-deps.sh
fi

# normal build
if step build make -s -j"$JOBS"; then
	unit_suites build
	bats_suite cli build/chute
fi

# sanitizer build: the same tests, and any leak, overflow or undefined
# behaviour aborts the process.  abort_on_error for UBSan too: its default
# exit status, 1, would pass for "verify found a problem" in `run -1`.
SAN=address,undefined
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1
if step build-san make -s -j"$JOBS" SANITIZE=$SAN; then
	unit_suites build-san SANITIZE=$SAN
	bats_suite cli-san build-san/chute sanitized
fi
unset ASAN_OPTIONS UBSAN_OPTIONS

# fuzz targets, briefly, counted as one test
if command -v clang >/dev/null; then
	echo "== fuzz"
	start=$SECONDS
	if [ ! -x scripts/run-fuzz.sh ]; then
		broken fuzz "scripts/run-fuzz.sh is missing"
	elif ./scripts/run-fuzz.sh 30; then
		echo "ok - fuzz"
		note fuzz 1 0 $((SECONDS - start))
	else
		echo "not ok - fuzz"
		note fuzz 0 1 $((SECONDS - start))
	fi
else
	echo "# skip fuzz: clang not found"
fi

echo "== summary"
printf '%s\n' "${SUMMARY[@]}"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
