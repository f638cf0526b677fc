#!/usr/bin/env bats
# chute verify REMOTE[@TAG|@ID]: a version checked where it lies, on a
# folder, nginx and s3rver: its manifest, every shard object's structure
# and hash, its split files; nothing written locally.

load helper
load parts
load servers

# A dataset of 40 samples in two shards of several blocks, with splits.
setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images src --count 40 \
		--size 500 --classes 2 --seed 3 >/dev/null &&
		chute pack -q -s 20s -b 4k --label-from dir -o ds src >/dev/null &&
		chute split -q ds --val 0.2 >/dev/null
}

setup() {
	chute_setup
	cp -r "$BATS_FILE_TMPDIR/ds" ds
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache HOME=$BATS_TEST_TMPDIR/home
	chute push ds remote --tag v1 >/dev/null || fail "push failed"
	R=file://$PWD/remote
}

teardown() {
	stop_servers
}

# object EXT N: the path of the Nth (from 1, by name) cas/ object of EXT.
object() {
	find remote/cas -name "*.$1" | LC_ALL=C sort | sed -n "${2}p"
}

# flip FILE OFFSET: one bit of FILE flipped.
flip() {
	"$PYTHON" -c 'import sys
p, o = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[o] ^= 1; open(p, "wb").write(b)' "$1" "$2"
}

@test "verify remote: a version checks where it lies, by url and by name, nothing written locally" {
	local here remote
	run -0 chute verify ds
	local want=$output
	here=$(find . -path ./remote -prune -o -print | LC_ALL=C sort)
	remote=$(snapshot remote)
	run -0 chute verify "$R@v1"
	assert_output "$want"
	run -0 chute verify "$R"
	assert_output "$want"
	chute remote --user add store "$PWD/remote" >/dev/null
	run -0 chute verify store@v1 --json
	assert_equal "$(jq -c '[.ok, .shards, .blocks, .samples]' <<<"$output")" '[true,2,8,40]'
	# --part: the parts together check every shard once
	run -0 chute verify --json --part 0/2 store
	assert_equal "$(jq .shards <<<"$output")" 1
	run -0 chute verify --json --part 1/2 store
	assert_equal "$(jq .shards <<<"$output")" 1
	# no cache, no temporary, nothing anywhere but the user's config
	assert_equal "$(find . -path ./remote -prune -o -path ./.config -prune -o -print | LC_ALL=C sort)" "$here"
	[ ! -e cache ] && [ ! -e home ]
	assert_equal "$(snapshot remote)" "$remote"
}

@test "verify remote: a damaged, short or missing object exits 1 naming it" {
	local chs ids short
	chs=$(object chs 1)
	short=$(object chs 2)
	ids=$(object ids 1)
	flip "$chs" 900
	truncate -s -100 "$short"
	rm "$ids"
	run -1 chute verify "$R@v1"
	assert_output --partial "$PWD/$ids: missing from the remote (splits/"
	assert_output --regexp "$PWD/$chs: block [0-9]+ at byte [0-9]+: sample '[^']+': checksum mismatch in block [0-9]+ of shards/ds-00000[01].chs"
	assert_output --partial "$PWD/$chs: file hash "
	assert_output --partial "$PWD/$short: size "
	assert_output --partial "$PWD/$short: bad footer magic"
	assert_line "FAILED: 6 problems in 3 shards"
}

@test "verify remote: a damaged manifest exits 1; a missing tag, version or remote exits 2; --deep is refused" {
	local id
	id=$(cat remote/tags/v1)
	run -2 chute verify "$R@nope"
	assert_output --partial "no tag 'nope' on $R; its tags: latest, v1"
	run -2 chute verify "$R@$(printf '%032d' 0)"
	assert_output --partial "no version 00000000000000000000000000000000"
	run -2 chute verify "file://$PWD/none@v1"
	assert_output "chute verify: no remote at $PWD/none: no such folder"
	run -2 chute verify "remote@v1"
	assert_output --partial "'remote' is a folder: a reference names a folder remote by its url, file://PATH@TAG"
	run -2 chute verify --deep "$R@v1"
	assert_output --partial "--deep decodes every block: pull '$R@v1' and verify the folder"
	"$PYTHON" - "remote/versions/$id.json" <<'EOF'
import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["samples"] += 1
json.dump(m, open(p, "w"), indent=2)
EOF
	run -1 chute verify "$R@v1"
	assert_line --index 0 "$R@v1: samples: 41, but the shards hold 40 ($PWD/remote/versions/$id.json)"
}

@test "verify remote: an s3 remote (s3rver) and an http one (nginx), a damaged object named by its url" {
	start_s3rver s3 bkt
	chute push ds s3://bkt/repo --tag v1 >/dev/null
	run -0 chute verify s3://bkt/repo@v1
	assert_output --partial "ok: 2 shards, 8 blocks, 40 samples"
	local obj
	obj=$(cd s3/bkt/repo && find cas -name '*.chs._S3rver_object' | LC_ALL=C sort | head -1)
	flip "s3/bkt/repo/$obj" 900
	run -1 chute verify s3://bkt/repo@v1
	assert_output --partial "s3://bkt/repo/${obj%._S3rver_object}: file hash "
	start_nginx www
	chute push ds "$NGINX_URL/data" --tag v1 >/dev/null
	run -0 chute verify "$NGINX_URL/data@v1"
	assert_output --partial "ok: 2 shards, 8 blocks, 40 samples"
}
