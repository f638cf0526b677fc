#!/usr/bin/env bats
# chute tags and chute gc: what a remote holds, and removing what no kept
# version needs, on a folder, nginx (WebDAV, JSON index) and s3rver.

load helper
load servers
load parts

teardown() {
	stop_servers
}

teardown_file() {
	stop_shared_s3rver
}

# remote KIND: starts what KIND needs; sets URL and ROOT (where the
# objects lie on disk).
remote() {
	case $1 in
	dir)
		URL=file://$BATS_TEST_TMPDIR/remote
		ROOT=$BATS_TEST_TMPDIR/remote
		;;
	nginx)
		start_nginx "$BATS_TEST_TMPDIR/www"
		URL=$NGINX_URL/repo
		ROOT=$BATS_TEST_TMPDIR/www/repo
		;;
	s3)
		# one s3rver for the file (a start is a second of CPU), a
		# folder of its bucket a test
		shared_s3rver bkt
		URL=s3://bkt/$S3_PREFIX/repo
		ROOT=$BATS_FILE_TMPDIR/s3rver/data/bkt/$S3_PREFIX/repo
		;;
	esac
}

# version N COUNT [TAG...]: packs COUNT text samples into ds (each new
# version's parent the one before) and pushes it with the tags; sets
# ID_N to its id and KEYS_N to its cas/ keys, one a line.
version() {
	local n=$1 count=$2 tag args=()
	shift 2
	rm -rf src
	gen_text src "$count"
	chute pack -q -s 20s -o ds src >/dev/null || fail "pack of version $n"
	for tag in "$@"; do
		args+=(--tag "$tag")
	done
	chute push ds "$URL" "${args[@]}" >/dev/null || fail "push of version $n"
	printf -v "ID_$n" '%s' "$(mjson ds 'm["id"]')"
	printf -v "KEYS_$n" '%s' "$(mjson ds '"\n".join(sorted("cas/%s/%s.chs" % (s["xxh3_128"][:2], s["xxh3_128"]) for s in m["shards"]))')"
}

# has KEY: whether the remote still holds KEY.
has() {
	[ -e "$ROOT/$1" ] || [ -e "$ROOT/$1._S3rver_object" ]
}

# pulled REF DIR ID: pulls REF into DIR, checks the id and verifies.
pulled() {
	run -0 chute pull "$1" "$2"
	assert_equal "$(mjson "$2" 'm["id"]')" "$3"
	run -0 chute verify "$2"
}

# only_in A B: the lines of A that B lacks.
only_in() {
	comm -23 <(sort <<<"$1") <(sort <<<"$2")
}

# In the sanitizer pass the nginx and s3rver repeats of a case skip (all
# but one: gc's removals through s3rver): gc, push and pull reach a remote
# through the store's calls alone (include/chute/store.h), whose code for
# each kind of remote runs there in store.bats (put, get, stat, list,
# delete, getmany), remote.bats (push and pull over nginx and s3rver) and
# here in "tags: nginx and s3rver list the same" and the s3rver case of
# "an untagged version's own shards go with --yes".
GC_ELSEWHERE="the folder case, and the remotes' in store.bats and remote.bats"

# ------------------------------------------------------------------

gc_between_pushes() {
	remote "$1"
	version 0 50            # only 'latest', moved away by the next push
	version 1 60 a
	run -0 chute gc "$URL" --keep a --grace 0 --yes
	assert_output --partial "kept 1 version "
	version 2 100 b
	run -0 chute gc "$URL" --keep a --keep b --grace 0 --yes
	assert_output --partial "kept 2 versions"
	pulled "$URL@a" one "$ID_1"
	pulled "$URL@b" two "$ID_2"
	pulled "$URL" latest "$ID_2"
	# what only the untagged version held is gone, manifest and shards
	local key gone
	gone=$(only_in "$KEYS_0" "$KEYS_1"$'\n'"$KEYS_2")
	[ -n "$gone" ] || fail "the versions share every shard: no test"
	for key in $gone; do
		! has "$key" || fail "$key of the untagged version is still there"
	done
	! has "versions/$ID_0.json"
	run -2 chute pull "$URL@$ID_0" zero
	assert_output --partial "no version $ID_0"
}

@test "gc: a gc between two pushes loses nothing tagged (folder)" {
	gc_between_pushes dir
}

@test "gc: a gc between two pushes loses nothing tagged (nginx)" {
	normal_pass_only "$GC_ELSEWHERE"
	gc_between_pushes nginx
}

@test "gc: a gc between two pushes loses nothing tagged (s3rver)" {
	normal_pass_only "$GC_ELSEWHERE"
	gc_between_pushes s3
}

