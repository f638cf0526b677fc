#!/usr/bin/env bats
# Output bytes held still: scripts/stream-digests.sh prints the SHA-256 of
# a fixed set of packs and streams over seeded data (images through the
# train and eval transforms, text in every format, window shuffle, a rank,
# raw blocks, a mix, a resume); tests/cli/golden/streams.sha256 holds them
# as committed.  A change meant to keep every output byte (a faster read
# path, another decoder) must print the same; one meant to change them
# regenerates the file in the same commit and says why.

load helper

@test "golden: every pack and stream of the fixed set gives the committed bytes, with 1 and 3 workers alike" {
	TMPDIR=$BATS_TEST_TMPDIR run -0 --separate-stderr \
		"$REPO_ROOT/scripts/stream-digests.sh" "$CHUTE_BIN"
	local want
	want=$(cat "$REPO_ROOT/tests/cli/golden/streams.sha256")
	if [ "$output" != "$want" ]; then
		diff <(echo "$want") <(echo "$output") || true
		fail "output bytes changed; if meant, regenerate with: scripts/stream-digests.sh build/chute >tests/cli/golden/streams.sha256"
	fi
	[ "${#lines[@]}" -eq 12 ] || fail "expected 12 digests, got ${#lines[@]}"
}

@test "golden: a changed byte of a stream is caught" {
	# the comparison can fail: one digest edited is a difference
	sed '1s/^./0/; 1s/^00/11/' "$REPO_ROOT/tests/cli/golden/streams.sha256" >edited
	run -1 cmp -s edited "$REPO_ROOT/tests/cli/golden/streams.sha256"
}
