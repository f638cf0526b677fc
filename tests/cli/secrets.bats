#!/usr/bin/env bats
# No secret is ever shown or stored: a URL's password, AWS_SECRET_ACCESS_KEY
# and AWS_SESSION_TOKEN never reach standard output, standard error, a run
# record, a stats file, a manifest, the history, the cache or an error
# message.  Each test runs every command that can touch a remote or write a
# record, those that succeed and those that fail (a wrong host, a 404, a
# 401 or 403), then looks for the secrets in every byte under its folder.

load helper
load servers

PASSWORD=Pw9x7hush
AWS_SECRET=AwsSecret9x7hush
AWS_TOKEN=AwsToken9x7hush

setup() {
	chute_setup
	export HOME=$BATS_TEST_TMPDIR/home XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache
	mkdir -p "$HOME" out
	mkfixture src
	chute pack -q -o ds src >/dev/null || fail "chute pack failed"
}

teardown() {
	stop_servers
}

# try NAME CMD...: runs chute CMD, its output kept in out/NAME.{1,2} and
# its exit status in out/NAME.rc, for the scan at the end.
try() {
	local name=$1 rc=0
	shift
	chute "$@" >"out/$name.1" 2>"out/$name.2" || rc=$?
	echo "$rc" >"out/$name.rc"
}

# rc_of NAME: the exit status try kept.
rc_of() {
	cat "out/$1.rc"
}

# a key of the fixture, for cat
first_key() {
	chute ls ds | head -n 1 | cut -f1
}

# at REMOTE TAG: REMOTE@TAG, the tag before a query (REMOTE@TAG?QUERY).
at() {
	case $1 in
	*\?*) echo "${1%%\?*}@$2?${1#*\?}" ;;
	*) echo "$1@$2" ;;
	esac
}

# every_remote_command TAG REMOTE: each command that takes a remote.
every_remote_command() {
	local t=$1 r=$2 key
	key=$(first_key)
	try "$t-push" push ds "$r"
	try "$t-push-tag" push -t v1 ds "$r"
	try "$t-pull" pull "$r" "pulled-$t"
	try "$t-pull-tag" pull "$(at "$r" v1)" "pulled-$t"
	try "$t-stream" stream "$r" -b 4 -o "stream-$t.bin" \
		--state "state-$t.json"
	try "$t-record" stream "$(at "$r" v1)" -b 4 --record "run-$t.json" \
		--stats-json "stats-$t.json" --stats -o /dev/null
	try "$t-replay" stream --replay "run-$t.json" -o /dev/null
	try "$t-ls" ls "$r"
	try "$t-cat" cat "$r" "$key"
	try "$t-verify" verify "$r"
	try "$t-status" status "$r"
	try "$t-log" log "$r"
	try "$t-log-json" log --json "$r"
	try "$t-diff" diff ds "$r"
	try "$t-diff-json" diff --json "$(at "$r" v1)" "$r"
	try "$t-manifest" manifest "$r"
	try "$t-export" export "$r" -o "exported-$t"
}

# every_failing_command TAG REMOTE: the same remote that fails (push
# last: on a server that takes it, it makes the remote).  Each request is
# tried once (CHUTE_RETRIES, --retries): a server that is down fails the
# same, without 7.75 s of back-off a command.
every_failing_command() {
	local t=$1 r=$2
	local -x CHUTE_RETRIES=0
	try "$t-pull" pull --retries 0 "$r" "pulled-$t"
	try "$t-pull-tag" pull --retries 0 "$(at "$r" v1)" "pulled-$t"
	try "$t-stream" stream "$r" -b 4 --record "run-$t.json" \
		--stats-json "stats-$t.json" -o /dev/null
	try "$t-log" log "$r"
	try "$t-diff" diff ds "$r"
	try "$t-manifest" manifest "$r"
	try "$t-push" push --retries 0 ds "$r"
}

# no_secret_anywhere [EXCLUDED_DIR]: not one byte under the test's folder
# holds a secret (the server's own configuration aside).
no_secret_anywhere() {
	local hits
	hits=$(grep -rlaF -e "$PASSWORD" -e "$AWS_SECRET" -e "$AWS_TOKEN" \
		--exclude-dir="${1:-none}" "$BATS_TEST_TMPDIR" || true)
	if [ -n "$hits" ]; then
		local f
		for f in $hits; do
			echo "# $f:"
			grep -aF -e "$PASSWORD" -e "$AWS_SECRET" -e "$AWS_TOKEN" \
				"$f" | head -n 3
		done
		fail "a secret was written"
	fi
}