untagged_goes_with_yes() {
	remote "$1"
	version 0 50
	version 1 60 a
	local gone
	gone=$(only_in "$KEYS_0" "$KEYS_1")
	[ -n "$gone" ] || fail "the versions share every shard: no test"
	snapshot "$ROOT" >before

	run -0 chute gc "$URL" --grace 0
	assert_output --partial "would remove versions/$ID_0.json"
	for key in $gone; do
		assert_output --partial "would remove $key"
	done
	assert_output --partial "(a dry run: --yes removes)"
	snapshot "$ROOT" >after
	diff before after || fail "a dry run changed the remote"

	run -0 chute gc "$URL" --grace 0 --json
	assert_equal "$(jq -r .dry_run <<<"$output")" true
	assert_equal "$(jq -r '.removed[].key' <<<"$output" | grep -c '^cas/')" \
		"$(wc -l <<<"$gone")"
	assert_equal "$(jq -r '.kept_versions[]' <<<"$output")" "$ID_1"

	run -0 chute gc "$URL" --grace 0 --yes
	assert_output --partial "removed $(($(wc -l <<<"$gone") + 1)) objects"
	for key in $gone; do
		! has "$key" || fail "$key is still there"
	done
	for key in $KEYS_1; do
		has "$key" || fail "$key of the tagged version went"
	done
	run -0 chute gc "$URL" --grace 0 --yes
	assert_output --partial "removed 0 objects"
}

@test "gc: an untagged version's own shards go with --yes and not before (folder)" {
	untagged_goes_with_yes dir
}

@test "gc: an untagged version's own shards go with --yes and not before (s3rver)" {
	untagged_goes_with_yes s3
}

@test "gc: the grace period keeps what was written recently, by the objects' times" {
	remote dir
	version 0 50
	version 1 60 a
	# what an interrupted push leaves: an object no manifest names yet
	local orphan=cas/00/00112233445566778899aabbccddeeff.chs
	mkdir -p "$ROOT/cas/00"
	echo partial >"$ROOT/$orphan"
	run -0 chute gc "$URL" --yes
	assert_output --partial "removed 0 objects"
	# a manifest just written keeps its version, tagged or not yet
	assert_output --partial "kept 2 versions"
	assert_output --partial "; 1 newer object, 8 B, left for the grace period"
	run -0 chute gc "$URL" --grace 3h --yes
	assert_output --partial "removed 0 objects"
	# written two hours ago: past the default hour, within 3h
	find "$ROOT" -type f -exec touch -d '2 hours ago' {} +
	run -0 chute gc "$URL" --grace 3h --yes
	assert_output --partial "removed 0 objects"
	run -0 chute gc "$URL" --yes
	assert_output --partial "removed $orphan"
	assert_output --partial "kept 1 version "
	! has "versions/$ID_0.json"
	! has "$orphan"
	pulled "$URL@a" one "$ID_1"
}

@test "gc: --drop-tag removes the tag, then what only its version needed" {
	remote dir
	version 1 60 a
	version 2 100 b
	run -0 chute gc "$URL" --grace 0 --drop-tag a
	assert_output --partial "would drop tag a"
	[ -e "$ROOT/tags/a" ]
	run -0 chute gc "$URL" --grace 0 --drop-tag a --yes
	assert_output --partial "dropped tag a"
	[ ! -e "$ROOT/tags/a" ]
	! has "versions/$ID_1.json"
	pulled "$URL@b" two "$ID_2"
	run -2 chute gc "$URL" --drop-tag nosuch
	assert_output --partial "no tag 'nosuch'"
	assert_output --partial "its tags: b, latest"
}

# A tag that is a symbolic link is read through it by pull: gc lists it the
# same way, and keeps its version.
linked_tags() {
	remote "$1"
	version 1 60 one
	version 2 100 two
	version 3 70
	mv "$ROOT/tags/one" "$ROOT/t"
	ln -s ../t "$ROOT/tags/only"
	# a name no listing shows (a dot file), reached through a tag
	mv "$ROOT/tags/two" "$ROOT/tags/.two"
	ln -s .two "$ROOT/tags/second"
	run -0 chute tags "$URL"
	assert_line --regexp "^only +$ID_1 "
	assert_line --regexp "^second +$ID_2 "
	run -0 chute gc "$URL" --grace 0s --yes
	assert_output --partial "kept 3 versions"
	pulled "$URL@only" one "$ID_1"
	pulled "$URL@second" two "$ID_2"
	# a link that points nowhere names nothing, for pull as for gc
	ln -s ../nowhere "$ROOT/tags/dangling"
	run -0 chute gc "$URL" --grace 0s --yes
	run -2 chute pull "$URL@dangling" gone
	assert_output --partial "no tag 'dangling'"
}

@test "gc: a tag that is a symbolic link keeps its version (folder)" {
	linked_tags dir
}

