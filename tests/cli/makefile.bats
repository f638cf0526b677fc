#!/usr/bin/env bats
# The Makefile on a machine where nothing is installed yet: `make demo` and
# `make test` install the packages first (`deps`), and only then may ask
# pkg-config for the libraries to link.  A stand-in pkg-config answers
# nothing until a stand-in install step has written its marker, as on a
# fresh Debian before apt-get ran.

load helper

setup() {
	chute_setup
	command -v make >/dev/null || skip "make is not installed"
	FAKE="$BATS_TEST_TMPDIR/fake-bin"
	MARKER="$BATS_TEST_TMPDIR/installed"
	mkdir -p "$FAKE"
	real=$(command -v pkg-config) || skip "pkg-config is not installed"
	cat >"$FAKE/pkg-config" <<-SH
		#!/bin/sh
		[ -e "$MARKER" ] && exec "$real" "\$@"
		exit 1
	SH
	chmod +x "$FAKE/pkg-config"
	# Objects from the tested build keep this test to a link, not a
	# rebuild (cp -p keeps them newer than their sources); whatever is
	# missing is compiled.
	OUT="$BATS_TEST_TMPDIR/build"
	mkdir -p "$OUT"
	for d in lib cmd; do
		[ -d "$REPO_ROOT/build/$d" ] && cp -Rp "$REPO_ROOT/build/$d" "$OUT/"
	done
	true
}

# fresh_make ARGS...: make in the repository with the stand-ins in place.
fresh_make() {
	PATH="$FAKE:$PATH" make -C "$REPO_ROOT" --no-print-directory BUILD="$OUT" \
		INSTALL_DEPS="touch $MARKER" "$@"
}

@test "make -j2 demo: the libraries installed by deps are linked" {
	run -0 fresh_make -j2 demo DEMO="echo demo-ran-with"
	assert_output --partial "demo-ran-with $OUT/chute"
	assert_file_exists "$MARKER"
	run -0 "$OUT/chute" --version
}

@test "make test: builds and links after deps, then runs the tests" {
	run -0 fresh_make -j2 test RUN_TESTS="echo tests-ran"
	assert_output --partial "tests-ran"
	run -0 "$OUT/chute" --version
	for t in "$REPO_ROOT"/tests/unit/test_*.c; do
		assert_file_executable "$OUT/tests/$(basename "$t" .c)"
	done
}

@test "make without the libraries: one line names them and says what to run" {
	rm -f "$OUT/chute"
	# no deps: the marker never appears
	run -2 env PATH="$FAKE:$PATH" make -C "$REPO_ROOT" --no-print-directory \
		BUILD="$OUT" all
	assert_output --partial "pkg-config cannot find libarchive libzstd"
	assert_output --partial "run 'make deps'"
	refute_output --partial "undefined reference"
}

@test "make install PREFIX=DIR: man finds every page, from PATH or MANPATH" {
	command -v man >/dev/null || skip "man is not installed (man-db: scripts/install-deps.sh)"
	local prefix=$BATS_TEST_TMPDIR/prefix page names=()
	run -0 make -C "$REPO_ROOT" --no-print-directory BUILD="$OUT" \
		PREFIX="$prefix" install
	run -0 "$prefix/bin/chute" --version
	local version=$output
	for page in "$REPO_ROOT"/man/*.[157]; do
		page=${page##*/}
		names+=("${page%.*}")
		# the version, which the pages in man/ leave out, put in .TH
		grep -q "^\\.TH [^\"]*\"$version\" " "$prefix/share/man/man${page##*.}/$page" ||
			fail "installed $page: .TH does not say \"$version\""
	done
	# as a user finds them: bin/ on PATH, and man-db looks in ../share/man
	run -0 env -u MANPATH PATH="$prefix/bin:$PATH" man -w "${names[@]}"
	assert_equal "${#lines[@]}" "${#names[@]}"
	for page in "${lines[@]}"; do
		[[ $page == "$prefix/share/man/man"[157]/chute*.[157] ]] ||
			fail "man found $page, not the installed page"
	done
	run -0 env MANPATH="$prefix/share/man" man -P cat chute-scale
	assert_output --partial "pack a dataset in parts on many workers"
}
