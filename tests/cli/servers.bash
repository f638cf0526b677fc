# servers.bash - test servers for remotes, on 127.0.0.1 only: nginx with
# WebDAV (an http:// remote) and s3rver (an s3:// remote).
#
#   start_nginx ROOTDIR [CONFDIR]  exports NGINX_URL=http://127.0.0.1:PORT;
#                                  $NGINX_EXTRA: more directives for /;
#                                  $NGINX_INDEX: its folder index (default
#                                  nginx's JSON one, which lists a remote)
#   restart_nginx                  the same server again, on the same port
#                                  (its config rewritten: NGINX_EXTRA anew)
#   stop_nginx
#   start_s3rver DATADIR BUCKET    exports AWS_ENDPOINT_URL and credentials
#   stop_s3rver
#   shared_s3rver BUCKET           start_s3rver, one server for a test file;
#                                  sets S3_PREFIX, this test's own folder
#   stop_shared_s3rver             in teardown_file
#   start_static ROOTDIR           python3 -m http.server: GET and HEAD
#                                  only, Range ignored; exports STATIC_URL,
#                                  its log of requests in $STATIC_LOG
#                                  (may be called from setup_file)
#   stop_static
#
# A test that starts one calls stop_servers in its teardown.  A watchdog
# kills each server when bats itself ends, so none outlives the run even
# when a test is interrupted.  When nginx or s3rver is not installed the
# test is skipped with a message (scripts/install-deps.sh installs both).

# free_port: a TCP port nobody listens on now.
free_port() {
	"$PYTHON" -S -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
'
}

# _closefds: closes every file descriptor above 2 of this (sub)shell.
# bats waits for whoever holds its descriptors, and a daemon keeps what it
# inherits.
_closefds() {
	local fd
	for fd in /proc/$BASHPID/fd/*; do
		fd=${fd##*/}
		[ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
	done
}

# _detached CMD...: in a subshell, becomes CMD holding only 0-2.
_detached() {
	_closefds
	exec "$@"
}

# _watch PID: kills PID when the bats run ends, even when a test is cut
# short before its teardown.
_watch() {
	local pid=$1 root=${BATS_ROOT_PID:-$$}
	(
		_closefds
		while kill -0 "$root" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do
			sleep 1
		done
		kill "$pid" 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
}

# _wait_http URL PID: until URL answers (any HTTP status), while PID lives.
_wait_http() {
	local i
	for i in $(seq 1 200); do
		if curl -s -o /dev/null --max-time 2 "$1"; then
			return 0
		fi
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

_nginx_conf() {
	local user=""
	[ "$(id -u)" = 0 ] && user="user root;"
	cat <<EOF
$user
daemon on;
worker_processes 1;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $NGINX_DIR/body;
	proxy_temp_path $NGINX_DIR/proxy;
	fastcgi_temp_path $NGINX_DIR/fastcgi;
	uwsgi_temp_path $NGINX_DIR/uwsgi;
	scgi_temp_path $NGINX_DIR/scgi;
	default_type application/octet-stream;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		root $NGINX_ROOT;
		client_max_body_size 0;
		location / {
			dav_methods PUT DELETE MKCOL;
			create_full_put_path on;
			# folders as JSON: how chute lists an http remote
			${NGINX_INDEX-autoindex on; autoindex_format json;}
			${NGINX_EXTRA:-}
		}
		location /denied/ {
			deny all;
		}
	}
}
EOF
}

# _nginx_up: starts nginx from $NGINX_DIR/nginx.conf and waits for it.
_nginx_up() {
	(_detached nginx -e "$NGINX_DIR/error.log" -p "$NGINX_DIR" \
		-c "$NGINX_DIR/nginx.conf") </dev/null >>"$NGINX_DIR/start.log" 2>&1 ||
		return 1
	NGINX_PID=$(cat "$NGINX_DIR/nginx.pid") || return 1
	_watch "$NGINX_PID"
	_wait_http "$NGINX_URL/" "$NGINX_PID"
}

start_nginx() {
	command -v nginx >/dev/null || skip "nginx is not installed (scripts/install-deps.sh)"
	stop_nginx
	NGINX_ROOT=$(mkdir -p "$1" && cd "$1" && pwd)
	NGINX_DIR=${2:-$BATS_TEST_TMPDIR/nginx}
	mkdir -p "$NGINX_DIR"
	local try
	for try in 1 2 3; do
		NGINX_PORT=$(free_port)
		NGINX_URL=http://127.0.0.1:$NGINX_PORT
		_nginx_conf >"$NGINX_DIR/nginx.conf"
		if _nginx_up; then
			export NGINX_URL NGINX_PORT NGINX_DIR NGINX_ROOT NGINX_PID
			return 0
		fi
		stop_nginx
	done
	fail "nginx did not start: $(cat "$NGINX_DIR/error.log" 2>/dev/null)"
}