@test "gc: a tag that is a symbolic link keeps its version (nginx)" {
	normal_pass_only "$GC_ELSEWHERE"
	linked_tags nginx
}

@test "gc: every tag is kept, even one --keep does not name" {
	remote dir
	version 1 60 a
	version 2 100 b
	run -0 chute gc "$URL" --keep b --grace 0 --yes
	assert_output --partial "kept 2 versions"
	pulled "$URL@a" one "$ID_1"
}

@test "gc: --keep keeps an untagged version by its id" {
	remote dir
	version 0 50
	version 1 60 a
	run -0 chute gc "$URL" --keep "$ID_0" --grace 0 --yes
	assert_output --partial "removed 0 objects"
	pulled "$URL@$ID_0" zero "$ID_0"
}

@test "gc: bad input is refused before anything is removed" {
	remote dir
	version 0 50
	version 1 60 a
	snapshot "$ROOT" >before
	run -2 chute gc "$URL" --keep nosuch --grace 0 --yes
	assert_output --partial "no tag 'nosuch'"
	assert_output --partial "its tags: a, latest"
	run -2 chute gc "$URL" --grace soon
	assert_output --partial "not a duration"
	run -2 chute gc
	assert_output --partial "no remote given and no default remote"
	# a tag naming a manifest that is not there: the remote is damaged
	echo "$ID_0" >"$ROOT/tags/broken"
	rm "$ROOT/versions/$ID_0.json"
	snapshot "$ROOT" >before
	run -2 chute gc "$URL" --grace 0 --yes
	assert_output --partial "tag 'broken'"
	assert_output --partial "nothing was removed"
	snapshot "$ROOT" >after
	diff before after
}

@test "gc: another gc's lease stops gc, nothing removed; an expired one is replaced" {
	remote dir
	version 0 50
	version 1 60 a
	mkdir -p "$ROOT/gc"
	echo "$(($(date +%s) + 600)) chute-gc elsewhere 1 0" >"$ROOT/gc/lease"
	snapshot "$ROOT" >before
	run -2 chute gc "$URL" --grace 0 --yes
	assert_output --partial "another chute gc holds $ROOT/gc/lease"
	assert_output --partial "nothing was removed"
	snapshot "$ROOT" >after
	diff before after
	# a gc that died: its lease ran out
	echo "$(($(date +%s) - 1)) chute-gc elsewhere 1 0" >"$ROOT/gc/lease"
	run -0 chute gc "$URL" --grace 0 --yes
	assert_output --partial "removed versions/$ID_0.json"
	[ ! -e "$ROOT/gc/lease" ]
	pulled "$URL@a" one "$ID_1"
}

@test "gc: objects that are not chute's are left alone" {
	remote dir
	version 0 50
	version 1 60 a
	mkdir -p "$ROOT/cas/zz" "$ROOT/versions"
	echo mine >"$ROOT/cas/zz/notes.txt"
	echo mine >"$ROOT/versions/README"
	find "$ROOT" -type f -exec touch -d '2 hours ago' {} +
	run -0 chute gc "$URL" --yes
	[ -e "$ROOT/cas/zz/notes.txt" ] && [ -e "$ROOT/versions/README" ]
}

# ------------------------------------------------------------------
# chute tags

@test "tags: tags sorted with their versions, untagged versions marked" {
	remote dir
	version 0 50
	version 1 60 zeta alpha
	run -0 chute tags "$URL"
	assert_line --index 0 --regexp "^alpha       $ID_1  [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} UTC  60 samples, [0-9.]+ kB\$"
	assert_line --index 1 --regexp "^latest      $ID_1 "
	assert_line --index 2 --regexp "^zeta        $ID_1 "
	assert_line --index 3 --regexp "^\\(untagged\\)  $ID_0 .*  50 samples, "
	assert_equal "${#lines[@]}" 4

	run -0 chute tags --json "$URL"
	assert_equal "$(jq -r '[.tags[].name] | join(" ")' <<<"$output")" "alpha latest zeta"
	assert_equal "$(jq -r '.tags[0].samples' <<<"$output")" 60
	assert_equal "$(jq -r '.tags[0].bytes' <<<"$output")" \
		"$(mjson ds 'sum(s["bytes"] for s in m["shards"])')"
	assert_equal "$(jq -r ".versions[] | select(.id == \"$ID_0\") | .tags | length" <<<"$output")" 0
	assert_equal "$(jq -r '.tags[0].pushed' <<<"$output" | grep -cE '^[0-9-]{10}T[0-9:]{8}Z$')" 1
}

