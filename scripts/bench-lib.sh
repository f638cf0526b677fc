# bench-lib.sh - helpers the benchmark scripts share; sourced, not run.

calc() { awk "BEGIN { printf \"%s\", $1 }"; }
# pack_version CHUTE: what a dataset packed by CHUTE with the defaults
# depends on; cached datasets are packed again when it changes.
pack_version() { echo "$("$1" --version), shard format 1.1"; }
median() { printf '%s\n' "$@" | sort -g | sed -n "$(($# / 2 + 1))p"; }
sum_sizes() { stat -c %s "$@" | awk '{ s += $1 } END { printf "%d", s }'; }

# cached STAMP PARAMS CMD...: runs CMD unless the file STAMP holds PARAMS;
# the stamp is written last, so an interrupted build is redone.
cached() {
	local stamp=$1 params=$2
	shift 2
	if [ "$(cat "$stamp" 2>/dev/null)" != "$params" ]; then
		rm -f "$stamp"
		"$@"
		echo "$params" >"$stamp"
	fi
}

# The helpers below use the caller's RUNS (runs of each command), RUNS_DIR
# (where the runs' output goes) and die.

# rounds FUNC...: RUNS rounds, each running every FUNC once, so that a burst
# of load elsewhere on the machine falls on all of them alike.  Appends the
# stdout of FUNC's runs to $RUNS_DIR/FUNC.out; sets T[FUNC] to its median wall
# time in seconds.
declare -A T
rounds() {
	local f r t0 t1
	local -A times=()
	for f; do : >"$RUNS_DIR/$f.out"; done
	for ((r = 0; r < RUNS; r++)); do
		for f; do
			t0=$(date +%s.%N)
			"$f" >>"$RUNS_DIR/$f.out"
			t1=$(date +%s.%N)
			times[$f]+=" $(calc "$t1 - $t0")"
		done
	done
	# shellcheck disable=SC2086 # one time a word
	for f; do T[$f]=$(median ${times[$f]}); done
}

# rate_of FUNC COLUMN_A COLUMN_B: the median over FUNC's runs of A / B, from
# the lines of $RUNS_DIR/FUNC.out.
rate_of() {
	# shellcheck disable=SC2046 # one rate a word
	median $(awk -v a="$2" -v b="$3" '{ printf "%f\n", $a / $b }' "$RUNS_DIR/$1.out")
}

# expect_samples FUNC N: every run of FUNC read N samples (the first word
# of each line of its output).
expect_samples() {
	local bad
	bad=$(awk -v n="$2" '$1 != n' "$RUNS_DIR/$1.out")
	[ -z "$bad" ] || die "$1 read '$bad' samples, expected $2"
}

int() { calc "sprintf(\"%d\", $1 + 0.5)"; }
ratio() { calc "sprintf(\"%.2f\", $1 / $2)"; }
