#!/usr/bin/env bats
# chute pack and what it takes from real folders: stray files, hidden
# names, --exclude/--include, its own output inside a source, UTF-8 names
# in zips, libarchive loaded only then; and what it says, or refuses, when
# it replaces a dataset.

load helper

# id DIR: the id in DIR's manifest.
id() { sed -n 's/^  "id": "\([0-9a-f]*\)",$/\1/p' "$1/manifest.json"; }

# photos: two class folders of small files, as a user's folder looks.
photos() {
	mkdir -p photos/cat photos/dog
	for i in 1 2 3; do
		printf 'c%s' "$i" >"photos/cat/c$i.txt"
		printf 'd%s' "$i" >"photos/dog/d$i.txt"
	done
}

@test "pack: a dataset packed inside its own source is not packed into itself" {
	photos
	run -0 chute pack -q --label-from dir photos -o photos/ds
	run -0 chute pack -q --label-from dir photos -o photos/ds
	assert_line --partial "photos/ds: unchanged"
	run -0 chute ls photos/ds
	assert_equal "${#lines[@]}" 6
	refute_output --partial "ds/"
	# another dataset inside a source is not taken either
	run -0 chute pack -q photos -o other
	run -0 chute ls other
	assert_equal "${#lines[@]}" 6
	refute_output --partial "manifest"
	refute_output --partial "shards"
}

@test "pack: stray files are listed, the first few and a count, with the way out" {
	photos
	for f in README LICENSE NOTES AUTHORS COPYING INSTALL; do
		echo x >"photos/$f"
	done
	run -2 chute pack -q photos -o ds
	assert_output --partial "6 files have no KEY.FIELD name: 'photos/AUTHORS', 'photos/COPYING', 'photos/INSTALL', 'photos/LICENSE', 'photos/NOTES', ..."
	assert_output --partial "leave them out with an exclude pattern (for example 'AUTHORS') or name the ones to pack with an include pattern (--exclude, --include)"
	assert_file_not_exist ds
	run -0 chute pack -q photos -o ds --exclude '[A-Z]*'
	run -0 chute ls ds
	assert_equal "${#lines[@]}" 6
}

@test "pack: --exclude takes names and paths, --include narrows, both repeatable" {
	photos
	mkdir -p photos/dog/tmp
	echo x >photos/dog/tmp/t1.txt
	run -0 chute pack -q photos -o a --exclude tmp --exclude 'c2.*'
	run -0 chute ls a
	assert_output "$(printf 'cat/c1\ttxt:2\ncat/c3\ttxt:2\ndog/d1\ttxt:2\ndog/d2\ttxt:2\ndog/d3\ttxt:2')"
	# a glob with / is the path from the source's top; * stops at /
	run -0 chute pack -q photos -o b --exclude 'dog/*'
	run -0 chute ls b
	assert_equal "${#lines[@]}" 3
	run -0 chute pack -q photos -o c --include 'd1.*' --include 'c3.*'
	run -0 chute ls c
	assert_output "$(printf 'cat/c3\ttxt:2\ndog/d1\ttxt:2')"
	# exclude wins over include
	run -0 chute pack -q photos -o d --include '*.txt' --exclude dog
	run -0 chute ls d
	assert_equal "${#lines[@]}" 3
	run -2 chute pack -q photos -o e --include '*.png'
	assert_output --partial "no files to pack in 'photos' after the exclude and include patterns (--exclude, --include)"
}

@test "pack: hidden files are skipped alike in a folder and in a tar" {
	photos
	echo x >photos/.DS_Store
	mkdir photos/.git
	echo x >photos/.git/config.txt
	echo x >photos/cat/._c1.txt
	run -0 chute pack -q photos -o fromdir
	tar -C photos -cf p.tar .
	run -0 chute pack -q p.tar -o fromtar
	run -0 chute ls fromdir
	local dir=$output
	run -0 chute ls fromtar
	assert_equal "$output" "$dir"
	assert_equal "${#lines[@]}" 6
	# --exclude and strays work on archive members too
	echo x >photos/README
	tar -C photos -cf q.tar .
	run -2 chute pack -q q.tar -o q
	assert_output --partial "1 file has no KEY.FIELD name: 'q.tar:README'"
	run -0 chute pack -q q.tar -o q --exclude README
}

