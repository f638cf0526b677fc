#!/bin/bash
# run-fuzz.sh SECONDS - fuzz every parser of libchute.
#
# Builds each tests/fuzz/fuzz_*.c as a libFuzzer binary with AddressSanitizer
# and UndefinedBehaviorSanitizer, against the lib/ sources compiled the same
# way under build-fuzz/ (not through make, whose flags are gcc's); makes a
# seed corpus for each target with its function seed_<target>; runs each
# target for SECONDS seconds.  Exits 1 if any target crashed, leaked, ran
# out of memory or timed out; the inputs that did it are kept under
# build-fuzz/crashes/.  Inputs found along the way accumulate under
# build-fuzz/corpus/<target>/ from one run to the next.
set -eu

usage() {
	echo "usage: $0 SECONDS" >&2
	exit 2
}

[ $# -eq 1 ] || usage
case $1 in
'' | *[!0-9]*) usage ;;
esac
# libFuzzer reads -max_total_time=0 as "forever".
[ "$1" -gt 0 ] || usage
SECS=$1

cd "$(dirname "$0")/.."
OUT=build-fuzz
CLANG=${CLANG:-clang}
CHUTE=build/chute
PKGS="libarchive libzstd libxxhash jansson libturbojpeg libjpeg libpng libcurl"
# Warnings are the gcc build's business (make); here they would only stop
# the fuzzing.  -fno-sanitize-recover makes undefined behaviour a crash
# libFuzzer sees instead of a line in a log.
# shellcheck disable=SC2086 # PKGS is a list
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Iinclude -Ilib
	$(pkg-config --cflags $PKGS)
	-fsanitize=address,undefined -fno-sanitize-recover=all"
# libarchive and libcurl are loaded with dlopen (lib/common/archive_shim.c,
# lib/store/curl_shim.c), not linked.
LIBS="$(pkg-config --libs libzstd libxxhash jansson libturbojpeg libjpeg libpng) -lpthread -lm -ldl"

log() {
	echo "run-fuzz: $*" >&2
}

# ------------------------------------------------------------------ #
# Build                                                                #

# needed_sources TARGET...: the lib/ sources that the targets' links pull
# in, one a line: the members of an archive of build/'s objects (gcc's,
# from make) that the linker's map names for each target.  Nothing when
# that cannot be told: then build_lib compiles every source.  The targets
# link a fifth of lib/, and compiling it all here (serially: the job is
# one of a pool's workers) was most of the fuzz job's CPU.
needed_sources() {
	local t objs ar="$OUT/lib-gcc.a" main="$OUT/link_main.c"
	have_chute || return 0
	objs=$(find build/lib -name '*.o' | LC_ALL=C sort)
	[ -n "$objs" ] || return 0
	mkdir -p "$OUT" && rm -f "$ar"
	# shellcheck disable=SC2086 # a list of paths without blanks
	ar rcT "$ar" $objs || return 0
	printf '%s\n' 'int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long);' \
		'int main(void) { return LLVMFuzzerTestOneInput(0, 0); }' >"$main"
	for t; do
		# shellcheck disable=SC2046,SC2086 # lists of flags
		${CC:-cc} -w -O0 -std=c11 -D_GNU_SOURCE -Iinclude -Ilib \
			$(pkg-config --cflags $PKGS) -o "$OUT/link-$t" \
			"tests/fuzz/$t.c" "$main" "$ar" $LIBS -Wl,-M \
			>"$OUT/link-$t.map" || return 0
	done
	for t; do
		sed -n "s|^$OUT/\.\./build/\(lib/.*\)\.o\$|\1.c|p" "$OUT/link-$t.map"
	done | LC_ALL=C sort -u
}

