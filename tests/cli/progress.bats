#!/usr/bin/env bats
# The progress line: drawn on standard error only when it is a terminal
# (script(1) gives chute one), with the phase, done/total, rate and eta;
# nothing without a terminal or with -q; wiped before an error.  And -q
# taken by every command.

load helper

# need_pty: script(1), and a pseudo-terminal for it (a chroot without
# /dev/pts has none).
need_pty() {
	command -v script >/dev/null || skip "script(1) is not installed"
	script -qec true /dev/null >/dev/null 2>&1 ||
		skip "script(1) cannot open a pseudo-terminal (is /dev/pts mounted?)"
}

# on_pty CMD...: runs chute CMD with a terminal for its output, both
# streams in $output (a phase is drawn when it starts: no timing needed).
on_pty() {
	run script -qec "chute $*" /dev/null
}

# A line as drawn: "\rPHASE: DONE/TOTAL UNIT, ..., RATE/s, eta TIME".
drawn() { # PHASE UNIT
	printf '\r%s: [0-9]+/[0-9]+ %s, .*/s, eta [0-9?]' "$1" "$2"
}

setup() {
	chute_setup
	mkfixture src
	chute pack src -o ds >/dev/null
}

@test "progress: verify on a terminal shows hashing, shards, bytes and eta, then wipes the line" {
	need_pty
	on_pty verify ds
	assert_success
	assert_output --regexp "$(drawn hashing shards)"
	assert_output --regexp $'eta [^\r]*\r +\rok: 1 shard,'
}

@test "progress: verify --deep draws one phase, its blocks and file hashes counted together" {
	need_pty
	on_pty verify --deep ds
	assert_success
	assert_output --regexp "$(drawn 'checking blocks' blocks)"
	refute_output --partial "hashing"
}

@test "progress: each command that works long shows its phases on a terminal" {
	need_pty
	on_pty pack src -o ds2
	assert_output --regexp "$(drawn writing samples)"
	on_pty export ds -o tars
	assert_output --regexp "$(drawn writing samples)"
	on_pty status ds
	assert_output --regexp "$(drawn checking files)"
	on_pty diff ds ds2
	assert_output --regexp "$(drawn scanning samples)"
	on_pty check ds
	assert_output --regexp "$(drawn checking samples)"
	on_pty split ds --val 0.2
	assert_success
	assert_output --regexp "$(drawn assigning samples)"
}

@test "progress: merge shows checking and placing shards" {
	need_pty
	chute pack -q src --part 0/2 -o p0 >/dev/null
	chute pack -q src --part 1/2 -o p1 >/dev/null
	on_pty merge p0 p1 -o merged
	assert_success
	assert_output --regexp "$(drawn checking shards)"
	assert_output --regexp "$(drawn placing shards)"
	run -0 --separate-stderr chute merge p0 p1 -o merged2
	[ -z "$stderr" ] || fail "chute merge wrote on stderr: $stderr"
}

@test "progress: push shows checking remote, hashing and uploading; pull checking and downloading" {
	need_pty
	on_pty push ds remote
	assert_success
	assert_output --regexp "$(drawn 'checking remote' files)"
	assert_output --regexp "$(drawn hashing files)"
	assert_output --regexp "$(drawn uploading files)"
	refute_output --partial "0.0/0.0 MB"
	on_pty pull remote@latest got
	assert_success
	assert_output --regexp "$(drawn checking files)"
	assert_output --regexp "$(drawn downloading files)"
}

@test "progress: stream -o FILE and bench draw one, in batches; stream to a pipe and -q draw none" {
	need_pty
	on_pty stream -b 4 -e 2 ds -o out.bin
	assert_success
	# 2 epochs of the fixture's samples, in batches of 4
	local batches
	batches=$(chute stream --count -b 4 ds | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["batches"])')
	assert_output --regexp "^$(drawn streaming batches)"
	assert_output --partial "/$((2 * batches)) batches"
	assert_output --regexp $'eta [^\r]*\r +\r$'
	on_pty bench -b 4 ds
	assert_output --regexp "$(drawn streaming batches)"
	on_pty stream -q -b 4 ds -o out.bin
	assert_output ""
	run -0 script -qec "chute stream -b 4 -f jsonl ds | wc -l" /dev/null
	[[ $output != *$'\r'*eta* ]] || fail "a stream to a pipe drew a line: $output"
}

@test "progress: nothing is drawn when standard error is not a terminal" {
	local cmd
	for cmd in "verify ds" "status ds" "export ds -o tars" "diff ds ds" \
		"pack src -o ds2" "push ds remote" "pull remote@latest got" \
		"split ds --val 0.2" "stream ds -o out.bin"; do
		run -0 --separate-stderr chute $cmd
		[ -z "$stderr" ] || fail "chute $cmd wrote on stderr: $stderr"
	done
	run -1 --separate-stderr chute check ds
	[ -z "$stderr" ] || fail "chute check wrote on stderr: $stderr"
}

@test "progress: -q draws nothing on a terminal" {
	need_pty
	local cmd
	for cmd in "verify -q ds" "status ds -q" "export -q ds -o tars" \
		"diff -q ds ds" "pack -q src -o ds2" "push --quiet ds remote" \
		"pull -q remote@latest got" "check -q ds"; do
		on_pty $cmd
		[[ $output != *$'\r'*eta* ]] ||
			fail "chute $cmd drew a progress line: $output"
	done
}

@test "progress: an error starts on a clean line, the progress line wiped" {
	need_pty
	chute push ds remote >/dev/null
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" mixed src2 --seed 2 >/dev/null
	chute pack src2 -o other >/dev/null
	flip_byte "$(shard_of other)" 100
	on_pty push other remote
	assert_failure 1
	assert_output --regexp $'\rhashing: [^\r]*\r +\rchute push: shards/other-000000.chs does not match'
}

@test "progress: a problem verify finds is printed on a line of its own" {
	need_pty
	flip_byte "$(shard_of ds)" 100
	on_pty verify ds
	assert_failure 1
	assert_output --regexp $'\r +\r[^\r]*ds-000000.chs'
}

@test "progress: every command takes -q and --quiet" {
	local cmd
	for cmd in $(chute help | awk '/^commands:$/ { on = 1; next }
			on && /^$/ { exit } on { print $1 }'); do
		run -0 chute "$cmd" -q --help
		assert_output --partial "-q, --quiet"
		run -0 chute "$cmd" --quiet --help
	done
}

@test "progress: -q keeps errors" {
	run -2 chute verify -q no-such-dataset
	assert_output --partial "chute verify: cannot open 'no-such-dataset'"
}
