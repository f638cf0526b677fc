#!/usr/bin/env bats
# chute push / pull: dataset versions in a folder, an HTTP (nginx WebDAV)
# and an S3 (s3rver) remote; content-addressed files shared between
# versions, verified downloads, resumable pulls, tags that never name
# missing data, and streaming straight from a remote.

load helper
load servers

# images DIR COUNT: COUNT samples of ~2 KB in 3 class folders, made once
# per test file for each COUNT (`cached`), then copied.
images() {
	cached _images "$@"
}
_images() {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images "$1" --count "$2" \
		--size 2000 --classes 3 --seed 4 >/dev/null ||
		fail "scripts/gen-data.py images $1 failed"
}

# packed DS COUNT: a dataset of COUNT labelled samples in shards of 20.
packed() {
	images "src-$1" "$2"
	chute pack -q --label-from dir -s 20s -o "$1" "src-$1" >/dev/null ||
		fail "chute pack $1 failed"
}

# mid DS: the dataset's version id.
mid() {
	"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' \
		"$1/manifest.json"
}

# objects ROOT: the files of a folder remote, relative, sorted.
objects() {
	(cd "$1" && find . -type f | sed 's|^\./||' | sort)
}

# same_files A B: the shards and split files of two datasets are equal.
same_files() {
	(cd "$1" && find shards splits -type f 2>/dev/null | sort) >"a.list"
	(cd "$2" && find shards splits -type f 2>/dev/null | sort) >"b.list"
	diff a.list b.list || fail "$1 and $2 hold other files"
	while read -r f; do
		cmp "$1/$f" "$2/$f" || fail "$f differs"
	done <a.list
	cmp "$1/manifest.json" "$2/manifest.json" || fail "manifests differ"
}

# round_trip REMOTE: push ds, pull it back, same bytes; verify clean.
round_trip() {
	packed ds 100
	run -0 chute push ds "$1"
	assert_output --partial "pushed $(mid ds)"
	assert_output --partial "5 of 5 files sent"
	run -0 chute pull "$1" back
	assert_output --partial "5 downloaded"
	same_files ds back
	run -0 chute verify back
	run -0 chute status back
}

@test "remote: folder round trip, layout of cas/ versions/ tags/" {
	round_trip "$PWD/remote"
	run -0 objects remote
	assert_line "tags/latest"
	assert_line "versions/$(mid ds).json"
	[ "$(grep -c '^cas/../[0-9a-f]\{32\}\.chs$' <<<"$output")" -eq 5 ]
	[ "$(cat remote/tags/latest)" = "$(mid ds)" ]
	# file:// is the same remote
	run -0 chute pull "file://$PWD/remote@latest" back2
	same_files ds back2
}

@test "remote: a second push sends nothing; a second pull downloads nothing" {
	packed ds 60
	chute push ds remote >/dev/null
	run -0 chute push ds remote
	assert_output --partial "0 of 3 files sent"
	chute pull "file://$PWD/remote" back >/dev/null
	run -0 chute pull "file://$PWD/remote" back
	assert_output --partial "0 downloaded"
	assert_output --partial "3 already there"
}

@test "remote: two versions share their common shards" {
	packed ds 60
	chute push ds remote --tag v1 >/dev/null
	v1=$(mid ds)
	chute split ds --val 0.2 >/dev/null
	v2=$(mid ds)
	[ "$v1" != "$v2" ]
	run -0 chute push ds remote --tag v2
	# the split adds split files only: the 3 shards are already there
	assert_output --regexp "pushed $v2 .*: 2 of 5 files sent"
	[ "$(find remote/cas -name '*.chs' | wc -l)" -eq 3 ]
	[ "$(cat remote/tags/v1)" = "$v1" ]
	[ "$(cat remote/tags/v2)" = "$v2" ]
	run -0 chute pull "file://$PWD/remote@v1" old
	[ "$(mid old)" = "$v1" ]
	run -0 chute pull "file://$PWD/remote@$v2" new
	same_files ds new
	# pulling v2 over v1 fetches only what v1 lacks
	run -0 chute pull "file://$PWD/remote@v2" old
	assert_output --partial "2 downloaded"
	same_files ds old
}

