# parts.bash - what the tests of chute merge share (merge.bats,
# merge_remote.bats): a text dataset, its parts, and a snapshot of files.

# gen_text DIR [COUNT]: COUNT (default 120) samples of two fields.
gen_text() {
	cached _gen_text "$@"
}
_gen_text() {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" text "$1" --count "${2:-120}" \
		--seed 1 >/dev/null || fail "scripts/gen-data.py text $1 failed"
}

# pack_parts DIR N [OPTIONS...]: DIR/0 ... DIR/N-1 packed from src.
pack_parts() {
	local dir=$1 n=$2 i
	shift 2
	for ((i = 0; i < n; i++)); do
		chute pack -q -s 20s "$@" --part "$i/$n" -o "$dir/$i" src \
			>/dev/null || fail "chute pack --part $i/$n failed"
	done
}

# man_example PAGE NAME: the example that follows the comment
# '.\" test: NAME' in man/PAGE, unescaped as mandoc prints it.
man_example() {
	awk -v name="$2" '$0 == ".\\\" test: " name { on = 1; next }
		on && /^\.EX$/ { ex = 1; next }
		ex && /^\.EE$/ { exit }
		ex { print }' "$REPO_ROOT/man/$1" |
		sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g'
}

# snapshot DIR: every file under DIR with its hash, one a line.
snapshot() {
	(cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum)
}
