#!/bin/sh
# Install every Debian package chute's build, tests, demo and benchmarks need
# (chromium: the tests open chute check --html's page in it, headless),
# and s3rver (npm) into the repository's .deps/ for the S3 tests.
# Idempotent: packages already present are not fetched again, and the package
# lists are refreshed only when something is missing.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)

PACKAGES="
build-essential pkg-config
libarchive-dev libxxhash-dev xxhash libzstd-dev zstd
libcurl4-openssl-dev libjansson-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev
bats bats-support bats-assert bats-file
python3 python3-zstandard python3-xxhash python3-numpy python3-pil
python3-pip python3-setuptools python3-wheel python3-venv python3-pytest
python3-torch python3-torchvision dataset-fashion-mnist
mate-backgrounds plasma-workspace-wallpapers
clang libclang-rt-14-dev mandoc man-db time zip bsdextrautils curl procps mount
jq file
nginx
chromium
"

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

# node may come from elsewhere (NodeSource's nodejs bundles npm and
# conflicts with Debian's npm): only the commands matter
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	missing="$missing nodejs npm"
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
else
	echo "install-deps: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
	echo "install-deps: done"
fi

# s3rver, the S3 server of the remote tests, lives in .deps/ (ignored).
# Without the npm registry the build and the demo still work: the S3
# tests then say they were skipped, and why.
if [ ! -d "$ROOT/.deps/node_modules/s3rver" ]; then
	echo "install-deps: installing s3rver@3 into .deps/"
	npmlog=$(mktemp "${TMPDIR:-/tmp}/chute-npm.XXXXXX")
	if ! npm install --no-audit --no-fund --prefix "$ROOT/.deps" s3rver@3 \
		>"$npmlog" 2>&1; then
		tail -n 15 "$npmlog" >&2
		echo "install-deps: could not install s3rver (npm, above): the" \
			"S3 tests will be skipped" >&2
	fi
	rm -f "$npmlog"
fi