@test "tags: an empty remote says so; a missing tag lists the tags, or says there are none" {
	remote dir
	# a folder that is not there is no remote, not an empty one
	run -2 chute tags "$URL"
	assert_output "chute tags: no remote at $ROOT: no such folder"
	mkdir "$ROOT"
	run -0 chute tags "$URL"
	assert_output "$URL holds no versions"
	run -2 chute pull "$URL@v1" back
	assert_output --partial "no tag 'v1'"
	assert_output --partial "it has no tags"
	version 1 60 a b
	run -2 chute pull "$URL@v1" back
	assert_output --partial "no tag 'v1' on $URL; its tags: a, b, latest"
	local i
	for i in $(seq 1 12); do
		echo "$ID_1" >"$ROOT/tags/t$i"
	done
	run -2 chute manifest "$URL@v1"
	assert_output --partial "its tags: a, b, latest, t1, t10, t11, t12, t2, t3, t4 and 5 more"
}

@test "tags: nginx and s3rver list the same" {
	remote nginx
	version 1 60 a
	run -0 chute tags "$URL"
	assert_line --index 0 --regexp "^a           $ID_1 "
	stop_servers
	remote s3
	version 1 60 a
	run -0 chute tags "$URL"
	assert_line --index 0 --regexp "^a           $ID_1 "
}

# ------------------------------------------------------------------
# gc while a push runs: each stopped at each of its points
# (CHUTE_TEST_PAUSE, cmd/test_point.c) while the other runs.

# reached POINT: waits until a command has stopped at POINT.
reached() {
	local i
	for i in $(seq 1 1000); do
		[ -e "$CHUTE_TEST_DIR/$1" ] && return 0
		sleep 0.01
	done
	fail "no command stopped at $1"
}

# go POINT: lets the command stopped at POINT go on.
go() {
	touch "$CHUTE_TEST_DIR/$1.go"
}

# interleave KIND: big is a version whose objects are older than the
# grace period; a push of big2, which reuses big's shards (a split of
# the same dataset), runs while gc drops big's tags and removes what no
# kept version names.  For every point of one, the other runs whole in
# between; the push must leave big2 complete.
interleave() {
	remote "$1"
	local base=$URL root=$ROOT point step=0 push gc id2
	gen_text src 80
	chute pack -q -s 10s -o ds src >/dev/null || fail "pack"
	cp -r ds ds2
	chute split -q ds2 --val 0.25 >/dev/null || fail "split"
	id2=$(mjson ds2 'm["id"]')
	for point in push:after-objects push:after-manifest push:after-check \
		gc:after-lease gc:after-plan gc:after-delete; do
		step=$((step + 1))
		URL=$base/r$step ROOT=$root/r$step
		export CHUTE_TEST_DIR=$BATS_TEST_TMPDIR/points$step
		mkdir -p "$CHUTE_TEST_DIR"
		chute push ds "$URL" --tag big >/dev/null || fail "push big"
		find "$ROOT" -type f -exec touch -d '2 hours ago' {} +
		case $point in
		push:*)
			CHUTE_TEST_PAUSE=$point chute push ds2 "$URL" --tag big2 \
				>"$CHUTE_TEST_DIR/push.out" 2>&1 &
			push=$!
			reached "$point"
			run -0 chute gc "$URL" --drop-tag big --drop-tag latest --yes
			go "$point"
			;;
		gc:*)
			CHUTE_TEST_PAUSE=$point chute gc "$URL" --drop-tag big \
				--drop-tag latest --yes >"$CHUTE_TEST_DIR/gc.out" 2>&1 &
			gc=$!
			reached "$point"
			go push:waiting-for-gc
			CHUTE_TEST_PAUSE=push:waiting-for-gc chute push ds2 "$URL" \
				--tag big2 >"$CHUTE_TEST_DIR/push.out" 2>&1 &
			push=$!
			# the push holds its tags back while gc holds its lease
			reached push:waiting-for-gc
			[ ! -e "$ROOT/tags/big2" ] ||
				fail "$point: big2 moved during gc"
			go "$point"
			wait "$gc" || fail "gc ($point): $(cat "$CHUTE_TEST_DIR/gc.out")"
			;;
		esac
		wait "$push" || fail "push ($point): $(cat "$CHUTE_TEST_DIR/push.out")"
		pulled "$URL@big2" "back$step" "$id2"
		run -2 chute pull "$URL@big" gone
	done
	# no lease is left behind
	[ -z "$(find "$root" -path '*/gc/lease*')" ]
}

@test "gc: a push running meanwhile, each stopped at every point of the other, leaves its version whole (folder)" {
	interleave dir
}

@test "gc: a push running meanwhile, each stopped at every point of the other, leaves its version whole (nginx)" {
	normal_pass_only "$GC_ELSEWHERE"
	interleave nginx
}

@test "gc: a push running meanwhile, each stopped at every point of the other, leaves its version whole (s3rver)" {
	normal_pass_only "$GC_ELSEWHERE"
	interleave s3
}
