#!/bin/bash
# run-tests.sh - build chute and run every test suite: unit tests, the CLI
# tests (bats), both again under AddressSanitizer and UBSan, and the fuzz
# targets briefly when clang is there.
#
# Usage: scripts/run-tests.sh [--no-deps]
#
# The unit tests, the CLI test files of both passes and the fuzz run share
# a pool of TEST_JOBS workers (twice the cores unless the environment
# says), each file its own bats; FUZZ_SECONDS (3) is each fuzz target's
# time.  Their temporary files go in a folder of /dev/shm (tmpfs) when it
# has room, in TEST_TMPDIR when set.
#
# Every suite, and every CLI test file, prints TAP; its "ok" and "not ok"
# lines are counted, a plan ("1..N") that promises more tests than ran
# counts the missing ones as failed, and a suite that cannot build or run
# counts as one failure.  The last line is always "N passed, N failed";
# the exit status is 0 only when nothing failed.

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
TEST_TMP="" # the tests' $TMPDIR when it is ours to remove (test_tmpdir)
trap 'rm -rf "$LOGDIR" ${TEST_TMP:+"$TEST_TMP"}' EXIT

PASSED=0
FAILED=0
SUMMARY=()
CPU_SUMMARY=() # each pass's CPU seconds, after the counts

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

# count_tap NAME LOG STATUS: counts the TAP lines of a finished suite into
# TAP_OK and TAP_FAILED.
count_tap() {
	local name=$1 log=$2 status=$3 ok notok plan missing=0
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
	TAP_OK=$ok
	TAP_FAILED=$((notok + missing))
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

# unit_suites BUILD_DIR [make args...]: builds each unit test; those that
# built go to UNIT_JOBS, to run in the pool with the CLI tests (one at a
# time here, they left a core idle for a minute).
unit_suites() {
	local build=$1 src bin label bins=()
	shift
	# all at once first, on every core; each step below then shows what
	# failed to build, if anything did
	for src in tests/unit/test_*.c; do
		bins+=("$build/tests/$(basename "$src" .c)")
	done
	local all_built=0
	make -s -k -j"$JOBS" "$@" "${bins[@]}" >/dev/null 2>&1 && all_built=1
	for src in tests/unit/test_*.c; do
		[ -e "$src" ] || {
			echo "# no unit tests in tests/unit"
			return 0
		}
		bin="$build/tests/$(basename "$src" .c)"
		label="unit${build#build}/$(basename "$src" .c)"
		# a make each (half a second) only when one failed to build
		[ "$all_built" = 1 ] || step "$label (build)" make -s "$@" "$bin" ||
			continue
		UNIT_JOBS+=("run_unit $label $bin")
	done
}

# Test files about the Makefile or the Python package more than about
# chute's C code: run once, against the normal build, not again under the
# sanitizers (they would add minutes and test no more C).  layout.bats
# runs no chute at all (scripts/check-layout.py on build/'s objects): its
# second pass would be the first again.  docs.bats compares texts (man
# pages, --help, the changelog); the C it runs, help and the option
# parser's errors, every other file's sanitized pass runs too.
ONCE="makefile.bats python_dataset.bats python_install.bats ddp.bats layout.bats
	docs.bats"

# Test files that look at /dev/shm as a whole: readme.bats's tour uses the
# fixed ring name "tour"; python_stream.bats and shm.bats check that no
# chute.Stream ring ("chute-py-*") is left there, and any of the three
# running at the time would have one.  They run one after another, both
# passes, as one job of the pool that starts first (the longest: a worker
# of its own, instead of workers that wait on a lock); every other file
# runs alongside the rest.
ONE_AT_A_TIME="readme.bats python_stream.bats shm.bats"

# The slowest files start first, so that the last to start are short and
# the workers end together; the rest follow in name order.  Only the order
# depends on this list: every file runs whether it is here or not.  The
# order is that of a whole run's "slowest test files" (the longer of a
# file's two passes), longest first; since the helper, fixture and
# sanitizer-link changes, estimated from single files' CPU seconds
# (Python-heavy files, such as transform_ref.bats, gained the least).
SLOWEST="check.bats store.bats transform_ref.bats stream.bats chs_read.bats
	remote.bats pack.bats train.bats verify.bats ddp.bats split.bats
	versions.bats gc.bats docs.bats python_dataset.bats merge.bats
	python_install.bats record.bats ls_cat.bats batch_format.bats merge_remote.bats
	progress.bats transform.bats secrets.bats"

# The tests' temporary folders (bats's $BATS_TEST_TMPDIR, pytest's
# tmp_path, a test's mktemp: all under $TMPDIR) go in a folder of
# /dev/shm when that tmpfs has TEST_TMP_MIN_KB free.  The tests create
# and remove tens of thousands of files, and on the disk's ext4 each one
# costs system CPU that grows with the other jobs' writes (pack.bats's
# 24,000 generated files: 8.6 s of it there, 0.5 s on tmpfs): measured
# file by file, both passes cost about a fifth less CPU on tmpfs
# (pack.bats 18.3 and 24.3 CPU seconds instead of 8.4 and 11.4).  Test
# files that need another file system mount one (a full disk: a small
# tmpfs).  TEST_TMPDIR=DIR puts them in DIR instead (TEST_TMPDIR=/tmp:
# on the disk).  One test file holds at most about 220 MB (pack.bats),
# four run at once: the minimum leaves room for them and for the rings
# of the shm tests.
TEST_TMP_MIN_KB=$((1 << 20))

# test_tmpdir: sets TESTS_TMPDIR, the tests' TMPDIR, to a folder made in
# /dev/shm (also noted in TEST_TMP for the exit trap) when it has room.
test_tmpdir() {
	local free
	TESTS_TMPDIR=${TEST_TMPDIR:-${TMPDIR:-/tmp}}
	[ -z "${TEST_TMPDIR:-}" ] || return 0
	free=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	if [ "${free:-0}" -ge "$TEST_TMP_MIN_KB" ] &&
		TEST_TMP=$(mktemp -d /dev/shm/chute-tests.XXXXXX 2>/dev/null); then
		TESTS_TMPDIR=$TEST_TMP
	fi
}

# How many test files run at once: the tests wait on servers, pipes,
# sleeps and fsync about as much as they compute, so twice the cores.
TEST_JOBS=${TEST_JOBS:-$((JOBS * 2))}

# Seconds each fuzz target runs after replaying its regression inputs: a
# smoke test, from the seeds on CI's fresh machine, that the targets build,
# replay clean and run (`make fuzz`, 60 s a target, is the fuzzing).  A
# target's seconds are a core's for the whole run: 3 instead of 10 gave
# back 42 s of CPU of the pool's two cores.
FUZZ_SECS=${FUZZ_SECONDS:-3}

# in_list WORD LIST: whether WORD is one of the words of LIST (split at
# blanks and newlines).
in_list() {
	local w
	for w in $2; do
		[ "$w" = "$1" ] && return 0
	done
	return 1
}

# bats_files: the CLI test files, those of SLOWEST first.
bats_files() {
	local f n
	for n in $SLOWEST; do
		[ -e "tests/cli/$n" ] && echo "tests/cli/$n"
	done
	for f in tests/cli/*.bats; do
		in_list "${f##*/}" "$SLOWEST" || echo "$f"
	done
}