@test "remote: log and diff read versions from a remote" {
	packed ds 60
	v1=$(mid ds)
	chute split ds --val 0.2 >/dev/null
	chute push ds remote >/dev/null
	run -0 chute log "file://$PWD/remote"
	assert_output --partial "$v1"
	assert_output --partial "$(mid ds)"
	run -1 chute diff "file://$PWD/remote@$v1" "file://$PWD/remote"
	run -0 chute diff "file://$PWD/remote" ds
}

@test "remote: a damaged local shard is not pushed, and no tag names it" {
	packed ds 60
	flip_byte "$(shard_of ds 1)" 100
	run -1 chute push ds remote --tag broken
	assert_output --partial "does not match the manifest"
	assert_output --partial "run chute verify"
	[ ! -e remote/tags/latest ]
	[ ! -e remote/tags/broken ]
	[ ! -e "remote/versions/$(mid ds).json" ]
}

@test "remote: a shard in place damaged at the edges of a 256 KiB read or at its end is fetched again, and not pushed" {
	# files are hashed 256 KiB at a time (common/read_range.c): byte
	# 262143 ends the first read, 262144 begins the second
	random_files big 6 100000 6
	chute pack -q -l 0 big -o ds >/dev/null
	chute push -q ds remote >/dev/null
	chute pull -q remote back >/dev/null
	local s off
	s=$(shard_of back 0)
	for off in 262143 262144 -1; do
		flip_byte "$s" "$off"
		run -1 chute push back remote2
		assert_output --partial "does not match the manifest"
		run -0 chute pull --json remote back
		assert_output --partial '"downloaded":1,'
		same_files ds back
	done
}

