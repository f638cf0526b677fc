#!/bin/bash
# bench-remote.sh CHUTE_BINARY - `chute push`, `chute pull` and streaming
# from an HTTP remote (nginx with WebDAV on 127.0.0.1) against what one
# would otherwise use.  Every ratio comes from figures measured in this run,
# the commands compared taking turns within each round (medians of ROUNDS,
# default 3), so that load from elsewhere on the machine falls on all of
# them alike.  A benchmark reports, it does not judge: exit 0 unless a
# command fails; PASS/FAIL lines say how the targets of issue 6 fared.
#
#  1. push: `chute push` of the whole dataset into an empty remote, once,
#     in MB/s; for information, `curl -T` of the same shards (8 at once)
#     to another prefix.
#  2. pull: `chute pull --jobs 8` into a fresh folder against `curl
#     --parallel --parallel-max 8` downloading the same objects (the cas/
#     files of the remote) into a fresh folder.  Target: >= 0.9x.
#     chute does more than curl here: it hashes every shard (XXH3) before
#     renaming it into place, and fsyncs files and folders, so that a
#     crash never leaves a bad file under its final name.  Those checks
#     stay on.  Two informative rows show what that costs: curl followed
#     by a `sync` of what it wrote, and the disk's own ceiling for durable
#     writes (`dd conv=fsync` of as many bytes): a durable pull cannot be
#     faster than that, while curl alone only fills the page cache.  Every
#     timed run starts with no dirty pages (a `sync` between runs), so
#     curl's writeback does not fall on the next run.
#     One more row: the same chute pull on a pseudo-terminal (script(1)),
#     where it draws its progress line, against the pull without one: what
#     the display costs (issue 21: nothing measurable).
#  3. stream: `chute bench URL --remote-cache DIR --remote-cache-size 4G
#     --shuffle window`, one epoch with an empty cache folder (cold: every
#     shard fetched from nginx), then again on the same folder (warm),
#     against `chute bench` of the pulled copy (local), in samples/s and
#     MB/s of wall time.
#
# Data (built once, cached in ${BENCH_DIR:-/tmp/chute-bench}/remote):
# SIZE_MB (default 1024) samples of ~1 MiB of seeded incompressible bytes
# (scripts/gen-data.py images), packed into shards of 64 MB (smaller when
# SIZE_MB < 512, so that there are at least 8 of them for 8 transfers);
# one dataset per SIZE_MB.
# The remote folder, the pulled copies and the caches are made afresh each
# run and removed at exit, with nginx.  Everything is read from the page
# cache (the machine has the memory), so reads measure loopback HTTP and
# chute, not the disk; what is made durable (fsync) does meet the disk,
# whose ceiling row 2 shows.
set -euo pipefail

