#!/usr/bin/env bats
# chute remote: named remotes kept in a dataset folder's .chute/config and
# in the user's config, and those names in push, pull, stream and every
# REF; never a credential in a config file.

load helper
load servers

# packed DS: a small dataset of 30 samples.
packed() {
	"$PYTHON" "$REPO_ROOT/scripts/gen-data.py" images "src-$1" --count 30 \
		--size 500 --classes 3 --seed 7 >/dev/null ||
		fail "scripts/gen-data.py images src-$1 failed"
	chute pack -q --label-from dir -o "$1" "src-$1" >/dev/null ||
		fail "chute pack $1 failed"
}

# mid DS: the dataset's version id.
mid() {
	"$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' \
		"$1/manifest.json"
}

teardown() {
	stop_servers
}

@test "remote names: add --default writes .chute/config, push takes the default" {
	packed ds
	run -0 chute remote -C ds add --default origin store
	assert_output "added remote origin = $PWD/store in ds/.chute/config (the default)"
	run -0 cat ds/.chute/config
	assert_output "$(printf '[remote "origin"]\n\turl = %s\n[core]\n\tremote = origin' "$PWD/store")"
	run -0 chute push ds
	assert_output --partial "pushed $(mid ds) to file://$PWD/store"
	[ "$(cat store/tags/latest)" = "$(mid ds)" ]
}

@test "remote names: push DS NAME, pull NAME@TAG DIR, stream NAME@TAG" {
	packed ds
	chute remote -C ds add origin "$PWD/store" >/dev/null
	run -0 chute push ds origin --tag v1
	# pull into a new folder: the name is found in the current folder's
	# dataset config
	cd ds
	run -0 chute pull origin@v1 ../back
	assert_output --partial "pulled $(mid .) into ../back"
	cd ..
	run -0 chute verify back
	run -0 cmp ds/manifest.json back/manifest.json
	cd ds
	run -0 chute stream origin@v1 --epochs 1 -f jsonl
	[ "${#lines[@]}" -gt 0 ]
	chute stream . --epochs 1 -f jsonl >../local.jsonl
	run -0 cmp <(chute stream origin@v1 --epochs 1 -f jsonl) ../local.jsonl
	# a run record keeps the url: it replays where the name is unknown
	chute stream origin@v1 --epochs 1 -f jsonl --record ../run.json >/dev/null
	cd ..
	run -0 grep -c "\"remote\": *\"file://$PWD/store\"" run.json
	run -0 cmp <(chute stream --replay run.json) local.jsonl
}

@test "remote names: manifest, log and diff take NAME@TAG" {
	packed ds
	# (not ./shelf: an existing path would be read as a local one)
	chute remote --user add shelf "$PWD/remotes/shelf" >/dev/null
	chute push ds shelf --tag v1 >/dev/null
	run -0 chute manifest shelf@v1
	assert_output --partial "$(mid ds)"
	run -0 chute log shelf
	assert_output --partial "$(mid ds)"
	run -0 chute diff shelf@v1 ds
}

@test "remote names: the user file holds defaults for every dataset" {
	packed ds
	run -0 chute remote --user add --default shelf "$PWD/shelf"
	assert_output --partial "in $XDG_CONFIG_HOME/chute/config (the default)"
	run -0 chute push ds
	assert_output --partial "to file://$PWD/shelf"
	# the dataset's own default comes first
	chute remote -C ds add --default mine "$PWD/mine" >/dev/null
	run -0 chute push ds
	assert_output --partial "to file://$PWD/mine"
	run -0 chute remote -C ds list
	assert_output "$(printf 'mine\t%s\tdefault\nshelf\t%s' "$PWD/mine" "$PWD/shelf")"
	run -0 chute remote -C ds default
	assert_output "$(printf 'mine\t%s' "$PWD/mine")"
}

