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

# every_remote_command TAG REMOTE: each command that takes a remote.
every_remote_command() {
	local t=$1 r=$2 key
	key=$(first_key)
	try "$t-push" push ds "$r"
	try "$t-push-tag" push -t v1 ds "$r"
	try "$t-pull" pull "$r" "pulled-$t"
	try "$t-pull-tag" pull "$r@v1" "pulled-$t"
	try "$t-stream" stream "$r" -b 4 -o "stream-$t.bin"
	try "$t-record" stream "$r@v1" -b 4 --record "run-$t.json" \
		--stats-json "stats-$t.json" --stats -o /dev/null
	try "$t-replay" stream --replay "run-$t.json" -o /dev/null
	try "$t-ls" ls "$r"
	try "$t-cat" cat "$r" "$key"
	try "$t-verify" verify "$r"
	try "$t-status" status "$r"
	try "$t-log" log "$r"
	try "$t-log-json" log --json "$r"
	try "$t-diff" diff ds "$r"
	try "$t-diff-json" diff --json "$r@v1" "$r"
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
	try "$t-pull-tag" pull --retries 0 "$r@v1" "pulled-$t"
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
	assert_output --partial "access denied (401) for http://ci@${NGINX_URL#http://}/repo/"
	printf 'machine 127.0.0.1 login ci password %s\n' "$PASSWORD" >"$HOME/.netrc"
	run -0 chute stream --replay run.json --remote-cache c2 -o again.bin
	cmp first.bin again.bin
}
