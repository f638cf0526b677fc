#!/bin/sh
# Install every Debian package chute's build, tests, demo and benchmarks need.
# Idempotent: packages already present are not fetched again, and the package
# lists are refreshed only when something is missing.
set -eu

PACKAGES="
build-essential pkg-config
libarchive-dev libxxhash-dev xxhash libzstd-dev zstd
libcurl4-openssl-dev libjansson-dev libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev
bats bats-support bats-assert bats-file
python3 python3-zstandard python3-xxhash python3-numpy python3-pil
python3-torch python3-torchvision dataset-fashion-mnist
mate-backgrounds plasma-workspace-wallpapers
clang libclang-rt-14-dev mandoc time
"

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	SUDO="sudo"
fi

echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