# build_lib [SOURCE...]: compiles the SOURCEs (all of lib/ when none).
build_lib() {
	local src obj srcs=("$@")
	[ $# -gt 0 ] || srcs=(lib/*/*.c)
	mkdir -p "$OUT/obj"
	rm -f "$OUT"/obj/*.o
	for src in "${srcs[@]}"; do
		obj=${src#lib/}
		obj="$OUT/obj/${obj//\//_}"
		obj=${obj%.c}.o
		# shellcheck disable=SC2086
		$CLANG $CFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
	done
}

build_target() {
	# shellcheck disable=SC2086
	$CLANG $CFLAGS -fsanitize=fuzzer "tests/fuzz/$1.c" "$OUT"/obj/*.o \
		$LIBS -o "$OUT/$1"
}

# ------------------------------------------------------------------ #
# Seed corpora: seed_<target> DIR fills DIR with valid inputs, which   #
# the fuzzer then mutates; dict_<target> FILE may write a dictionary.  #

# Builds build/chute if it is missing; says whether it is there.
have_chute() {
	[ -x "$CHUTE" ] || make -s "$CHUTE" >/dev/null 2>&1 || true
	[ -x "$CHUTE" ]
}

# A folder of COUNT samples under DIR/CLASS/, each KEY.txt and KEY.json,
# made of deterministic text that compresses a little.
make_samples() {
	local dir=$1 class=$2 count=$3 i=0 key
	mkdir -p "$dir/$class"
	while [ "$i" -lt "$count" ]; do
		key=$(printf '%s/%s/%04d' "$dir" "$class" "$i")
		printf 'sample %d of class %s: %s\n' "$i" "$class" \
			"$(printf '%d' $((i * 7919 % 1000)) | cksum)" >"$key.txt"
		printf '{"n": %d, "class": "%s"}\n' "$i" "$class" >"$key.json"
		i=$((i + 1))
	done
}

# Packs a seed dataset, or warns: a seed that cannot be made costs
# coverage, not the run.
pack_seed() {
	local out=$1
	shift
	"$CHUTE" pack -q -j 1 "$@" -o "$out" >/dev/null 2>"$out.err" && return 0
	log "warning: chute pack $* failed: $(cat "$out.err")"
	return 1
}

seed_fuzz_manifest() {
	local dir=$1 src
	# A first version with no shards, as chute writes it.
	cat >"$dir/empty.json" <<'EOF'
{
  "bytes": 0,
  "chute_version": "0.1.0",
  "classes": [],
  "format": "chute-manifest",
  "format_version": 1,
  "id": "f4d513248b9dc688a5439f50338ffeeb",
  "name": "empty",
  "options": {
    "block_size": 0,
    "dict": false,
    "keep_order": false,
    "label_from": null,
    "level": 0,
    "shard_bytes": 0,
    "shard_samples": 0
  },
  "parent": null,
  "samples": 0,
  "schema": {
    "fields": {}
  },
  "shard_bytes": 0,
  "shards": [],
  "sources": [],
  "splits": {}
}
EOF
	# Two shards, classes and a parent: every key in use.
	cat >"$dir/pets.json" <<'EOF'
{"bytes":300,"chute_version":"0.1.0","classes":["cat","dog"],
"format":"chute-manifest","format_version":1,
"id":"506fc2c5a78b2e95351004413b2e15cf","name":"pets",
"options":{"block_size":1048576,"dict":true,"keep_order":false,
"label_from":"dir","level":3,"shard_bytes":268435456,"shard_samples":0},
"parent":"f4d513248b9dc688a5439f50338ffeeb","samples":3,
"schema":{"fields":{"cls":{"bytes":3,"count":3},
"jpg":{"bytes":297,"count":3}}},"shard_bytes":1000,"shards":[
{"bytes":600,"first_sample":0,"path":"shards/pets-000000.chs",
"samples":2,"xxh3_128":"112233445566778899aabbccddeeff00"},
{"bytes":400,"first_sample":2,"path":"shards/pets-000001.chs",
"samples":1,"xxh3_128":"0102030405060708090a0b0c0d0e0f10"}],
"sources":["photos"],"splits":{"train":{"from":0,"to":2}}}
EOF
	if have_chute; then
		src="$OUT/seed-src/manifest"
		make_samples "$src" cat 3
		make_samples "$src" dog 2
		pack_seed "$src.ds" --label-from dir -s 2s "$src" &&
			cp "$src.ds/manifest.json" "$dir/packed.json"
	fi
	# Shard paths a hostile remote could send (chute-manifest(5), SHARD
	# PATHS): each must be refused.  From a whole manifest when there is
	# one, so that the path is what stops it.
	local n=0 bad base="$dir/pets.json"
	[ -f "$dir/packed.json" ] && base="$dir/packed.json"
	for bad in manifest.json .chute/stat ../up.chs /abs.chs shards//x.chs \
		shards/a/b.chs shards/.chs 'shards/a\u001bb.chs' splits/x.ids \
		'shards/x.chs\u0000'; do
		# sed reads a backslash in the replacement: double it
		sed "s|\"shards/[^\"]*-000001\\.chs\"|\"${bad//\\/\\\\}\"|" \
			"$base" >"$dir/hostile-path-$n.json"
		n=$((n + 1))
	done
	return 0
}

dict_fuzz_manifest() {
	local word tok
	for word in format format_version chute-manifest id name parent \
		chute_version samples bytes shard_bytes shards path xxh3_128 \
		first_sample schema fields count classes splits sources \
		options shard_samples block_size level dict keep_order \
		label_from dir shards/ ../ /abs 0123456789abcdef0123456789abcdef \
		.chs manifest.json .chute/ splits/; do
		printf '"\\"%s\\""\n' "$word"
	done
	for tok in null true false '{}' '[]' 9223372036854775807 \
		9223372036854775808 -1 1.0 1e3 '\\u0000' '\\u001F'; do
		printf '"%s"\n' "$tok"
	done
}

# Shards from three tiny datasets: plain; with a zstd dictionary; several
# shards of several blocks with class labels.
seed_fuzz_shard() {
	local dir=$1 src ds f
	if ! have_chute; then
		log "warning: $CHUTE cannot be built; fuzz_shard starts from" \
			"an empty corpus"
		return 0
	fi
	src="$OUT/seed-src/shard"
	make_samples "$src/plain" a 6
	make_samples "$src/dict" a 40
	make_samples "$src/labels" cat 5
	make_samples "$src/labels" dog 4
	# an index of several pages, for lazy opens to decode a page at a time
	make_samples "$src/many" a 300
	pack_seed "$src/plain.ds" "$src/plain" || true
	pack_seed "$src/many.ds" "$src/many" || true
	pack_seed "$src/dict.ds" --dict "$src/dict" || true
	pack_seed "$src/labels.ds" --label-from dir -s 3s -b 200 \
		"$src/labels" || true
	for ds in plain dict labels many; do
		for f in "$src/$ds.ds"/shards/*.chs; do
			[ -f "$f" ] || continue
			# fuzz_shard reads a mode byte first (bit 0: fix up the
			# checksums after mutation; bit 1: open lazily): seed
			# every mode
			for m in 0 1 2 3; do
				{ printf "\\00$m"; cat "$f"; } \
					>"$dir/$ds-$m-$(basename "$f")"
			done
		done
	done
	return 0
}

# Images, arrays, labels and raw fields behind the two bytes fuzz_transform
# reads first (the pipeline: 0-4 images, 5-6 .npy, 7 a label, 8-10 bytes,
# +128 eval; then a seed).  Made by Python with PIL and numpy when it has them.
seed_fuzz_transform() {
	local dir=$1 py=${PYTHON:-/usr/bin/python3}
	printf '\007\001 42\n' >"$dir/label"
	printf '\207\002-7' >"$dir/label-eval"
	# raw fields for the three bytes pipelines (8-10): 16 bytes each
	printf '\010\001%016d' 0 >"$dir/bytes-u8"
	printf '\011\001%016d' 7 >"$dir/bytes-f16"
	printf '\012\001%016d' 9 >"$dir/bytes-i64"
	"$py" - "$dir" <<'EOF' 2>/dev/null ||
import io, sys
import numpy as np
from PIL import Image
d = sys.argv[1]
rng = np.random.default_rng(1)
rgb = Image.fromarray(rng.integers(0, 256, (23, 37, 3), dtype=np.uint8))
def put(name, data, modes):
    for m in modes:
        open("%s/%s-%d" % (d, name, m), "wb").write(bytes([m, 5]) + data)
def image(name, im, fmt, modes, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    put(name, b.getvalue(), modes)
image("jpg420", rgb, "JPEG", [0, 129], quality=90)
image("jpg444", rgb, "JPEG", [2, 131], quality=90, subsampling=0)
image("jpgprog", rgb, "JPEG", [3], quality=75, progressive=True)
image("jpggray", rgb.convert("L"), "JPEG", [1, 4])
image("png", rgb, "PNG", [0, 3])
image("pngpal", rgb.convert("P"), "PNG", [2])
image("pnggray", rgb.convert("L"), "PNG", [1])
for name, arr in [("npyi4", np.arange(5, dtype=np.int32)),
                  ("npyf4", np.ones((2, 3), np.float32)),
                  ("npyu1", np.arange(20, dtype=np.uint8))]:
    b = io.BytesIO()
    np.save(b, arr)
    put(name, b.getvalue(), [5, 6, 133])
EOF
		log "warning: no PIL and numpy for fuzz_transform's seeds:" \
			"labels only"
	return 0
}

# JPEGs for fuzz_jpeg, made by libjpeg itself (PIL cannot write restart
# intervals): every sampling, restart intervals of 0, 1 and 5 MCUs,
# standard and optimized tables, smooth and noisy pixels, and one
# progressive; each behind the byte that picks the region.
seed_fuzz_jpeg() {
	local dir=$1 gen="$OUT/jpeg_seeds"
	# shellcheck disable=SC2046 # pkg-config's flags, one a word
	$CLANG -O1 -x c - -o "$gen" $(pkg-config --cflags --libs libjpeg) <<'EOF' &&
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
int main(int argc, char **argv)
{
	static const int samp[][3] = {{1, 1, 1}, {3, 1, 1}, {3, 2, 1},
				      {3, 1, 2}, {3, 2, 2}};
	static const unsigned restart[] = {0, 1, 5};
	unsigned seed = 1;
	for (int k = 0; k < 31; k++) {
		struct jpeg_compress_struct c;
		struct jpeg_error_mgr e;
		int s = k % 5, w = 24 + k, h = 17 + 2 * k, n = samp[s][0];
		char path[4096];
		unsigned char *px = malloc((size_t)w * h * n);
		snprintf(path, sizeof(path), "%s/jpeg-%d", argv[1], k);
		FILE *f = fopen(path, "wb");
		if (!f || !px)
			return 1;
		fputc(k * 37 & 255, f);
		for (int i = 0; i < w * h * n; i++)
			px[i] = k & 1 ? (unsigned char)((seed = seed * 1103515245 + 12345) >> 16)
				      : (unsigned char)(i % (w * n) + i / (w * n) * 3);
		c.err = jpeg_std_error(&e);
		jpeg_create_compress(&c);
		jpeg_stdio_dest(&c, f);
		c.image_width = w;
		c.image_height = h;
		c.input_components = n;
		c.in_color_space = n == 3 ? JCS_RGB : JCS_GRAYSCALE;
		jpeg_set_defaults(&c);
		jpeg_set_quality(&c, 50 + k, TRUE);
		c.comp_info[0].h_samp_factor = samp[s][1];
		c.comp_info[0].v_samp_factor = samp[s][2];
		c.restart_interval = restart[k / 5 % 3];
		c.optimize_coding = k / 15 % 2;
		if (k == 30)
			jpeg_simple_progression(&c);
		jpeg_start_compress(&c, TRUE);
		while (c.next_scanline < c.image_height) {
			JSAMPROW row = px + (size_t)c.next_scanline * w * n;
			jpeg_write_scanlines(&c, &row, 1);
		}
		jpeg_finish_compress(&c);
		jpeg_destroy_compress(&c);
		fclose(f);
		free(px);
	}
	return 0;
}
EOF
		"$gen" "$dir" ||
		log "warning: cannot make fuzz_jpeg's seeds"
	return 0
}

# The markers a scan meets: restart markers, DRI, EOI, stuffing, fill.
dict_fuzz_jpeg() {
	printf '"\\xff\\xd0"\n"\\xff\\xd1"\n"\\xff\\xd7"\n"\\xff\\xd9"\n'
	printf '"\\xff\\x00"\n"\\xff\\xff"\n"\\xff\\xdd\\x00\\x04\\x00\\x01"\n'
}

# Config files of named remotes (fuzz_config): remotes, a default, keys
# chute does not know, quoted values with escapes, comments.
seed_fuzz_config() {
	local dir=$1
	printf '[remote "origin"]\n\turl = s3://bucket/datasets/fmnist\n' \
		>"$dir/one"
	printf '# mine\n[core]\n\tremote = origin\n[remote "origin"]\n\turl = /srv/o\n\tkeep-me = yes\n; x\n[remote "b.2"]\n\tURL = "https://h/p"\n[extra]\n\tx = "  sp\\"a\\\\ced "\n' \
		>"$dir/several"
	printf '[remote "o"]\r\n  url = file:///srv/o \t\r\n' >"$dir/crlf"
}

dict_fuzz_config() {
	local word
	for word in '[remote \"' '\"]' '[core]' 'remote = ' 'url = ' \
		'\"' '\\\"' 's3://' 'https://' 'file:///' '?x=1' '@'; do
		printf '"%s"\n' "$word"
	done
}

# Moves of a ring of 2 slots (fuzz_shm_ring: byte 0 the slots, then OP AT
# VALUE): a consumer that plays by the rules to the end, and ones that
# rewrite nslots, a slot state, their pid and the closed word.
seed_fuzz_shm_ring() {
	local dir=$1 put='\001\000\100\000' free0='\004\200\000\000'
	printf "\\001$put$free0$put"'\004\013\001\000\002\000\000\000' \
		>"$dir/by-the-rules"
	printf "\\001$put"'\000\002\377\377'"$put"'\003\000\000\000' \
		>"$dir/nslots"
	printf "\\001$put"'\004\200\007\000'"$put$put" >"$dir/slot-state"
	printf '\001\000\011\377\377'"$put$put" >"$dir/consumer-pid"
	printf "\\000$put"'\004\013\001\000'"$put"'\002\000\000\000' \
		>"$dir/closed"
}

# ------------------------------------------------------------------ #
# Run                                                                  #

run_target() {
	local t=$1 seeds="$OUT/seeds/$1" dict=""
	mkdir -p "$seeds" "$OUT/corpus/$t" "$OUT/crashes" "$OUT/logs"
	if command -v "seed_$t" >/dev/null 2>&1; then
		"seed_$t" "$seeds"
	else
		log "warning: no seed_$t in $0; $t starts from an empty corpus"
	fi
	if command -v "dict_$t" >/dev/null 2>&1; then
		"dict_$t" >"$OUT/$t.dict"
		dict="-dict=$OUT/$t.dict"
	fi
	# crashes found before are regression tests: each must run clean.
	# They replay in name order in one process, as libFuzzer ran them
	# when they crashed: a crash that needs an earlier input (a decoder
	# that kept the tables of the JPEG before) is kept as NAME-1-prior,
	# NAME-2-crash.
	local old
	old=$(find tests/fuzz/regressions -type f -name "$t-*" 2>/dev/null | LC_ALL=C sort)
	if [ -n "$old" ]; then
		log "$t: replaying $(echo "$old" | wc -l) regression inputs"
		# shellcheck disable=SC2086
		"$OUT/$t" -runs=1 $old >"$OUT/logs/$t.regressions.log" 2>&1 ||
			{ tail -n 20 "$OUT/logs/$t.regressions.log" >&2; return 1; }
	fi
	log "$t: $(find "$seeds" -type f | wc -l) seeds, ${SECS}s"
	# The corpus folder comes first: libFuzzer writes new inputs there.
	# shellcheck disable=SC2086
	"$OUT/$t" -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=30 \
		-artifact_prefix="$OUT/crashes/$t-" -print_final_stats=1 \
		$dict "$OUT/corpus/$t" "$seeds" >"$OUT/logs/$t.log" 2>&1
}

main() {
	local targets="" failed="" src t
	for src in tests/fuzz/fuzz_*.c; do
		[ -f "$src" ] && targets="$targets $(basename "$src" .c)"
	done
	if [ -z "$targets" ]; then
		log "no tests/fuzz/fuzz_*.c"
		exit 2
	fi
	local needed
	# shellcheck disable=SC2086 # names without blanks
	needed=$(needed_sources $targets)
	log "building $([ -n "$needed" ] && echo "$needed" | wc -l || echo all)" \
		"of lib/'s sources with clang, ASan, UBSan"
	# shellcheck disable=SC2086 # paths without blanks
	build_lib $needed
	rm -rf "$OUT/seeds" "$OUT/seed-src"
	for t in $targets; do
		# a reference that gcc's objects did not have: all of lib/ then
		if ! build_target "$t" 2>"$OUT/link.err"; then
			cat "$OUT/link.err" >&2
			[ -n "$needed" ] || exit 1
			log "warning: $t did not link with $(echo "$needed" | wc -l)" \
				"sources: building them all"
			needed=""
			build_lib
			build_target "$t"
		fi
		if run_target "$t"; then
			log "$t: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' \
				"$OUT/logs/$t.log" | grep -o '[0-9]*$') runs)"
		else
			failed="$failed $t"
			log "$t: FAILED; end of $OUT/logs/$t.log:"
			tail -n 40 "$OUT/logs/$t.log" >&2
		fi
	done
	if [ -n "$failed" ]; then
		log "failures in:$failed; inputs under $OUT/crashes/"
		exit 1
	fi
	log "all targets ran ${SECS}s without a failure"
}

main