usage() { echo "usage: [ROUNDS=N] [SIZE_MB=N] bench-remote.sh CHUTE_BINARY" >&2; exit 2; }
if [ $# -ne 1 ] || [ ! -x "$1" ]; then usage; fi
CHUTE=$(realpath "$1")
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(realpath "$(dirname "$0")")
BENCH_DIR=${BENCH_DIR:-/tmp/chute-bench}
WORK=$BENCH_DIR/remote
RUNS_DIR=$WORK/runs # what the timed runs printed, for a look afterwards
RUNS=${ROUNDS:-3}
SIZE_MB=${SIZE_MB:-1024}
JOBS=8
BATCH=32 # samples of ~1 MiB: 32 MiB batches
SAMPLE=1048576

die() { echo "bench-remote: $*" >&2; exit 2; }
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$RUNS'"
[[ $SIZE_MB =~ ^[1-9][0-9]*$ ]] || die "SIZE_MB must be a positive integer, not '$SIZE_MB'"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || die "nginx is missing: apt-get install nginx"
command -v curl >/dev/null || die "curl is missing: apt-get install curl"

# calc, median, sum_sizes, cached, int, ratio
# shellcheck source=scripts/bench-lib.sh
. "$HERE/bench-lib.sh"
VERSION=$(pack_version "$CHUTE")

# --- data, built once -----------------------------------------------------

SHARD_MB=64
if ((SIZE_MB < 512)); then SHARD_MB=$(((SIZE_MB + 7) / 8)); fi
DS=$WORK/ds-$SIZE_MB
mkdir -p "$WORK"
make_data() {
	echo "bench-remote: generating and packing $SIZE_MB samples of ~1 MiB (once)"
	rm -rf "$WORK/src" "$DS"
	"$PYTHON" "$HERE/gen-data.py" images "$WORK/src" --count "$SIZE_MB" \
		--size "$SAMPLE" --classes 8 --seed 1 -q
	"$CHUTE" pack -q "$WORK/src" -o "$DS" -s "${SHARD_MB}M" >/dev/null
	rm -rf "$WORK/src" # the shards are what is measured
}
cached "$DS.ok" "$VERSION, $SIZE_MB x $SAMPLE bytes +-20 %, seed 1, ${SHARD_MB}M shards" make_data
SHARDS=("$DS"/shards/*.chs)
BYTES=$(sum_sizes "${SHARDS[@]}")
MB=$(calc "$BYTES / 1e6")

# --- nginx ----------------------------------------------------------------

NGX=$WORK/nginx # its configuration, pid, log and temporary files
ROOT=$WORK/www  # the folder it serves
PULLED=$WORK/pulled CURLED=$WORK/curled CACHE=$WORK/cache
DD=$WORK/dd.tmp
scratch() { rm -rf "$ROOT" "$PULLED" "$CURLED" "$CACHE" "$DD"; }
stop_nginx() {
	local pid
	pid=$(cat "$NGX/nginx.pid" 2>/dev/null) || return 0
	# only the nginx of our configuration: a stale pid may be another's now
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$NGX/nginx.conf" ||
		return 0
	kill "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}
# shellcheck disable=SC2317 # called by the trap
cleanup() { stop_nginx; scratch; }
trap cleanup EXIT
stop_nginx # one left behind by a run that was killed
scratch
rm -rf "$NGX" "$RUNS_DIR"
mkdir -p "$NGX/tmp" "$ROOT" "$RUNS_DIR"

PORT=$("$PYTHON" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
# Run as root, the workers would switch to nobody and could not write into
# the root-owned folder (NOTES.md): keep them root.  Every path nginx would
# otherwise take from its build (/var/lib/nginx, /var/log/nginx) is ours, so
# that it starts as any user.
{
	if ((EUID == 0)); then echo "user root;"; fi
	cat <<EOF
worker_processes auto;
pid $NGX/nginx.pid;
error_log $NGX/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	default_type application/octet-stream;
	client_body_temp_path $NGX/tmp/body;
	proxy_temp_path $NGX/tmp/proxy;
	fastcgi_temp_path $NGX/tmp/fastcgi;
	uwsgi_temp_path $NGX/tmp/uwsgi;
	scgi_temp_path $NGX/tmp/scgi;
	server {
		listen 127.0.0.1:$PORT;
		root $ROOT;
		client_max_body_size 0;
		dav_methods PUT DELETE MKCOL;
		create_full_put_path on;
	}
}
EOF
} >"$NGX/nginx.conf"
"$NGINX" -q -c "$NGX/nginx.conf" -p "$NGX" -e "$NGX/error.log" ||
	die "nginx did not start: $(tail -3 "$NGX/error.log" 2>/dev/null)"
BASE=http://127.0.0.1:$PORT
for ((i = 0; ; i++)); do
	code=$(curl -s -o /dev/null -w '%{http_code}' "$BASE/" || true)
	[ "$code" = 000 ] || break
	((i < 100)) || die "nginx does not answer on $BASE"
	sleep 0.05
done
URL=$BASE/r

# --- helpers --------------------------------------------------------------

# timed NAME CMD...: runs CMD after a sync (no dirty pages left for its
# writeback to meet), its stdout appended to $RUNS_DIR/NAME.out; appends its
# wall time in seconds to TIMES[NAME].
declare -A TIMES
timed() {
	local name=$1 t0 t1
	shift
	sync
	t0=$(date +%s.%N)
	"$@" >>"$RUNS_DIR/$name.out"
	t1=$(date +%s.%N)
	TIMES[$name]+=" $(calc "$t1 - $t0")"
}
# shellcheck disable=SC2086 # one time a word
med() { median ${TIMES[$1]}; }
mbs() { calc "sprintf(\"%.0f\", $MB / $1)"; }

FMT='%-36s %12s %24s %7s %8s  %s\n'
# row WHAT CHUTE REFERENCE RATIO OP TARGET: one line of the table; OP and
# TARGET empty for a line that only informs.
row() {
	local verdict=info
	if [ -n "$5" ]; then
		verdict=$(calc "($4 $5 $6) ? \"PASS\" : \"FAIL\"")
	fi
	# shellcheck disable=SC2059 # FMT is the table's one format
	printf "$FMT" "$1" "$2" "$3" "$4" "${5:+$5 $6}" "$verdict"
}

load_before=$(cut -d' ' -f1 /proc/loadavg)
cat "${SHARDS[@]}" >/dev/null

# --- 1. push --------------------------------------------------------------

echo "bench-remote: $VERSION; ${#SHARDS[@]} shards, $(int "$MB") MB; nginx on $BASE"
echo "bench-remote: push (once)"
timed push "$CHUTE" push "$DS" "$URL"
[ -n "$(ls "$ROOT"/r/tags 2>/dev/null)" ] || die "chute push left no tag in $ROOT/r"
# curl -T of the same shards, JOBS at once, into a prefix of its own
curl_put() {
	local f args=()
	for f in "${SHARDS[@]}"; do args+=(-T "$f" "$BASE/put/${f##*/}"); done
	curl --parallel --parallel-max "$JOBS" --no-progress-meter -S -f "${args[@]}"
}
timed put curl_put
rm -rf "$ROOT/put"

