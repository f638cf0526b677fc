#!/usr/bin/env bats
# The store layer (include/chute/store.h) through tests/store_tool, against
# a folder,
# nginx with WebDAV and s3rver, all on 127.0.0.1.  Each case is a function
# run once per kind of remote.

load helper
load servers

STORE_TOOL="${CHUTE_BIN%/*}/tests/store_tool"

setup() {
	chute_setup
	[ -x "$STORE_TOOL" ] || fail "store_tool not found at '$STORE_TOOL' (run make)"
}

teardown() {
	stop_servers
}

teardown_file() {
	stop_shared_s3rver
}

st() {
	"$STORE_TOOL" "$@"
}

# remote KIND: starts what KIND needs and sets URL (the remote) and ROOT
# (the folder where its objects lie, for tampering with them).
remote() {
	case $1 in
	dir)
		URL=$BATS_TEST_TMPDIR/remote
		ROOT=$URL
		;;
	nginx)
		start_nginx "$BATS_TEST_TMPDIR/www"
		URL=$NGINX_URL/repo
		ROOT=$BATS_TEST_TMPDIR/www/repo
		;;
	s3)
		# one s3rver for the file, a folder of its bucket a test
		shared_s3rver bkt
		URL=s3://bkt/$S3_PREFIX/pre
		ROOT=$BATS_FILE_TMPDIR/s3rver/data/bkt/$S3_PREFIX/pre
		;;
	esac
}

# stored KEY: the file holding KEY's bytes on the server's side.
stored() {
	if [ -f "$ROOT/$1._S3rver_object" ]; then
		echo "$ROOT/$1._S3rver_object"
	else
		echo "$ROOT/$1"
	fi
}

# gen FILE SIZE SEED [FILE SIZE SEED]...: each FILE, SIZE seeded random
# bytes (one Python process for them all).
gen() {
	"$PYTHON" -c '
import random, sys
a = sys.argv[1:]
for path, size, seed in zip(a[0::3], a[1::3], a[2::3]):
    r = random.Random(int(seed))
    open(path, "wb").write(r.randbytes(int(size)))
' "$@"
}

h128() {
	xxhsum -H2 "$1" 2>/dev/null | cut -d' ' -f1
}

# job KEY FILE DEST: the getmany argument for KEY, expected to hold FILE.
job() {
	echo "$1=$3:$(stat -c %s "$2"):$(h128 "$2")"
}