@test "remote names: a dataset name shadows the user's, list --json says where each is" {
	packed ds
	chute remote --user add origin "$PWD/far" >/dev/null
	chute remote -C ds add origin "$PWD/near" >/dev/null
	chute push ds origin >/dev/null
	[ -f near/tags/latest ]
	[ ! -e far ]
	run -0 chute remote -C ds list --json
	run -0 "$PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["default"] is None, d
assert [(r["name"], r["url"], r["file"], r["default"]) for r in d["remotes"]] == \
	[("origin", sys.argv[2] + "/near", "ds/.chute/config", False)], d
' "$output" "$PWD"
}

@test "remote names: an existing path stays local, even with an '@'" {
	packed ds
	chute remote --user add ds "$PWD/elsewhere" >/dev/null
	# ./ds exists: the folder, not the remote
	run -0 chute manifest ds
	assert_output --partial "$(mid ds)"
	cp -r ds 'odd@name'
	run -0 chute manifest 'odd@name'
	assert_output --partial "$(mid ds)"
	# pull's REMOTE: an existing folder is a folder remote
	chute push ds "$PWD/plain" >/dev/null
	run -0 chute pull plain@latest back
}

@test "remote names: an unknown name lists the known ones, exit 2" {
	packed ds
	chute remote -C ds add origin "$PWD/a" >/dev/null
	chute remote --user add backup "$PWD/b" >/dev/null
	cd ds
	run -2 chute stream orgin@v1
	assert_output "chute stream: no remote named 'orgin' (known: origin, backup)"
	run -2 chute pull orgin@latest ../x
	assert_output --partial "no remote named 'orgin' (known: origin, backup)"
	# with names in use, a typo does not make a new folder
	run -2 chute push . orgin
	assert_output --partial "(known: origin, backup)"
	[ ! -e orgin ]
	run -2 chute remote remove orgin
	assert_output --partial "no remote named 'orgin' (known: origin)"
	run -2 chute remote default nope
	assert_output --partial "(known: origin, backup)"
}

@test "remote names: push without a remote and no default says how to add one" {
	packed ds
	run -2 chute push ds
	assert_output --partial "no default remote"
	assert_output --partial "add one as the default, for the dataset folder or for all of the user's (chute remote [-C DIR|--user] add [--default] [--force] NAME URL)"
	# without names, a new folder as before
	run -0 chute push ds newfolder
	[ -f newfolder/tags/latest ]
}

@test "remote names: add refuses an existing name unless --force" {
	packed ds
	chute remote -C ds add origin "$PWD/a" >/dev/null
	run -2 chute remote -C ds add origin "$PWD/b"
	assert_output --partial "remote 'origin' is already in 'ds/.chute/config'"
	assert_output --partial "--force"
	assert_output --partial "chute remote remove origin"
	run -0 grep -c "url = $PWD/a\$" ds/.chute/config
	run -0 chute remote -C ds add --force origin "$PWD/b"
	assert_output --partial "replaced remote origin"
	run -0 grep -c "url = $PWD/b\$" ds/.chute/config
}

@test "remote names: credentials are refused with a hint where they go" {
	packed ds
	run -2 chute remote -C ds add web "https://ci:secret@data.example.com/x"
	assert_output --partial "not kept in a config file"
	assert_output --partial "~/.netrc"
	refute_output --partial "secret"
	run -2 chute remote -C ds add s3 "s3://b/x?X-Amz-Signature=abc&X-Amz-Credential=k"
	assert_output --partial "AWS_ACCESS_KEY_ID"
	refute_output --partial "abc"
	run -2 chute remote -C ds add ftp "ftp://host/x"
	assert_output --partial "not a remote url"
	[ ! -e ds/.chute/config ]
}