# job_log PASS FILE: where the pool's job for FILE in PASS writes its output.
job_log() {
	echo "$LOGDIR/$1-${2##*/}.log"
}

# cpu_cs FILE: writes to FILE the CPU time (user and system), in
# hundredths of a second, of the children this shell has waited for; not
# in a $(...), whose subshell has no children yet.  A job's wall seconds
# grow with whatever else runs; its CPU seconds are what it costs the
# pool.  Daemons a test file started and stopped (nginx) are not its
# children: their time is left out.
cpu_cs() {
	local -a t
	times >"$1"
	# the second line: the children's "XmY.YYYs XmY.YYYs"
	read -ra t < <(sed -n '2s/[ms]/ /gp' "$1")
	awk -v a="${t[0]}" -v b="${t[1]}" -v c="${t[2]}" -v d="${t[3]}" \
		'BEGIN { printf "%d\n", (a * 60 + b + c * 60 + d) * 100 + 0.5 }' >"$1"
}
CPU_BASE=0 # cpu_cs at the end of this shell's last job (report)

# report PASS FILE STATUS SECONDS: leaves the status, seconds and CPU
# seconds of a job next to its log for count_pass, then shows the log
# whole (the lock keeps jobs that end together apart).
report() {
	local log now cpu
	log=$(job_log "$1" "$2")
	cpu_cs "$log.cpu"
	read -r now <"$log.cpu"
	cpu=$(((now - CPU_BASE + 50) / 100))
	CPU_BASE=$now
	echo "$3 $4 $cpu" >"$log.status"
	# shellcheck disable=SC2016 # the arguments of sh -c
	flock "$LOGDIR/print.lock" sh -c 'echo "== $1: $2 (exit $3, $4s, CPU $5s)"; cat "$6"' \
		- "$1" "${2##*/}" "$3" "$4" "$cpu" "$log"
}