# job_lines KEY FILE DEST [KEY FILE DEST]...: job for each, a line each (one
# stat and one xxhsum for them all).
job_lines() {
	local -a keys=() files=() dests=() sizes hashes
	local i
	while [ $# -ge 3 ]; do
		keys+=("$1") files+=("$2") dests+=("$3")
		shift 3
	done
	mapfile -t sizes < <(stat -c %s "${files[@]}")
	mapfile -t hashes < <(xxhsum -H2 "${files[@]}" 2>/dev/null | cut -d' ' -f1)
	[ "${#sizes[@]}" = "${#keys[@]}" ] && [ "${#hashes[@]}" = "${#keys[@]}" ] ||
		fail "cannot size and hash ${files[*]}"
	for i in "${!keys[@]}"; do
		echo "${keys[$i]}=${dests[$i]}:${sizes[$i]}:${hashes[$i]}"
	done
}

# ------------------------------------------------------------------

roundtrip() {
	remote "$1"
	gen big 3000001 1 one 1 2
	: >empty
	st "$URL" put cas/ab/big big
	st "$URL" put cas/ab/one one
	st "$URL" put empty empty
	st "$URL" put tags/latest - <big

	run -0 st "$URL" stat cas/ab/big
	assert_output "exists 3000001"
	run -0 st "$URL" stat empty
	assert_output "exists 0"

	st "$URL" get cas/ab/big >got && cmp big got
	st "$URL" get tags/latest >got && cmp big got
	st "$URL" get cas/ab/one >got && cmp one got
	st "$URL" get empty >got && cmp empty got

	st "$URL" range cas/ab/big 0 1 >got && cmp <(head -c 1 big) got
	st "$URL" range cas/ab/big 1048570 2000 >got &&
		cmp <(tail -c +1048571 big | head -c 2000) got
	st "$URL" range cas/ab/big 3000000 1 >got && cmp <(tail -c 1 big) got

	# replacing an object
	st "$URL" put cas/ab/one empty
	run -0 st "$URL" stat cas/ab/one
	assert_output "exists 0"
}

@test "store: put, get, stat and range round trips through a folder" {
	roundtrip dir
	# nothing half-written is left next to the objects
	run -0 ls -A remote/cas/ab
	assert_output $'big\none'
}

@test "store: put, get, stat and range round trips through nginx" {
	roundtrip nginx
}

@test "store: put, get, stat and range round trips through s3rver" {
	roundtrip s3
}

@test "store: file:// URLs name a folder" {
	echo hello >f
	st "file://$BATS_TEST_TMPDIR/r/" put a/b f
	run -0 st "$BATS_TEST_TMPDIR/r" get a/b
	assert_output hello
}

missing() {
	remote "$1"
	run -0 st "$URL" stat nope/x
	assert_output missing
	run -1 st "$URL" get nope/x
	assert_output "store_tool: no such object: $URL/nope/x"
	run -1 st "$URL" range nope/x 0 1
	assert_output --partial "no such object: $URL/nope/x"
	run -1 st "$URL" getmany 2 "nope/x=out:1:00000000000000000000000000000000"
	assert_output --partial "no such object: $URL/nope/x"
	assert_file_not_exists out
	assert_file_not_exists out.part
}

@test "store: a missing object is 'missing' to stat and named by get (folder)" {
	missing dir
}

@test "store: a missing object is 'missing' to stat and named by get (nginx)" {
	missing nginx
}

@test "store: a missing object is 'missing' to stat and named by get (s3rver)" {
	missing s3
}

@test "store: a range past the end of an object is an error" {
	remote nginx
	gen f 100 1
	st "$URL" put f f
	run -1 st "$URL" range f 90 20
	assert_output --partial "is too short: 20 bytes at offset 90 asked for, 10 came"
	run -1 st "$BATS_TEST_TMPDIR/www/repo" range f 90 20
	assert_output --partial "ends at byte 100"
}

@test "store: keys leaving the remote's root are refused" {
	for key in /etc/passwd ../x a/../../x a//b a/ . ''; do
		run -1 st "$BATS_TEST_TMPDIR/r" stat "$key"
		assert_output --regexp "^store_tool: (empty )?object key"
	done
}

@test "store: an unknown kind of URL is refused" {
	run -1 st ftp://host/x stat a
	assert_output --partial "unknown kind of remote 'ftp://host/x'"
}

@test "store: nginx's 403 names the object and what to check" {
	remote nginx
	mkdir -p www/denied
	echo secret >www/denied/f
	run -1 st "$NGINX_URL" get denied/f
	assert_output "store_tool: access denied (403) for $NGINX_URL/denied/f: check the server's access rules"
	run -1 st "$NGINX_URL" stat denied/f
	assert_output --partial "access denied (403) for $NGINX_URL/denied/f"
	run -1 st "$NGINX_URL" put denied/g www/denied/f
	assert_output --partial "access denied (403)"
	run -1 st "$NGINX_URL" getmany 2 "denied/f=out:7:$(h128 www/denied/f)"
	assert_output --partial "access denied (403) for $NGINX_URL/denied/f"
	assert_file_not_exists out
}

@test "store: s3rver refuses an unknown access key id, and the message says which setting" {
	remote s3
	echo hi >f
	st "$URL" put f f
	for cmd in "get f" "stat f" "put g f" "statmany 2 f" "getmany 2 f=out:3:$(h128 f)"; do
		# shellcheck disable=SC2086
		AWS_ACCESS_KEY_ID=NOBODY run -1 st "$URL" $cmd
		assert_output --partial "access denied (403, InvalidAccessKeyId"
		assert_output --regexp "for $URL/[fg]: "
		assert_output --partial "check the credentials (AWS_ACCESS_KEY_ID)"
	done
}

@test "store: missing S3 credentials are an error before any request" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	run -1 st s3://bkt/pre stat f
	assert_output --partial "no S3 credentials for 's3://bkt/pre': looked in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY unset)"
	AWS_ACCESS_KEY_ID=x run -1 st s3://bkt stat f
	assert_output --partial "no S3 credentials for 's3://bkt': AWS_ACCESS_KEY_ID is set, AWS_SECRET_ACCESS_KEY is not"
}

@test "store: a bucket that does not exist is named" {
	remote s3
	run -1 st s3://nobucket/pre get f
	assert_output --partial "no such bucket 'nobucket'"
	assert_output --partial "AWS_ENDPOINT_URL"
}

# ------------------------------------------------------------------

# many_src DIR: DIR/0 to DIR/19, of sizes up to 400000 bytes (DIR/3 empty).
many_src() {
	local i size made=()
	mkdir -p "$1"
	for i in $(seq 0 19); do
		size=$(((i * 7919 * 131) % 400000))
		[ "$i" = 3 ] && size=0
		made+=("$1/$i" "$size" "$i")
	done
	gen "${made[@]}"
}