@test "secrets: a URL password never shows up, over http with and without errors" {
	export NGINX_EXTRA="auth_basic chute; auth_basic_user_file $BATS_TEST_TMPDIR/nginx/htpasswd;"
	mkdir -p nginx
	echo "ci:{PLAIN}$PASSWORD" >nginx/htpasswd
	start_nginx www "$BATS_TEST_TMPDIR/nginx"
	local hostport=${NGINX_URL#http://}
	every_remote_command ok "http://ci:$PASSWORD@$hostport/repo"
	# what must work did: the run gets its data through the password
	for t in ok-push ok-push-tag ok-pull ok-pull-tag ok-stream ok-record \
		ok-log ok-diff ok-diff-json ok-manifest; do
		[ "$(rc_of "$t")" = 0 ] || fail "$t exited $(rc_of "$t"): $(cat "out/$t.2")"
	done
	run -0 cat out/ok-push.1
	assert_output --partial "to http://ci:***@$hostport/repo"
	run -0 "$PYTHON" -c 'import json; r = json.load(open("run-ok.json")); print(r["dataset"]["remote"]); print(r["dataset"]["source"])'
	assert_output "http://ci:***@$hostport/repo
http://ci:***@$hostport/repo@v1"
	assert_file_exists stats-ok.json
	# the password in the URL of a failing command
	every_failing_command down "http://ci:$PASSWORD@127.0.0.1:$(free_port)/repo"
	every_failing_command 404 "http://ci:$PASSWORD@$hostport/nothing"
	every_failing_command 401 "http://ci:${PASSWORD}x@$hostport/repo"
	every_failing_command user "http://ci:$PASSWORD@$hostport/repo@nosuchtag"
	for t in down-pull 404-pull 401-pull 401-push 401-stream user-pull; do
		[ "$(rc_of "$t")" = 2 ] || fail "$t exited $(rc_of "$t")"
	done
	run -0 cat out/401-pull.2
	assert_output --partial "http://ci:***@$hostport/repo/tags/latest"
	no_secret_anywhere nginx
}

@test "secrets: AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN never show up, over s3 with and without errors" {
	start_s3rver "$BATS_TEST_TMPDIR/s3" bkt
	export AWS_SECRET_ACCESS_KEY=$AWS_SECRET AWS_SESSION_TOKEN=$AWS_TOKEN
	every_remote_command ok s3://bkt/pre
	for t in ok-push ok-push-tag ok-pull ok-pull-tag ok-stream ok-record \
		ok-log ok-diff ok-diff-json ok-manifest; do
		[ "$(rc_of "$t")" = 0 ] || fail "$t exited $(rc_of "$t"): $(cat "out/$t.2")"
	done
	every_failing_command 404 s3://nobucket/pre
	AWS_ACCESS_KEY_ID=WRONG every_failing_command 403 s3://bkt/pre
	AWS_ENDPOINT_URL=http://127.0.0.1:$(free_port) \
		every_failing_command down s3://bkt/pre
	AWS_ACCESS_KEY_ID= every_failing_command nokey s3://bkt/pre
	for t in 404-pull 403-pull 403-push down-pull nokey-pull nokey-stream; do
		[ "$(rc_of "$t")" = 2 ] || fail "$t exited $(rc_of "$t")"
	done
	no_secret_anywhere
}

@test "secrets: a record of a remote with a password replays, the password from ~/.netrc" {
	export NGINX_EXTRA="auth_basic chute; auth_basic_user_file $BATS_TEST_TMPDIR/nginx/htpasswd;"
	mkdir -p nginx
	echo "ci:{PLAIN}$PASSWORD" >nginx/htpasswd
	start_nginx www "$BATS_TEST_TMPDIR/nginx"
	local remote="http://ci:$PASSWORD@${NGINX_URL#http://}/repo"
	run -0 chute push ds "$remote"
	run -0 chute stream "$remote" -b 4 --seed 3 --record run.json -o first.bin
	run grep -c "$PASSWORD" run.json
	assert_output 0
	run -0 "$PYTHON" -c 'import json; print(json.load(open("run.json"))["dataset"]["remote"])'
	assert_output "http://ci:***@${NGINX_URL#http://}/repo"
	# the record never holds the password: without one the server refuses
	run -2 chute stream --replay run.json --remote-cache c1 -o again.bin
	assert_output --partial "access denied (401) for http://***@${NGINX_URL#http://}/repo/"
	printf 'machine 127.0.0.1 login ci password %s\n' "$PASSWORD" >"$HOME/.netrc"
	run -0 chute stream --replay run.json --remote-cache c2 -o again.bin
	cmp first.bin again.bin
}

# A pre-signed URL's query, as S3 writes one: %2F inside, the signature
# last.  The server below answers 403 to any other query.
SIGNED="X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20261201%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261201T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=$PASSWORD"
SIGNED_SHOWN="X-Amz-Algorithm=***&X-Amz-Credential=***&X-Amz-Date=***&X-Amz-Expires=***&X-Amz-SignedHeaders=***&X-Amz-Signature=***"

# start_query_nginx QUERY: nginx that serves www/ to requests carrying
# exactly QUERY, logging each request line in nginx/access.log.
start_query_nginx() {
	mkdir -p www nginx
	export NGINX_EXTRA="access_log $BATS_TEST_TMPDIR/nginx/access.log; if (\$args != \"$1\") { return 403; }"
	start_nginx www "$BATS_TEST_TMPDIR/nginx"
}

@test "secrets: a pre-signed URL packs, its query sent as it is and never shown" {
	start_query_nginx "$SIGNED"
	tar -cf www/x.tar -C src .
	local url="$NGINX_URL/x.tar?$SIGNED"
	try ok-pack pack -o packed "$url"
	[ "$(rc_of ok-pack)" = 0 ] || fail "pack exited $(rc_of ok-pack): $(cat out/ok-pack.2)"
	try ok-pack-json pack --json -o packed2 "$url"
	[ "$(rc_of ok-pack-json)" = 0 ] || fail "pack --json: $(cat out/ok-pack-json.2)"
	# the query reached the server byte for byte, %2F and all
	grep -qF "HEAD /x.tar?$SIGNED " nginx/access.log ||
		fail "no HEAD with the query: $(cat nginx/access.log)"
	grep -qF "GET /x.tar?$SIGNED " nginx/access.log
	# the samples are the tar's; the manifest names the URL, values hidden
	chute pack -q -o local www/x.tar >/dev/null
	run -0 chute ls packed
	assert_output "$(chute ls local)"
	run -0 "$PYTHON" -c 'import json; print(json.load(open("packed/manifest.json"))["sources"])'
	assert_output "['${NGINX_URL}/x.tar?$SIGNED_SHOWN']"
	# without the query the server says no
	CHUTE_RETRIES=0 run -2 chute pack -o nope "$NGINX_URL/x.tar"
	assert_output --partial "access denied (403) for $NGINX_URL/x.tar"
	# a damaged signature: the message names the URL, values hidden
	CHUTE_RETRIES=0 run -2 chute pack -o nope "${url}x"
	assert_output --partial "access denied (403) for $NGINX_URL/x.tar?$SIGNED_SHOWN"
	no_secret_anywhere nginx
}

@test "secrets: the issue's URLs: a query, a password holding '#' or '/', a token as the user" {
	local down=127.0.0.1:$(free_port) u i=0
	local -x CHUTE_RETRIES=0
	for u in "http://$down/x.tar?X-Amz-Signature=$PASSWORD" \
		"http://alice:Pw#$PASSWORD@$down/x.tar" \
		"http://alice:Pw/$PASSWORD@$down/x.tar" \
		"http://$PASSWORD@$down/x.tar" \
		"http://alice:Pw?$PASSWORD@$down/x.tar" \
		"http://$PASSWORD@$down?x.tar"; do
		try "pack-$((++i))" pack -o packed "$u"
		[ "$(rc_of "pack-$i")" = 2 ] || fail "pack '$u' exited $(rc_of "pack-$i")"
	done
	run -2 chute pack -o packed "http://alice:Pw#$PASSWORD@$down/x.tar"
	assert_output --partial "http://alice:***@$down/x.tar"
	run -2 chute pack -o packed "http://$PASSWORD@$down/x.tar"
	assert_output --partial "http://***@$down/x.tar"
	every_failing_command q "http://$down/repo?token=$PASSWORD"
	every_failing_command hash "http://alice:Pw#$PASSWORD@$down/repo"
	every_failing_command user "http://$PASSWORD@$down/repo"
	no_secret_anywhere
}

@test "secrets: a remote URL's query goes with every request and is never shown" {
	local q="token=$PASSWORD&scope=a%2Fb"
	start_query_nginx "$q"
	local r="$NGINX_URL/repo?$q"
	every_remote_command ok "$r"
	for t in ok-push ok-push-tag ok-pull ok-pull-tag ok-stream ok-record \
		ok-log ok-log-json ok-diff ok-diff-json ok-manifest; do
		[ "$(rc_of "$t")" = 0 ] || fail "$t exited $(rc_of "$t"): $(cat "out/$t.2")"
	done
	cmp ds/manifest.json pulled-ok/manifest.json
	run -0 cat out/ok-push.1
	assert_output --partial "to $NGINX_URL/repo?token=***&scope=***"
	run -0 "$PYTHON" -c 'import json; r = json.load(open("run-ok.json")); print(r["dataset"]["remote"]); print(r["dataset"]["source"])'
	assert_output "$NGINX_URL/repo?token=***&scope=***
$NGINX_URL/repo@v1?token=***&scope=***"
	try ok-tags tags "$r"
	[ "$(rc_of ok-tags)" = 0 ] || fail "tags: $(cat out/ok-tags.2)"
	# every request of chute's carried it (PUTs, GETs of shards, a
	# listing) but the replay's, which has it no more (refused)
	grep -F '"chute/' nginx/access.log >nginx/requests
	grep -qF "PUT /repo/tags/v1?$q " nginx/requests
	grep -qF "GET /repo/cas/" nginx/requests
	grep -qF "GET /repo/tags/?$q " nginx/requests
	! grep -vF "?$q " nginx/requests | grep -vF '" 403 ' | grep -q . ||
		fail "a request without the query: $(grep -vF "?$q " nginx/requests | head -3)"
	# without it the server says no; a record cannot hold it
	CHUTE_RETRIES=0 run -2 chute pull "$NGINX_URL/repo" again
	assert_output --partial "access denied (403)"
	CHUTE_RETRIES=0 run -2 chute stream --replay run-ok.json -o /dev/null \
		--remote-cache c1
	assert_output --partial "access denied (403) for $NGINX_URL/repo/"
	no_secret_anywhere nginx
}