@test "pack: zips with UTF-8 names (Python, Java, 7-Zip) pack, in any locale" {
	"$PYTHON" -c '
import zipfile
z = zipfile.ZipFile("u.zip", "w")
z.writestr("é/naïve.txt", b"x")
z.writestr("日本/猫.txt", b"y")
z.close()'
	for loc in C C.UTF-8; do
		rm -rf "du-$loc"
		LC_ALL=$loc run -0 chute pack -q u.zip -o "du-$loc"
		run -0 chute ls "du-$loc"
		assert_output "$(printf 'é/naïve\ttxt:1\n日本/猫\ttxt:1')"
	done
}

@test "pack: libarchive is loaded when a tar is read, not linked into chute" {
	command -v ldd >/dev/null || skip "ldd is not installed"
	# linked, it and its libraries (libxml2, ICU) slow every command's start
	run -0 ldd "$CHUTE_BIN"
	refute_output --partial libarchive
	refute_output --partial libxml2
	refute_output --partial libicu
	photos
	tar -C photos -czf p.tgz .
	run -0 chute pack -q p.tgz -o ds
	run -0 chute ls ds
	assert_equal "${#lines[@]}" 6
	run -0 chute export -q ds -o out
	run -0 tar -tf out/ds-000000.tar
	assert_line "cat/c1.txt"
}

@test "pack and export: without libarchive, a tar source exits 2 naming the package; export still writes tars" {
	local lib
	lib=$(PATH=$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null |
		awk '$1 == "libarchive.so.13" { print $NF; exit }')
	[ -n "$lib" ] || skip "libarchive.so.13 is not installed"
	# a user and mount namespace puts an empty file in its place
	unshare -rm mount --bind /dev/null "$lib" 2>/dev/null ||
		skip "no user namespaces to hide libarchive in"
	photos
	tar -C photos -cf p.tar .
	run -0 chute pack -q photos -o ds
	hidden() { unshare -rm sh -c 'mount --bind /dev/null "$0" && exec "$@"' "$lib" "$@"; }
	run -2 hidden "$CHUTE_BIN" pack -q p.tar -o fromtar
	assert_output --partial "cannot read tar/zip archives: libarchive.so.13 could not be loaded (install libarchive13"
	# export writes its tars itself (stream/encode_tar.c)
	run -0 hidden "$CHUTE_BIN" export -q ds -o out
	run -0 tar -tf out/ds-000000.tar
	assert_line "cat/c1.txt"
	# a folder still packs
	run -0 hidden "$CHUTE_BIN" pack -q photos -o again
}

@test "pack: replacing a dataset says what changed, and refuses to lose labels, splits or fields" {
	photos
	run -0 chute pack -q --label-from dir photos -o ds
	local first
	first=$(id ds)
	run -0 chute split ds --val 0.34
	local split
	split=$(id ds)
	# without --label-from the labels and the splits would go
	run -2 chute pack -q photos -o ds
	assert_output --partial "refusing to replace 'ds' (version ${split:0:12}): the new version would lose the labels (2 classes), split train, split val; force the pack to replace it anyway (--force)"
	assert_equal "$(id ds)" "$split"
	# a field that goes away is found after the scan
	for i in 1 2 3; do echo j >"photos/cat/c$i.json"; done
	run -0 chute pack -q --label-from dir --force photos -o ds
	assert_line --regexp "^replaced ds: ${split:0:12} -> [0-9a-f]{12} \(.*split train/val removed.*field json added.*\)$"
	rm photos/cat/c*.json
	run -2 chute pack -q --label-from dir photos -o ds
	assert_output --partial "would lose field json;"
	run -0 chute pack -q --label-from dir --force photos -o ds
	assert_line --partial "field json removed"
}