# run_bats PASS CHUTE_BIN FILE: the CLI tests of FILE against one binary.
run_bats() {
	local pass=$1 bin=$2 file=$3 start=$SECONDS
	local cmd=(env CHUTE_BIN="$ROOT/$bin" bats --tap --timing "$file")
	if [ "$pass" = cli-san ]; then
		export ASAN_OPTIONS=$SAN_ASAN UBSAN_OPTIONS=$SAN_UBSAN
	fi
	# the tests' normal_pass_only (tests/cli/helper.bash) reads it
	CHUTE_TEST_PASS=$pass "${cmd[@]}" >"$(job_log "$pass" "$file")" 2>&1
	report "$pass" "$file" $? $((SECONDS - start))
}

# run_unit LABEL BIN: one unit test (a job of the pool); under the
# sanitizers when BIN is build-san's.
run_unit() {
	local pass=${1%%/*} name=${1#*/} bin=$2 start=$SECONDS
	if [ "$pass" = unit-san ]; then
		export ASAN_OPTIONS=$SAN_ASAN UBSAN_OPTIONS=$SAN_UBSAN
	fi
	"$bin" >"$(job_log "$pass" "$name")" 2>&1
	report "$pass" "$name" $? $((SECONDS - start))
}

# count_units: each unit test's counts, a line of the summary each.
count_units() {
	local job label log status secs
	for job in "${UNIT_JOBS[@]}"; do
		label=$(echo "$job" | cut -d' ' -f2)
		log=$(job_log "${label%%/*}" "${label#*/}")
		if [ ! -f "$log.status" ]; then
			broken "$label" "it did not run"
			continue
		fi
		read -r status secs _ <"$log.status"
		count_tap "$label" "$log" "$status"
		note "$label" "$TAP_OK" "$TAP_FAILED" "$secs"
	done
}

# run_fuzz: the fuzz targets, briefly, as one test.
run_fuzz() {
	local log start=$SECONDS
	log=$(job_log fuzz run-fuzz)
	if [ ! -x scripts/run-fuzz.sh ]; then
		echo "not ok 1 - fuzz: scripts/run-fuzz.sh is missing" >"$log"
	elif ./scripts/run-fuzz.sh "$FUZZ_SECS" >"$log" 2>&1; then
		echo "ok 1 - fuzz" >>"$log"
	else
		echo "not ok 1 - fuzz" >>"$log"
	fi
	report fuzz run-fuzz 0 $((SECONDS - start))
}