@test "remote: a corrupted object is refused by pull and named" {
	packed ds 60
	chute push ds remote >/dev/null
	obj=$(find remote/cas -name '*.chs' | sort | head -1)
	flip_byte "$obj" 10
	run -1 chute pull "file://$PWD/remote" back
	assert_output --partial "$(basename "$obj")"
	assert_output --partial "hash"
	# nothing under a final name: no manifest, no unverified shard
	[ ! -e back/manifest.json ]
	for f in back/shards/*.chs; do
		[ -e "$f" ] || continue
		grep -q "$(xxhsum -H2 "$f" | cut -d' ' -f1 | sed 's/^XXH128_//')" \
			ds/manifest.json || fail "$f is not a verified shard"
	done
}

# evil_version REMOTE ARG PYTHON: the remote's latest version changed by
# PYTHON (m the manifest, arg ARG), its id made right again, stored and
# tagged "evil"; prints the version id.
evil_version() {
	"$PYTHON" - "$1" "$2" "$3" <<'EOF'
import json, shutil, sys, xxhash
remote, arg, edit = sys.argv[1:4]
vid = open(remote + "/tags/latest").read().strip()
m = json.load(open("%s/versions/%s.json" % (remote, vid)))
exec(edit)
del m["id"]
canon = json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
m["id"] = xxhash.xxh3_128_hexdigest(canon.encode())
json.dump(m, open("%s/versions/%s.json" % (remote, m["id"]), "w"), indent=2)
open(remote + "/tags/evil", "w").write(m["id"] + "\n")
print(m["id"])
EOF
}

# hostile_version REMOTE PATH: a version of the folder remote whose first
# shard is named PATH (its bytes stored where pull looks for them, its id
# right), tagged "evil"; prints the version id.
hostile_version() {
	evil_version "$1" "$2" '
s = m["shards"][0]
h = s["xxh3_128"]
base = arg.rsplit("/", 1)[-1]
ext = base[base.rfind("."):] if "." in base else ""
if ext != ".chs":
    shutil.copy("%s/cas/%s/%s.chs" % (remote, h[:2], h),
                "%s/cas/%s/%s%s" % (remote, h[:2], h, ext))
s["path"] = arg'
}

@test "remote: a manifest naming chute's own files as shards is refused by pull, stream and verify" {
	packed ds 60
	chute push ds remote >/dev/null
	run -0 chute pull "file://$PWD/remote" back
	cp back/manifest.json good.json
	cp back/.chute/stat good.stat
	for path in manifest.json .chute/stat splits/x.ids shards/a/b.chs \
		shards/.chs "shards/$(printf 'a\033b').chs" ../up.chs; do
		hostile_version "$PWD/remote" "$path" >/dev/null
		shown=$(printf '%s' "$path" | sed 's/\x1b/\\x1b/')
		run -1 chute pull "file://$PWD/remote@evil" back
		assert_output --partial "shards[0].path: '$shown' is not shards/NAME.chs"
		cmp good.json back/manifest.json
		cmp good.stat back/.chute/stat
		run -1 chute stream "file://$PWD/remote@evil" -o /dev/null
		assert_output --partial "shards[0].path: '$shown'"
		mkdir -p local
		cp "remote/versions/$(cat remote/tags/evil).json" local/manifest.json
		# verify: a manifest that is not valid fails the check
		run -1 chute verify local
		assert_output --partial "shards[0].path: '$shown'"
	done
}

@test "remote: a pulled manifest whose name holds '/' or a control byte is refused, the rule of merge -n" {
	packed ds 20
	chute push ds remote >/dev/null
	local name id shown
	for name in a/b $'a\033b' $'a\tb'; do
		id=$(evil_version "$PWD/remote" "$name" 'm["name"] = arg')
		shown=$(printf '%s' "$name" | sed 's/\x1b/\\x1b/; s/\t/\\t/')
		run -1 chute pull "file://$PWD/remote@evil" back
		assert_output --partial "name: the dataset name '$shown' names the shard files: it cannot hold '/' or a control character"
		assert_output --partial "versions/$id.json"
		[ ! -e back ]
		run -1 chute stream "file://$PWD/remote@evil" -o /dev/null
		assert_output --partial "the dataset name '$shown'"
		run -2 chute merge -n "$name" -o merged ds
		assert_output --partial "the dataset name '$shown' names the shard files: it cannot hold '/' or a control character"
	done
}

@test "remote: a partial download is resumed; a bad partial is refetched" {
	packed ds 60
	chute push ds remote >/dev/null
	mkdir -p back/.chute/pull
	objs=($(find remote/cas -name '*.chs' | sort))
	head -c 1000 "${objs[0]}" >"back/.chute/pull/$(basename "${objs[0]}").part"
	head -c 1000 /dev/urandom >"back/.chute/pull/$(basename "${objs[1]}").part"
	run -0 chute pull "file://$PWD/remote" back
	same_files ds back
	[ ! -e back/.chute/pull ]
}

@test "remote: an interrupted pull leaves the old version in place" {
	packed ds 60
	chute push ds remote --tag v1 >/dev/null
	chute pull "file://$PWD/remote@v1" back >/dev/null
	cp -r back before
	chute split ds --val 0.2 >/dev/null
	chute push ds remote --tag v2 >/dev/null
	# break one object of v2: the pull stops before touching back/
	obj=$(find remote/cas -name '*.ids' | sort | head -1)
	flip_byte "$obj" 0
	run -1 chute pull "file://$PWD/remote@v2" back
	same_files before back
}

@test "remote: unknown tag, bad tag name, bad reference" {
	packed ds 20
	chute push ds remote >/dev/null
	run -2 chute pull "file://$PWD/remote@nope" back
	assert_output --partial "no tag 'nope'"
	run -2 chute push ds remote --tag '../x'
	assert_output --partial "not a valid tag name"
	run -2 chute pull "file://$PWD/remote@" back
	assert_output --partial "nothing after '@'"
	run -0 chute pull remote@latest back
	same_files ds back
	run -2 chute pull "file://$PWD/none" back
	assert_output "chute pull: no remote at $PWD/none: no such folder"
	mkdir none
	run -2 chute pull "file://$PWD/none" back
	assert_output --partial "no tag 'latest'"
}

# ------------------------------------------------------------------
# HTTP (nginx WebDAV) and S3 (s3rver) remotes

teardown() {
	stop_servers
}

teardown_file() {
	stop_shared_s3rver
}

@test "remote: nginx round trip, log and diff over http" {
	start_nginx www
	round_trip "$NGINX_URL/data"
	[ "$(cat www/data/tags/latest)" = "$(mid ds)" ]
	run -0 chute log "$NGINX_URL/data"
	assert_output --partial "$(mid ds)"
	run -0 chute diff "$NGINX_URL/data" ds
	run -0 chute manifest "$NGINX_URL/data@latest"
	assert_output --partial "$(mid ds)"
}

@test "remote: http 404 and 403 name the object and what to check" {
	start_nginx www
	run -2 chute pull "$NGINX_URL/nothing" back
	assert_output --partial "no tag 'latest'"
	# a password in the url never shows
	run -2 chute pull "http://me:s3cret@${NGINX_URL#http://}/nothing" back
	assert_output --partial "me:***@"
	refute_output --partial "s3cret"
	packed ds 20
	run -2 chute push ds "$NGINX_URL/denied/x"
	assert_output --partial "403"
	assert_output --partial "$NGINX_URL/denied/x/"
	# a version whose file vanished from the server: 404 names the object
	chute push ds "$NGINX_URL/d" >/dev/null
	obj=$(cd www/d && find cas -name '*.chs' | head -1)
	rm "www/d/$obj"
	run -1 chute pull "$NGINX_URL/d" back
	assert_output --partial "no such object: $NGINX_URL/d/$obj"
}

@test "remote: a server that is down fails the pull; the rerun once it is back succeeds" {
	start_nginx www
	packed ds 100
	chute push ds "$NGINX_URL/d" >/dev/null
	stop_nginx
	run -2 chute pull --retries 1 "$NGINX_URL/d" back
	[ ! -e back/manifest.json ]
	restart_nginx
	run -0 chute pull "$NGINX_URL/d" back
	same_files ds back
}

@test "remote: CHUTE_RETRIES sets the retries of every remote command; --retries wins; a bad value is exit 2" {
	local url=http://127.0.0.1:$(free_port)/d
	CHUTE_RETRIES=1 run -2 chute manifest "$url"
	assert_output --partial "(after 2 attempts)"
	CHUTE_RETRIES=2 run -2 chute stream "$url" -o x.bin
	assert_output --partial "(after 3 attempts)"
	CHUTE_RETRIES=0 run -2 chute log "$url"
	assert_output --partial "Couldn't connect"
	refute_output --partial "attempts)"
	CHUTE_RETRIES=0 run -2 chute pull --retries 1 "$url" back
	assert_output --partial "(after 2 attempts)"
	CHUTE_RETRIES=7 run -2 chute pull --retries 0 "$url" back
	refute_output --partial "attempts)"
	for bad in x -1 101 " 1" 1s; do
		CHUTE_RETRIES=$bad run -2 chute manifest "$url"
		assert_output "chute manifest: invalid value '$bad' for CHUTE_RETRIES: expected a whole number from 0 to 100"
	done
}

@test "remote: nginx killed mid-transfer; the rerun resumes and ends verified" {
	# 1 MB/s a connection: the pull is still running when nginx dies
	NGINX_EXTRA="limit_rate 1m;" start_nginx www
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images src --count 12 \
		--size 500000 --classes 2 --seed 3 >/dev/null
	chute pack -q -s 2M -o ds src >/dev/null
	chute push ds "$NGINX_URL/d" >/dev/null
	chute pull --retries 0 "$NGINX_URL/d" back 2>err.txt &
	pid=$!
	# until some bytes have arrived (at 1 MB/s, shards of 2 MB)
	for _ in $(seq 1 100); do
		[ -n "$(find back/.chute/pull -name '*.part' -size +100k 2>/dev/null)" ] && break
		sleep 0.1
	done
	master=$(cat "$NGINX_DIR/nginx.pid")
	procs="$master $(pgrep -P "$master")" # workers too: they serve on
	# the master first: alive, it would start a new worker for each one
	# killed, and that one would keep the port past the restart below
	kill -9 "$master"
	kill -9 $procs 2>/dev/null || true
	for p in $procs; do # gone, their port with them
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
	wait "$pid" && fail "the pull should have failed"
	# partial downloads kept, nothing unverified under a final name
	[ -n "$(find back/.chute/pull -name '*.part' -size +0)" ]
	[ ! -e back/manifest.json ]
	[ -z "$(find back/shards -name '*.chs' 2>/dev/null)" ]
	rm -f "$NGINX_DIR/nginx.pid"
	NGINX_EXTRA="" restart_nginx
	run -0 chute pull "$NGINX_URL/d" back
	assert_output --regexp "[1-9][0-9]* resumed"
	same_files ds back
	run -0 chute verify back
}

@test "remote: s3 round trip, versions shared, log and diff over s3" {
	shared_s3rver bucket
	local r=s3://bucket/$S3_PREFIX/sets/ds
	round_trip "$r"
	chute split ds --val 0.2 >/dev/null
	run -0 chute push ds "$r" --tag v2
	assert_output --partial "2 of 7 files sent"
	run -0 chute log "$r@v2"
	assert_output --partial "$(mid ds)"
	run -0 chute pull "$r@v2" back2
	same_files ds back2
	run -1 chute diff "$r" back
}

@test "remote: s3 with a wrong access key or no credentials says what to check" {
	shared_s3rver bucket
	packed ds 20
	AWS_ACCESS_KEY_ID=NOPE run -2 chute push ds "s3://bucket/$S3_PREFIX/x"
	assert_output --partial "InvalidAccessKeyId"
	assert_output --partial "AWS_ACCESS_KEY_ID"
	run env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY chute pull "s3://bucket/$S3_PREFIX/x" back
	[ "$status" -eq 2 ]
	assert_output --partial "AWS_ACCESS_KEY_ID"
	run -2 chute pull s3://nosuchbucket/x back
	assert_output --partial "NoSuchBucket"
}

# ------------------------------------------------------------------
# Streaming straight from a remote

# stream_both REMOTE OPTS...: the remote stream equals the local one.
stream_both() {
	local remote=$1
	shift
	chute stream ds "$@" -o local.bin || fail "local stream failed"
	chute stream "$remote" --remote-cache cache "$@" -o remote.bin ||
		fail "remote stream failed"
	cmp local.bin remote.bin || fail "remote stream differs from local"
}

@test "remote stream: window, global and none give the local bytes (http)" {
	start_nginx www
	packed ds 100
	chute split ds --val 0.2 >/dev/null
	chute push ds "$NGINX_URL/d" >/dev/null
	stream_both "$NGINX_URL/d" --shuffle window --window 2 -b 7 -e 2 --seed 5
	stream_both "$NGINX_URL/d" --shuffle none -b 8
	rm -rf cache
	stream_both "$NGINX_URL/d" --shuffle global -b 8 -e 2 --workers 3
	# a global shuffle reads by range: no whole shard was fetched
	[ -z "$(find cache -name '*.chs')" ]
	stream_both "$NGINX_URL/d" --split val -b 4 --seed 2
	stream_both "$NGINX_URL/d@$(mid ds)" --shuffle window --window 1 \
		--rank 1 --world-size 2 -b 4
}

@test "remote stream: --stats, --stats-json and bench say what was fetched" {
	start_nginx www
	packed ds 60
	chute push ds "$NGINX_URL/d" >/dev/null
	run -0 chute stream "$NGINX_URL/d" --remote-cache c1 --shuffle global \
		-b 8 --stats --stats-json st.json -o /dev/null
	assert_output --regexp "remote: 0 files fetched .* [1-9][0-9]* range requests"
	run -0 "$PYTHON" -c 'import json,sys; r = json.load(open("st.json"))["remote"]; assert r["ranges"] > 0 and r["files"] == 0, r'
	run -0 chute bench "$NGINX_URL/d" --remote-cache c2 --shuffle window -b 8
	assert_output --partial "fetch from remote"
	run -0 chute stream "$NGINX_URL/d" --remote-cache c2 --shuffle window \
		-b 8 --stats -o /dev/null
	assert_output --partial "remote: 0 files fetched (0 B), 3 found in the cache"
}

@test "remote stream: a small cache evicts and still gives the same bytes" {
	start_nginx www
	packed ds 100
	chute push ds "$NGINX_URL/d" >/dev/null
	one=$(stat -c %s "$(shard_of ds)")
	stream_both "$NGINX_URL/d" --shuffle window --window 1 -b 5 -e 3 \
		--remote-cache-size $((one * 2))
	total=$(find cache/cas -name '*.chs' -printf '%s\n' | awk '{ t += $1 } END { print t }')
	[ "$total" -le $((one * 3)) ]
	# the cache holds verified files only
	for f in cache/cas/*/*.chs; do
		h=$(basename "$f" .chs)
		[ "$(xxhsum -H2 "$f" | awk '{ print $1 }' | sed 's/^XXH128_//')" = "$h" ]
	done
}

