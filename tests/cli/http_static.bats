#!/usr/bin/env bats
# An http remote on a plain static file server (python3 -m http.server),
# which answers GET and HEAD, ignores Range and answers PUT with 501.
# A pull over a partial download gets whole bodies: the files are right
# and none is counted as resumed.  A push says at once that the server
# does not accept PUT: a 501 is not retried.

load helper
load servers

# One dataset and one server for the file: ds, pushed to www/d.
setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" text src --count 60 \
		--seed 1 >/dev/null || fail "scripts/gen-data.py text failed"
	chute pack -q -s 20s -o ds src >/dev/null
	chute push ds www/d >/dev/null
	start_static www
	DS=$BATS_FILE_TMPDIR/ds WWW=$BATS_FILE_TMPDIR/www
	export DS WWW
}

teardown_file() {
	stop_servers
}

@test "static http: a partial download comes whole from a server that ignores Range, not counted as resumed" {
	local objs
	objs=($(find "$WWW/d/cas" -name '*.chs' | sort))
	mkdir -p back/.chute/pull
	head -c 100 "${objs[0]}" >"back/.chute/pull/${objs[0]##*/}.part"
	head -c 100 "${objs[1]}" >"back/.chute/pull/${objs[1]##*/}.part"
	run -0 chute pull "$STATIC_URL/d" back
	assert_output --regexp "[0-9]+ downloaded \([0-9.]+ [kM]?B, 0 resumed\)"
	cmp "$DS/manifest.json" back/manifest.json
	run -0 chute verify back
	run -0 chute diff "$DS" back
}

@test "static http: a push says the server does not accept PUT, exit 2, without retrying" {
	run -2 chute push "$DS" "$STATIC_URL/e"
	assert_output --regexp "^chute push: cannot PUT $STATIC_URL/e/[^ ]+: HTTP 501: the server does not accept PUT \(no WebDAV\?\)$"
	# each object asked for once
	awk '$6 == "\"PUT" { print $7 }' "$STATIC_LOG" | sort >puts
	[ -s puts ] || fail "no PUT reached the server"
	run -0 uniq -d puts
	assert_output ""
}