restart_nginx() {
	local try
	_nginx_conf >"$NGINX_DIR/nginx.conf"
	# a server killed a moment ago may still hold the port
	for try in 1 2 3 4 5 6 7 8 9; do
		_nginx_up && return 0
		sleep 0.2
	done
	_nginx_up || fail "nginx did not restart: $(cat "$NGINX_DIR/error.log")"
}

stop_nginx() {
	local pid
	[ -n "${NGINX_DIR:-}" ] && [ -f "$NGINX_DIR/nginx.pid" ] || return 0
	pid=$(cat "$NGINX_DIR/nginx.pid")
	kill "$pid" 2>/dev/null
	# nginx removes its pid file once its workers are gone
	while [ -f "$NGINX_DIR/nginx.pid" ] && kill -0 "$pid" 2>/dev/null; do
		sleep 0.05
	done
	rm -f "$NGINX_DIR/nginx.pid"
}

S3RVER_JS="$REPO_ROOT/.deps/node_modules/s3rver/bin/s3rver.js"

# _s3rver_env PORT: the environment that sends S3 requests to the s3rver
# on PORT, with its credentials.
_s3rver_env() {
	export AWS_ENDPOINT_URL=http://127.0.0.1:$1
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
	export AWS_REGION=us-east-1
	unset AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_ENDPOINT_URL_S3
}

start_s3rver() {
	command -v node >/dev/null && [ -f "$S3RVER_JS" ] ||
		skip "s3rver is not installed (scripts/install-deps.sh)"
	local dir=$1 bucket=$2 try port
	stop_s3rver
	mkdir -p "$dir"
	for try in 1 2 3; do
		port=$(free_port)
		# s3rver's continuation tokens (ListObjectsV2 past 1000 keys)
		# are DES-encrypted, which Node's OpenSSL 3 only has in its
		# legacy provider
		_detached node --openssl-legacy-provider "$S3RVER_JS" -d "$dir" -a 127.0.0.1 -p "$port" \
			--configure-bucket "$bucket" </dev/null >"$dir.log" 2>&1 &
		S3RVER_PID=$!
		_watch "$S3RVER_PID"
		if _wait_http "http://127.0.0.1:$port/" "$S3RVER_PID"; then
			export S3RVER_PID
			_s3rver_env "$port"
			return 0
		fi
		stop_s3rver
	done
	fail "s3rver did not start: $(cat "$dir.log")"
}

stop_s3rver() {
	[ -n "${S3RVER_PID:-}" ] || return 0
	kill "$S3RVER_PID" 2>/dev/null
	wait "$S3RVER_PID" 2>/dev/null
	while kill -0 "$S3RVER_PID" 2>/dev/null; do
		sleep 0.05
	done
	S3RVER_PID=
}

# shared_s3rver BUCKET: as start_s3rver, but the first test of a file to
# ask starts the server and the file's later tests use it (a start costs
# about a second of CPU); its data lies in $BATS_FILE_TMPDIR/s3rver/data.
# Each test keeps to its own folder of BUCKET, S3_PREFIX (set here).
# stop_servers leaves it alone: stop_shared_s3rver in teardown_file.
shared_s3rver() {
	local bucket=$1 state=$BATS_FILE_TMPDIR/s3rver pid port had
	mkdir -p "$state"
	if read -r pid port had 2>/dev/null <"$state/server" &&
		kill -0 "$pid" 2>/dev/null; then
		[ "$had" = "$bucket" ] ||
			fail "the shared s3rver has bucket '$had', not '$bucket'"
		_s3rver_env "$port"
	else
		start_s3rver "$state/data" "$bucket"
		echo "$S3RVER_PID ${AWS_ENDPOINT_URL##*:} $bucket" >"$state/server"
		S3RVER_PID= # not this test's to stop
	fi
	S3_PREFIX=t$BATS_TEST_NUMBER
}

stop_shared_s3rver() {
	local pid _
	read -r pid _ 2>/dev/null <"$BATS_FILE_TMPDIR/s3rver/server" || return 0
	kill "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.05
	done
	rm -f "$BATS_FILE_TMPDIR/s3rver/server"
}

start_static() {
	local try port
	stop_static
	STATIC_LOG=${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}/static.log
	for try in 1 2 3; do
		port=$(free_port)
		_detached "$PYTHON" -m http.server --bind 127.0.0.1 \
			--directory "$1" "$port" </dev/null >"$STATIC_LOG" 2>&1 &
		STATIC_PID=$!
		_watch "$STATIC_PID"
		if _wait_http "http://127.0.0.1:$port/" "$STATIC_PID"; then
			export STATIC_URL=http://127.0.0.1:$port STATIC_PID STATIC_LOG
			return 0
		fi
		stop_static
	done
	fail "python3 -m http.server did not start: $(cat "$STATIC_LOG")"
}

stop_static() {
	[ -n "${STATIC_PID:-}" ] || return 0
	kill "$STATIC_PID" 2>/dev/null
	wait "$STATIC_PID" 2>/dev/null
	STATIC_PID=
}

stop_servers() {
	stop_nginx
	stop_s3rver
	stop_static
}