@test "remote names: add refuses control bytes, s3:// with no bucket, an unclosed IPv6 host and a user of any shape" {
	packed ds
	local u
	for u in $'http://h/a\033b' $'http://h/a\tb' $'/srv/a\tb' s3:// s3:///p \
		'http:///x' 'http://[::1/x' 'http://alice:Pw#Secret@h/' \
		'http://alice:Pw/Secret@h/x' 'http://TOKEN@h/x'; do
		run -2 chute remote -C ds add web "$u"
		refute_output --partial "Secret"
		refute_output --partial "TOKEN"
		[ ! -e ds/.chute/config ] || fail "'$u' was kept: $(cat ds/.chute/config)"
	done
	run -2 chute remote -C ds add web $'http://h/a\033b'
	assert_output "chute remote: 'http://h/a\x1bb': a remote url holds no control character (byte 0x1b at offset 10)"
	run -2 chute remote -C ds add web s3://
	assert_output "chute remote: 's3://': no bucket (s3://BUCKET/PREFIX)"
	run -2 chute remote -C ds add web 'http://[::1/x'
	assert_output --partial "an IPv6 address is written [ADDRESS]"
	run -0 chute remote -C ds add web 'http://[::1]:8080/x'
}

@test "remote names: a config file that opens with a UTF-8 byte order mark is read" {
	packed ds
	mkdir -p ds/.chute
	printf '\xef\xbb\xbf[remote "origin"]\n\turl = %s\n' "$PWD/r" >ds/.chute/config
	run -0 chute remote -C ds list
	assert_output --partial "origin"
	run -0 chute push ds origin
	[ -e r/tags/latest ]
}

@test "remote names: a config that does not parse names the file and line, exit 2" {
	packed ds
	mkdir -p ds/.chute
	printf '[remote "origin"]\n\turl = /x\nthis is not a key\n' >ds/.chute/config
	run -2 chute push ds origin
	assert_output "chute push: ds/.chute/config:3: not a [section] nor KEY = VALUE"
	printf '[remote "origin"]\n\turl = /x\n\turl = /y\n' >ds/.chute/config
	cd ds
	run -2 chute manifest origin@v1
	assert_output "chute manifest: .chute/config:3: a second url for remote 'origin'"
	printf '[remote "a b"]\n\turl = /x\n' >.chute/config
	run -2 chute remote list
	assert_output --partial ".chute/config:1: 'a b' is not a remote name"
	printf '[remote "origin"]\n\turl = ../rel\n' >.chute/config
	run -2 chute remote add x /y
	assert_output --partial ".chute/config:2: '../rel': a folder remote in a config file is an absolute path"
	# the value read before the stray text is freed (LeakSanitizer, in
	# the sanitizer pass, fails the run on a leak)
	printf '[remote "origin"]\n\turl = "/x"y\n' >.chute/config
	run -2 chute remote list
	assert_output "chute remote: .chute/config:2: text after a quoted value"
	printf '[remote "origin"]\n\turl = "/x\n' >.chute/config
	run -2 chute remote list
	assert_output "chute remote: .chute/config:2: a quote is not closed"
	mkdir -p "$XDG_CONFIG_HOME/chute"
	printf '[core\n' >"$XDG_CONFIG_HOME/chute/config"
	cd ..
	run -2 chute remote --user list
	assert_output --partial "$XDG_CONFIG_HOME/chute/config:1: a section header is"
}

@test "remote names: remove drops the remote and a default naming it; other keys are kept" {
	packed ds
	mkdir -p ds/.chute
	printf '# mine\n[remote "origin"]\n\turl = /srv/o\n\tkeep-me = yes\n[core]\n\tremote = origin\n[extra]\n\tx = "  spaced "\n' >ds/.chute/config
	run -0 chute remote -C ds add other /srv/p
	run -0 chute remote -C ds remove origin
	assert_output "removed remote origin from ds/.chute/config"
	run -0 cat ds/.chute/config
	assert_output "$(printf '[extra]\n\tx = "  spaced "\n[remote "other"]\n\turl = /srv/p')"
	run -2 chute remote -C ds default
	run -0 chute remote -C ds default other
	run -0 chute remote -C ds default
	assert_output "$(printf 'other\t/srv/p')"
}