many() {
	remote "$1"
	local args=() i keys=() triples=()
	cached many_src src
	for i in $(seq 0 19); do
		keys+=("cas/$i.chs=src/$i")
		triples+=("cas/$i.chs" "src/$i" "dst/d$((i % 3))/$i")
	done
	mapfile -t args < <(job_lines "${triples[@]}")
	run -0 st "$URL" putmany 4 "${keys[@]}"
	assert_line "cas/7.chs $(stat -c %s src/7)"
	run -0 st "$URL" statmany 4 cas/0.chs cas/3.chs nope
	assert_line "cas/0.chs exists 0"
	assert_line "cas/3.chs exists 0"
	assert_line "nope missing"

	run -0 st "$URL" getmany 4 "${args[@]}"
	assert_equal "$(grep -c ' ok$' <<<"$output")" 20
	local total
	total=$(cat src/* | wc -c)
	assert_line "progress: 20/20 files, $total/$total bytes"
	for i in $(seq 0 19); do
		cmp "src/$i" "dst/d$((i % 3))/$i"
	done
	run -0 find dst -name '*.part'
	assert_output ""
}

@test "store: getmany of 20 objects with 4 jobs, all verified (folder)" {
	many dir
}

@test "store: getmany of 20 objects with 4 jobs, all verified (nginx)" {
	many nginx
}

@test "store: getmany of 20 objects with 4 jobs, all verified (s3rver)" {
	many s3
}

corrupted() {
	remote "$1"
	gen a 200000 1 b 300000 2
	st "$URL" put cas/a a
	st "$URL" put cas/b b
	flip_byte "$(stored cas/b)" 1000
	run -1 st "$URL" getmany 2 "$(job cas/a a out/a)" "$(job cas/b b out/b)"
	assert_output --regexp "hash mismatch for 'cas/b' \(.*cas/b\): expected $(h128 b), got [0-9a-f]{32}"
	assert_file_not_exists out/b
	assert_file_not_exists out/b.part
}

@test "store: getmany refuses a corrupted object and names it (folder)" {
	corrupted dir
}

@test "store: getmany refuses a corrupted object and names it (nginx)" {
	corrupted nginx
}

@test "store: getmany refuses a corrupted object and names it (s3rver)" {
	corrupted s3
}

@test "store: getmany refuses an object of the wrong size" {
	remote nginx
	gen a 1000 1
	st "$URL" put a a
	run -1 st "$URL" getmany 1 "a=out:999:$(h128 a)"
	assert_output --partial "size mismatch for 'a' ($URL/a): expected 999 bytes, got more than 999"
	run -1 st "$URL" getmany 1 "a=out:1001:$(h128 a)"
	assert_output --partial "expected 1001 bytes, got 1000"
	assert_file_not_exists out
	assert_file_not_exists out.part
}

resume() {
	remote "$1"
	# and two .part files that are no prefix of a, for below
	gen a 2500000 1 b 100 2 not-a 2000000 9 past-a 2600000 9
	st "$URL" put cas/a a
	st "$URL" put cas/b b
	mkdir out
	head -c 1234567 a >out/a.part
	cp b out/b.part # all of it already
	run -0 st "$URL" getmany 2 "$(job cas/a a out/a)" "$(job cas/b b out/b)"
	assert_line "cas/a ok resumed"
	assert_line "cas/b ok resumed"
	cmp a out/a
	cmp b out/b
	assert_file_not_exists out/a.part

	# a .part that is no prefix of the object: fetched again from 0,
	# so not resumed
	rm out/a
	mv not-a out/a.part
	run -0 st "$URL" getmany 2 "$(job cas/a a out/a)"
	assert_line "cas/a ok"
	cmp a out/a

	# longer than the object: cannot be a prefix, not continued
	rm out/a
	mv past-a out/a.part
	run -0 st "$URL" getmany 2 "$(job cas/a a out/a)"
	assert_line "cas/a ok"
	cmp a out/a
}

@test "store: getmany continues a .part and checks the whole (folder)" {
	resume dir
}

@test "store: getmany continues a .part and checks the whole (nginx)" {
	resume nginx
}

@test "store: getmany continues a .part and checks the whole (s3rver)" {
	resume s3
}

@test "store: getmany rides out nginx going away and coming back" {
	remote nginx
	local args=() i made=() puts=() triples=()
	mkdir src
	for i in $(seq 0 9); do
		made+=("src/$i" 200000 "$i")
		puts+=("k/$i=src/$i")
		triples+=("k/$i" "src/$i" "dst/$i")
	done
	gen "${made[@]}"
	st "$URL" putmany 4 "${puts[@]}" >/dev/null
	mapfile -t args < <(job_lines "${triples[@]}")
	stop_nginx
	# back after about a second; the retries wait far longer in all
	(
		sleep 1
		restart_nginx
	) 3>&- &
	local back=$!
	run -0 st --retries 12 --backoff-ms 100 "$URL" getmany 4 "${args[@]}"
	wait "$back"
	for i in $(seq 0 9); do
		cmp "src/$i" "dst/$i"
	done
}

@test "store: a server that stays away: the error says how many attempts" {
	remote nginx
	stop_nginx
	run -1 st --retries 2 --backoff-ms 10 "$URL" get k
	assert_output --regexp "^store_tool: cannot GET $URL/k: .*\(after 3 attempts\)$"
	run -1 st --retries 1 --backoff-ms 10 "$URL" getmany 2 "k=out:1:00000000000000000000000000000000"
	assert_output --partial "(after 2 attempts)"
	run -1 st --retries -1 "$URL" stat k
	assert_output --regexp "^store_tool: cannot HEAD $URL/k: [^(]*$"
}

@test "store: a 5xx is retried, then reported with its status" {
	remote nginx
	# a PUT onto a folder's name makes nginx's WebDAV answer 409 or 500
	mkdir -p www/repo/d/e
	run -1 st --retries 1 --backoff-ms 10 "$URL" put d/e /dev/null
	assert_output --regexp "cannot PUT $URL/d/e: HTTP (409|500)"
}

# ------------------------------------------------------------------
# Listing and deleting

# list_delete KIND: list sees every object under a prefix, at any depth,
# sorted, with its size and a recent time; delete removes objects and a
# missing one is no error.
list_delete() {
	remote "$1"
	gen big 70001 1
	: >empty
	st "$URL" put cas/ab/big big
	st "$URL" put cas/cd/empty empty
	st "$URL" put versions/v.json big
	st "$URL" put tags/latest empty

	run -0 st "$URL" list cas
	assert_equal "$(cut -d' ' -f1,2 <<<"$output")" \
		"$(printf '%s\n' 'cas/ab/big 70001' 'cas/cd/empty 0')"
	local now mtime
	now=$(date +%s)
	for mtime in $(cut -d' ' -f3 <<<"$output"); do
		[ "$mtime" -gt $((now - 600)) ] && [ "$mtime" -le $((now + 600)) ] ||
			fail "mtime $mtime is not near now ($now)"
	done
	run -0 st "$URL" list
	assert_equal "$(cut -d' ' -f1 <<<"$output")" \
		"$(printf '%s\n' cas/ab/big cas/cd/empty tags/latest versions/v.json)"
	run -0 st "$URL" list nothing-here
	assert_output ""

	run -0 st "$URL" delete cas/ab/big tags/latest cas/ab/never-was
	run -0 st "$URL" stat cas/ab/big
	assert_output "missing"
	run -0 st "$URL" list
	assert_equal "$(cut -d' ' -f1 <<<"$output")" \
		"$(printf '%s\n' cas/cd/empty versions/v.json)"
}

@test "store: list and delete (folder)" {
	list_delete dir
	# a put's temporaries are not objects
	: >remote/cas/cd/.big.tmp-123
	run -0 st "$URL" list cas
	assert_output --regexp '^cas/cd/empty 0 [0-9]+$'
}

@test "store: list and delete (nginx)" {
	list_delete nginx
}

@test "store: list and delete (s3rver)" {
	list_delete s3
}

@test "store: s3 listing follows continuation tokens past 1000 keys" {
	remote s3
	: >empty
	# 1003 objects in one process, not 1003
	local i jobs=()
	for i in $(seq 1 1003); do
		jobs+=("cas/$((i % 7))/o$i=empty")
	done
	st "$URL" putmany 8 "${jobs[@]}" >/dev/null 2>&1
	run -0 st "$URL" list cas
	assert_equal "${#lines[@]}" 1003
	assert_equal "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" 1003
}

@test "store: an http server without a JSON index cannot be listed, and says how" {
	NGINX_INDEX='autoindex on;' # HTML
	remote nginx
	st "$URL" put cas/ab/x /dev/null
	run -1 st "$URL" list cas
	assert_output --partial "autoindex_format json"
	NGINX_INDEX=''
	stop_nginx
	restart_nginx
	run -1 st "$URL" list cas
	assert_output --partial "403"
	assert_output --partial "autoindex_format json"
}