# --- 2. pull --------------------------------------------------------------

# The objects curl fetches: every shard of the version, by content hash.
mapfile -t OBJECTS < <(cd "$ROOT" && find r/cas -type f | sort)
((${#OBJECTS[@]} == ${#SHARDS[@]})) ||
	die "the remote holds ${#OBJECTS[@]} objects in r/cas, expected ${#SHARDS[@]}"
pull_chute() { "$CHUTE" pull "$URL" "$PULLED" --jobs "$JOBS"; }
# The same pull on a pseudo-terminal (script(1)), where chute draws its
# progress line: what the display costs.
pull_chute_tty() {
	script -qefc "$(printf '%q ' "$CHUTE" pull "$URL" "$PULLED" --jobs "$JOBS")" \
		/dev/null >"$RUNS_DIR/pull_tty.out"
}
pull_curl() {
	local o args=()
	for o in "${OBJECTS[@]}"; do args+=(-o "$CURLED/$o" "$BASE/$o"); done
	curl --parallel --parallel-max "$JOBS" --no-progress-meter -S -f \
		--create-dirs "${args[@]}"
}
pull_curl_sync() { pull_curl && sync "${OBJECTS[@]/#/$CURLED/}"; }
disk_write() {
	dd if=/dev/zero of="$DD" bs=1M count=$((BYTES >> 20)) conv=fsync status=none
}

echo "bench-remote: pull: chute pull --jobs $JOBS, curl --parallel-max $JOBS; $RUNS rounds"
for ((r = 0; r < RUNS; r++)); do
	rm -rf "$PULLED" "$CURLED"
	timed pull_chute pull_chute
	rm -rf "$PULLED"
	timed pull_chute_tty pull_chute_tty
	rm -rf "$CURLED"
	timed pull_curl pull_curl
	rm -rf "$CURLED"
	timed pull_curl_sync pull_curl_sync
	rm -f "$DD"
	timed disk_write disk_write
done
[ "$(sum_sizes "$PULLED"/shards/*.chs)" = "$BYTES" ] || die "chute pull fetched other bytes"
grep -q "downloading" "$RUNS_DIR/pull_tty.out" ||
	die "chute pull on a terminal drew no progress line (see $RUNS_DIR/pull_tty.out)"
[ "$(sum_sizes "$CURLED"/r/cas/*/*)" = "$BYTES" ] || die "curl fetched other bytes"
rm -rf "$CURLED" "$DD"

# --- 3. stream ------------------------------------------------------------

STREAM=(-b "$BATCH" --shuffle window -e 1)
# bench_* print chute bench's report; its first line counts the samples
bench_local() { "$CHUTE" bench "${STREAM[@]}" "$PULLED"; }
bench_remote() {
	"$CHUTE" bench "${STREAM[@]}" "--$CACHE_OPT" "$CACHE" "--$CACHE_OPT-size" 4G "$URL"
}
# samples NAME: the samples every run of NAME read, or die
samples() {
	local n
	n=$(awk '/^chute bench:/ { print $5 }' "$RUNS_DIR/$1.out" | sort -u)
	[ "$n" = "$SIZE_MB" ] || die "$1 read '$n' samples, expected $SIZE_MB"
}

# The option of the cache folder: --remote-cache (--cache, which the issue
# names, is the decoded blocks' memory).
STREAMED=0 CACHE_OPT=
for o in remote-cache cache; do
	if "$CHUTE" bench --help 2>&1 | grep -q -- "--$o-size"; then
		CACHE_OPT=$o
		break
	fi
done
if [ -n "$CACHE_OPT" ]; then
	STREAMED=1
	echo "bench-remote: stream: chute bench, remote cold, remote warm, local; $RUNS rounds"
	for ((r = 0; r < RUNS; r++)); do
		rm -rf "$CACHE"
		timed cold bench_remote
		timed warm bench_remote
		timed local bench_local
	done
	for f in cold warm local; do samples "$f"; done
else
	echo "bench-remote: stream: skipped, '$CHUTE bench' has no --remote-cache-size" \
		"(no streaming from remotes)"
fi
load_after=$(cut -d' ' -f1 /proc/loadavg)

# --- report ---------------------------------------------------------------

echo
echo "$VERSION, $(nproc) cores, nginx $("$NGINX" -v 2>&1 | sed 's|.*/||') on loopback;" \
	"median of $RUNS; load average $load_before before, $load_after after"
echo
# shellcheck disable=SC2059
printf "$FMT" measure chute reference ratio target result
echo "1. push of ${#SHARDS[@]} shards, $(int "$MB") MB, into an empty remote, MB/s (one run)"
row "chute push" "$(mbs "$(med push)")" "curl -T x$JOBS $(mbs "$(med put)")" \
	"$(ratio "$(med put)" "$(med push)")" "" ""
echo "2. pull into a fresh folder, MB/s"
row "chute pull --jobs $JOBS" "$(mbs "$(med pull_chute)")" \
	"curl --parallel $(mbs "$(med pull_curl)")" \
	"$(ratio "$(med pull_curl)" "$(med pull_chute)")" ">=" 0.90
row "  (chute pull on a terminal, progress drawn)" "$(mbs "$(med pull_chute_tty)")" \
	"no terminal $(mbs "$(med pull_chute)")" \
	"$(ratio "$(med pull_chute)" "$(med pull_chute_tty)")" "" ""
row "  (curl, then sync of its files)" "" "$(mbs "$(med pull_curl_sync)")" \
	"$(ratio "$(med pull_curl_sync)" "$(med pull_chute)")" "" ""
row "  (the disk: dd conv=fsync)" "" "$(mbs "$(med disk_write)")" \
	"$(ratio "$(med disk_write)" "$(med pull_chute)")" "" ""
if ((STREAMED)); then
	rate() { calc "sprintf(\"%.0f\", $SIZE_MB / $(med "$1"))"; }
	echo "3. stream one epoch, --shuffle window, batch $BATCH: samples/s (MB/s), wall time"
	row "remote, cold cache" "$(rate cold) ($(mbs "$(med cold)"))" \
		"local $(rate local) ($(mbs "$(med local)"))" \
		"$(ratio "$(med local)" "$(med cold)")" "" ""
	row "remote, warm cache" "$(rate warm) ($(mbs "$(med warm)"))" \
		"local $(rate local) ($(mbs "$(med local)"))" \
		"$(ratio "$(med local)" "$(med warm)")" "" ""
fi
echo
echo "chute pull verifies each shard's XXH3 before renaming it into place and"
echo "fsyncs files and folders; curl does neither.  The informative rows of 2.:"
echo "curl followed by a sync of the files it wrote, and the disk's ceiling for"
echo "durable writes of as many bytes.  Every timed run begins after a sync."
echo "What the runs printed: $RUNS_DIR"
