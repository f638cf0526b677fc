#!/usr/bin/env bats
# Installing the Python package with pip, offline, as a user would: into
# plain venvs (python3 -m venv: pip and setuptools, no `wheel`, no index),
# through the package's own build backend (python/_build/chute_build.py).
# The pure package from ./python, and the platform wheel of `make wheel`
# that carries the chute binary.  `make install` is tested in
# python_stream.bats.

load helper

# Two venvs for the whole file (a few seconds each, made side by side):
# sys sees Debian's numpy and torch (--system-site-packages, which also
# shows it Debian's `wheel`), plain sees nothing but its own pip and
# setuptools.  A dataset to stream.
setup_file() {
	pip_env
	local d=$BATS_FILE_TMPDIR
	timeout 120 "$PYTHON" -m venv --system-site-packages "$d/sys" >"$d/sys.log" 2>&1 &
	timeout 120 "$PYTHON" -m venv "$d/plain" >"$d/plain.log" 2>&1 &
	wait
	(cd "$d" && "$PYTHON" "$REPO_ROOT/scripts/gen-data.py" text src --count 40 -q &&
		"$CHUTE_BIN" pack -q -s 5s -o ds src >/dev/null) >"$d/ds.log" 2>&1
}

# pip_env: pip sees no configuration, no find-links and no index of the
# machine that runs the tests, and asks nothing.
pip_env() {
	unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_REQUIRE_VIRTUALENV \
		PYTHONPATH
	export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 \
		PIP_NO_INPUT=1 PIP_CACHE_DIR="$BATS_FILE_TMPDIR/pip-cache"
}

setup() {
	chute_setup
	pip_env
	SYS=$BATS_FILE_TMPDIR/sys PLAIN=$BATS_FILE_TMPDIR/plain
	if [ ! -x "$SYS/bin/pip" ] || [ ! -x "$PLAIN/bin/pip" ]; then
		skip "$PYTHON -m venv cannot make a venv with pip (Debian: python3-venv): $(tail -n 1 "$BATS_FILE_TMPDIR/plain.log")"
	fi
	[ -f "$BATS_FILE_TMPDIR/ds/manifest.json" ] ||
		fail "cannot make the dataset: $(cat "$BATS_FILE_TMPDIR/ds.log")"
	cp -R "$BATS_FILE_TMPDIR/ds" ds
}

# pip VENV ARGS...: the venv's own pip, offline.
pip() {
	local venv=$1
	shift
	timeout 120 "$venv/bin/pip" "$@" --no-index
}

# count_samples VENV PATH [ARGS]: the samples a chute.Stream over ds yields
# in VENV's Python run with PATH; ARGS more arguments of Stream.  Without
# torch, which is not what this file tests and takes seconds to import.
count_samples() {
	timeout 60 env PATH="$2" "$1/bin/python" -c "
import sys
sys.modules['torch'] = None
import chute
print(sum(b.nsamples for b in chute.Stream('ds', batch_size=4$3)))"
}

@test "pip install ./python: offline into a venv with Debian's numpy; chute imports and streams" {
	run -0 pip "$SYS" install "$REPO_ROOT/python"
	assert_output --partial "Successfully installed chute-"
	run -0 "$SYS/bin/python" -c 'import chute; print(chute.__file__)'
	assert_output --regexp "^$SYS/lib/python3\.[0-9]+/site-packages/chute/__init__\.py\$"
	assert_file_exists "${output%/*}/py.typed"
	assert_file_exists "${output%/*}/_binary.py"
	run -0 count_samples "$SYS" "$PATH" ", chute='$CHUTE_BIN'"
	assert_output 40
}

@test "pip install ./python: a venv without numpy and without wheel installs it with --no-deps, --no-build-isolation and -e" {
	run -1 "$PLAIN/bin/python" -c 'import wheel'
	run -0 pip "$PLAIN" install --no-deps "$REPO_ROOT/python"
	run -0 "$PLAIN/bin/python" -c 'import chute, chute._binary, sys
print(chute.__version__, chute.__file__.startswith(sys.prefix))
from importlib.metadata import requires
print(requires("chute"))'
	assert_line --index 0 "$(sed -n 's/^__version__ = "\(.*\)"$/\1 True/p' "$REPO_ROOT/python/chute/__init__.py")"
	assert_line --index 1 --partial "'numpy'"
	assert_line --index 1 --partial "'zstandard; extra == \"dataset\"'"
	run -0 pip "$PLAIN" install --no-deps --no-build-isolation "$REPO_ROOT/python"
	run -0 "$PLAIN/bin/python" -c 'import chute; print(chute.__file__)'
	assert_output --partial "$PLAIN/lib/"
	# editable: the repository's own files, and no copy
	run -0 pip "$PLAIN" install --no-deps -e "$REPO_ROOT/python"
	run -0 "$PLAIN/bin/python" -c 'import chute; print(chute.__file__)'
	assert_output "$REPO_ROOT/python/chute/__init__.py"
}

@test "make wheel: the platform wheel carries chute; installed, bin/chute runs, find_chute finds it and Stream needs no chute=" {
	run -0 make -C "$REPO_ROOT" --no-print-directory -n wheel DIST="$PWD/dist"
	assert_output --partial "python/_build/chute_build.py --binary build/chute --man man -o $PWD/dist"
	# what make wheel runs, with the binary under test (no rebuild)
	run -0 "$PYTHON" "$REPO_ROOT/python/_build/chute_build.py" --binary "$CHUTE_BIN" \
		--man "$REPO_ROOT/man" -o dist
	local plat whl=$output
	plat=$("$PYTHON" -c 'import re, sysconfig; print(re.sub("[-.]", "_", sysconfig.get_platform()))')
	assert_output --regexp "^dist/chute-[0-9.]+-py3-none-$plat\.whl\$"
	# the same version as ./python's, which pip would keep
	"$SYS/bin/pip" uninstall -qy chute
	run -0 pip "$SYS" install "$whl"
	cmp "$SYS/bin/chute" "$CHUTE_BIN"
	run -0 "$SYS/bin/chute" --version
	assert_equal "${whl#dist/chute-}" "${output#chute }-py3-none-$plat.whl"
	assert_file_exists "$SYS/share/man/man1/chute-stream.1"
	assert_file_exists "$SYS/share/man/man5/chute-shard.5"
	# the version, which the pages in man/ leave out, put in .TH
	run -0 grep '^\.TH' "$SYS/share/man/man5/chute-shard.5"
	assert_output --partial " \"$(chute --version)\" "
	# the venv's Python, not activated, with no chute on PATH
	mkdir empty
	run -0 env PATH="$PWD/empty" "$SYS/bin/python" -c 'from chute._binary import find_chute; print(find_chute())'
	assert_output "$SYS/bin/chute"
	# a Stream without chute= runs the wheel's, with no chute on PATH
	run -0 count_samples "$SYS" "$PWD/empty"
	assert_output 40
}