@test "remote names: -C needs a dataset folder, and the actions their operands" {
	mkdir plain
	run -2 chute remote -C plain add origin /x
	assert_output --partial "'plain' is not a dataset folder"
	cd plain
	run -2 chute remote add origin /x
	assert_output --partial "'.' is not a dataset folder"
	assert_output --partial "--user"
	run -2 chute remote ad origin /x
	assert_output --partial "did you mean 'add'?"
	run -2 chute remote --user add origin
	assert_output --partial "give a name and a url"
	run -2 chute remote --user add -- -bad /x
	assert_output --partial "'-bad' is not a remote name"
	run -2 chute remote -C . --user list
	run -2 chute remote list --force
	# list outside a dataset folder: the user's remotes
	chute remote --user add u /srv/u >/dev/null
	run -0 chute remote list
	assert_output "$(printf 'u\t/srv/u')"
}

@test "remote names: tags, gc and pull take a name, and the default without one" {
	packed ds
	chute remote -C ds add --default store "$PWD/store" >/dev/null
	chute push ds --tag v1 >/dev/null
	cd ds
	# ./store does not exist here: the name, not a folder
	run -0 chute tags store
	assert_line --index 1 --partial "v1          $(mid .)"
	local by_name=$output
	run -0 chute tags
	assert_equal "$output" "$by_name"
	run -0 chute gc store
	assert_line --index 1 --partial "kept 1 version and the 1 object"
	run -0 chute gc
	assert_line --index 1 --partial "kept 1 version and the 1 object"
	# pull DIR: from the default remote; a lone remote is a folder forgotten
	run -0 chute pull ../back
	assert_output --partial "pulled $(mid .) into ../back"
	run -2 chute pull store@v1
	assert_output "chute pull: 'store@v1' is a remote: give the folder to pull into after it"
	run -2 chute pull store
	assert_output --partial "'store' is a remote"
	[ ! -e store ]
	run -2 chute tags stor
	assert_output "chute tags: no remote named 'stor' (known: store)"
	cd ..
	# no default anywhere: tags says how to add one
	run -2 chute tags
	assert_output --partial "no default remote"
}

@test "remote names: a folder remote that is not there is exit 2 for every command that reads one" {
	packed ds
	chute remote -C ds add gone "$PWD/gone" >/dev/null
	local cmd
	for cmd in "tags /no/such" "gc /no/such" "tags file:///no/such" \
		"pull /no/such back" "pull file:///no/such@v1 back" \
		"log file:///no/such" "manifest file:///no/such@v1" \
		"diff file:///no/such@v1 ds" "stream -f jsonl file:///no/such@v1"; do
		run -2 chute $cmd
		assert_output "chute ${cmd%% *}: no remote at /no/such: no such folder"
	done
	cd ds
	run -2 chute tags gone
	assert_output "chute tags: no remote at $BATS_TEST_TMPDIR/gone: no such folder"
	run -2 chute stream gone@v1
	assert_output --partial "no remote at $BATS_TEST_TMPDIR/gone"
	run -2 chute tags manifest.json
	assert_output "chute tags: no remote at manifest.json: not a folder"
	cd ..
	[ ! -e gone ] && [ ! -e back ] && [ ! -e /no ]
}

@test "remote names: an http remote by name (nginx)" {
	start_nginx www
	packed ds
	chute remote -C ds add --default web "$NGINX_URL/data" >/dev/null
	run -0 chute push ds --tag v1
	assert_output --partial "to $NGINX_URL/data"
	cd ds
	run -0 chute pull web@v1 ../back
	cd ..
	run -0 cmp ds/manifest.json back/manifest.json
}

@test "remote names: an s3 remote by name (s3rver)" {
	start_s3rver s3data bucket
	packed ds
	chute remote --user add --default bucket s3://bucket/sets/ds >/dev/null
	run -0 chute push ds --tag v1
	assert_output --partial "to s3://bucket/sets/ds"
	run -0 chute manifest bucket@v1
	assert_output --partial "$(mid ds)"
}