@test "remote stream: REMOTE@ID from a warm cache needs no server; a tag does" {
	start_nginx www
	packed ds 60
	chute push ds "$NGINX_URL/d" >/dev/null
	id=$(mid ds)
	stream_both "$NGINX_URL/d@$id" --shuffle window -b 6 --seed 4
	[ -f "cache/versions/$id.json" ]
	stop_nginx
	chute stream "$NGINX_URL/d@$id" --remote-cache cache --shuffle window \
		-b 6 --seed 4 -o offline.bin
	cmp local.bin offline.bin
	CHUTE_RETRIES=0 run -2 chute stream "$NGINX_URL/d" --remote-cache cache -b 6 -o x.bin
	assert_output --partial "tags/latest"
}

@test "remote stream: s3, window shuffle, same bytes" {
	shared_s3rver bucket
	packed ds 60
	chute push ds "s3://bucket/$S3_PREFIX/ds" >/dev/null
	stream_both "s3://bucket/$S3_PREFIX/ds" --shuffle window --window 2 -b 6 --seed 1
	stream_both "s3://bucket/$S3_PREFIX/ds" --shuffle global -b 6 --seed 1
}

@test "remote stream: a corrupted object on the remote stops the stream, named" {
	start_nginx www
	packed ds 60
	chute push ds "$NGINX_URL/d" >/dev/null
	obj=$(cd www/d && find cas -name '*.chs' | sort | head -1)
	flip_byte "www/d/$obj" 100
	# the shard that object is, by its hash
	shard=$("$PYTHON" -c 'import json, sys
m = json.load(open("ds/manifest.json"))
print([s["path"] for s in m["shards"] if s["xxh3_128"] == sys.argv[1]][0])' \
		"$(basename "$obj" .chs)")
	run chute stream "$NGINX_URL/d" --remote-cache cache --shuffle window -b 4 -o out.bin
	[ "$status" -ne 0 ]
	assert_output --partial "$(basename "$obj")"
	run chute stream "$NGINX_URL/d" --remote-cache cache2 --shuffle global -b 4 -o out.bin
	[ "$status" -ne 0 ]
	# the object's hash or its block's checksum, whichever is read first
	assert_output --regexp "(hash|checksum) mismatch"
	assert_output --partial "$shard"
}

# ------------------------------------------------------------------
# chute pack from remote sources

@test "pack from a remote: tar, tar.gz and zip over http give the local shards" {
	start_nginx www
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images src --count 40 \
		--size 300000 --classes 3 --seed 4 >/dev/null
	tar -cf www/a.tar -C src .
	tar -czf www/a.tgz -C src .
	(cd src && zip -qr ../www/a.zip .)
	chute pack -q -o local src >/dev/null
	for f in a.tar a.tgz a.zip; do
		run -0 chute pack -o "r-$f" "$NGINX_URL/$f"
		assert_output --partial "packed 40 samples"
		cmp local/shards/*.chs "r-$f"/shards/*.chs
	done
	mjson r-a.tar "m['sources']" | grep -q "$NGINX_URL/a.tar"
}

@test "pack from a remote: files and an archive from s3, in order" {
	shared_s3rver bucket
	start_nginx www
	images src 12
	tar -cf www/a.tar -C src .
	"$(dirname "$CHUTE_BIN")/tests/store_tool" "s3://bucket/$S3_PREFIX" put data/a.tar \
		www/a.tar >/dev/null || fail "cannot put a.tar into s3rver"
	cp src/c00/img0000000.jpg www/one.jpg
	run -0 chute pack -o ds "$NGINX_URL/one.jpg" "s3://bucket/$S3_PREFIX/data/a.tar"
	assert_output --partial "packed 13 samples"
	run -0 chute ls ds
	assert_line --partial "one	jpg:"
	run -0 chute verify ds
}

@test "pack from a remote: a missing object, and a password, are handled" {
	start_nginx www
	run -2 chute pack -o ds "$NGINX_URL/none.tar"
	assert_output --partial "no such object: $NGINX_URL/none.tar"
	images src 5
	tar -cf www/a.tar -C src .
	run -0 chute pack -o ds "http://me:s3cret@${NGINX_URL#http://}/a.tar"
	refute_output --partial "s3cret"
	run grep -c s3cret ds/manifest.json
	assert_output 0
	run -2 chute pack -o ds2 "$NGINX_URL/"
	assert_output --partial "names no file"
}
