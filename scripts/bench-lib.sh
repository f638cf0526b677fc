# bench-lib.sh - helpers the benchmark scripts share; sourced, not run.

calc() { awk "BEGIN { printf \"%s\", $1 }"; }
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