# run_pytest: the Python package's own tests (python/tests, pytest) against
# the normal build, once: they test Python more than C.  Its TAP comes from
# python/tests/conftest.py ($CHUTE_TAP); pytest's own output follows it.
run_pytest() {
	local log start=$SECONDS status
	log=$(job_log pytest python-tests)
	(cd "$LOGDIR" && CHUTE_TAP="$log.tap" CHUTE_BIN="$ROOT/build/chute" \
		timeout 900 "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider \
		"$ROOT/python/tests") >"$log.out" 2>&1
	status=$?
	cat "$log.tap" "$log.out" >"$log" 2>/dev/null
	report pytest python-tests "$status" $((SECONDS - start))
}

# run_one_at_a_time: the jobs of ONE_AT_A_TIME_JOBS (run_bats command
# lines), one after another.
run_one_at_a_time() {
	local job
	for job in "${ONE_AT_A_TIME_JOBS[@]}"; do
		# shellcheck disable=SC2086 # a job is words
		$job
	done
}

# pool JOB...: runs each JOB (a command line of words) in the background,
# TEST_JOBS at a time, in the order given.
pool() {
	local job
	for job; do
		while [ "$(jobs -rp | wc -l)" -ge "$TEST_JOBS" ]; do
			wait -n
		done
		# shellcheck disable=SC2086 # a job is words
		$job &
	done
	wait
}

# count_pass NAME FILE...: the counts of one pass, added up over its files,
# each checked against its own plan and exit status (count_tap).
count_pass() {
	local name=$1 f log status secs cpu ok=0 failed=0 took=0 cpus=0
	shift
	for f; do
		log=$(job_log "$name" "$f")
		if [ ! -f "$log.status" ]; then
			echo "not ok - $name: ${f##*/} did not run"
			failed=$((failed + 1))
			continue
		fi
		read -r status secs cpu <"$log.status"
		count_tap "$name/${f##*/}" "$log" "$status"
		ok=$((ok + TAP_OK))
		failed=$((failed + TAP_FAILED))
		took=$((took + secs))
		cpus=$((cpus + cpu))
		printf '%5d %5d  %s\n' "$cpu" "$secs" "$name/${f##*/}" >>"$LOGDIR/seconds"
	done
	note "$name (seconds of its files)" "$ok" "$failed" "$took"
	CPU_SUMMARY+=("$(printf '%-32s %26s  %4ss' "$name (CPU seconds)" "" "$cpus")")
}

if [ "$DEPS" = 1 ]; then
	step deps ./scripts/install-deps.sh
fi

# The sanitizer build: any leak, overflow or undefined behaviour aborts the
# process.  abort_on_error for UBSan too: its default exit status, 1, would
# pass for "verify found a problem" in `run -1`.  (At -O1 gcc warns of
# other things than at -O2, and -Werror stops the build: the Makefile's
# -O2 it is.)
SAN=address,undefined
SAN_ASAN=detect_leaks=1:abort_on_error=1
SAN_UBSAN=print_stacktrace=1:halt_on_error=1:abort_on_error=1

PASSES="" # the passes whose binary built
UNIT_JOBS=() # run_unit command lines, for the pool
if step build make -s -j"$JOBS"; then
	PASSES="cli"
	unit_suites build
fi
if step build-san make -s -j"$JOBS" SANITIZE=$SAN; then
	PASSES="$PASSES cli-san"
	ASAN_OPTIONS=$SAN_ASAN UBSAN_OPTIONS=$SAN_UBSAN \
		unit_suites build-san SANITIZE=$SAN
fi

# The CLI tests against both binaries and the fuzz targets, in one pool:
# the one-at-a-time files first (one job, the longest), the fuzz run, then
# each file's sanitized pass (the longer) before its normal one.
CLI_FILES=() SAN_FILES=() JOBLIST=() ONE_AT_A_TIME_JOBS=()
if ! command -v bats >/dev/null; then
	for p in $PASSES; do broken "$p" "bats is not installed (scripts/install-deps.sh)"; done
	PASSES=""
elif [ ! -e "$(echo tests/cli/*.bats | cut -d' ' -f1)" ]; then
	for p in $PASSES; do broken "$p" "no tests/cli/*.bats"; done
	PASSES=""
fi
FUZZ=0
if command -v clang >/dev/null; then
	FUZZ=1
	JOBLIST+=("run_fuzz")
else
	echo "# skip fuzz: clang not found"
fi
# add_job JOB: JOB goes to the pool, or to the one-at-a-time chain.
add_job() {
	if in_list "${1##*/}" "$ONE_AT_A_TIME"; then
		ONE_AT_A_TIME_JOBS+=("$1")
	else
		JOBLIST+=("$1")
	fi
}
for f in $(bats_files); do
	if in_list cli-san "$PASSES"; then
		if in_list "${f##*/}" "$ONCE"; then
			echo "# cli-san: ${f##*/} runs in the normal pass only"
		else
			SAN_FILES+=("$f")
			add_job "run_bats cli-san build-san/chute $f"
		fi
	fi
	if in_list cli "$PASSES"; then
		CLI_FILES+=("$f")
		add_job "run_bats cli build/chute $f"
	fi
done
# pytest runs streams with shm=True: in the one-at-a-time chain, with the
# files that look at /dev/shm as a whole
PYTEST=0
if in_list cli "$PASSES"; then
	PYTEST=1
	ONE_AT_A_TIME_JOBS+=("run_pytest")
fi
# the unit tests last: a few seconds each, they fill the workers' ends
JOBLIST+=("${UNIT_JOBS[@]}")
echo "== $PASSES$([ $FUZZ = 1 ] && echo " fuzz") and ${#UNIT_JOBS[@]} unit tests: $((${#JOBLIST[@]} + ${#ONE_AT_A_TIME_JOBS[@]})) jobs, $TEST_JOBS at a time (${#ONE_AT_A_TIME_JOBS[@]} of them one after another)"
[ ${#ONE_AT_A_TIME_JOBS[@]} -eq 0 ] || JOBLIST=("run_one_at_a_time" "${JOBLIST[@]}")
test_tmpdir
echo "== the tests' TMPDIR: $TESTS_TMPDIR"
start=$SECONDS
TMPDIR=$TESTS_TMPDIR pool "${JOBLIST[@]}"
POOL_SECS=$((SECONDS - start))
count_units
in_list cli "$PASSES" && count_pass cli "${CLI_FILES[@]}"
in_list cli-san "$PASSES" && count_pass cli-san "${SAN_FILES[@]}"
[ $FUZZ = 1 ] && count_pass fuzz run-fuzz
[ $PYTEST = 1 ] && count_pass pytest python-tests
SUMMARY+=("$(printf '%-32s %26s  %4ss' "(the above, side by side)" "" "$POOL_SECS")")
if [ -s "$LOGDIR/seconds" ]; then
	echo "== the costliest test files (CPU seconds, wall seconds)"
	sort -rn "$LOGDIR/seconds" | head -n 15
fi

echo "== summary"
printf '%s\n' "${SUMMARY[@]}" "${CPU_SUMMARY[@]}"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
