#!/usr/bin/env bats
# Training from chute stream: scripts/fashion_mnist.py turns Fashion-MNIST
# into tars for chute pack, scripts/train_fashion_mnist.py trains on the
# stream, and a run killed with SIGKILL resumes from its checkpoint to the
# very weights of an uninterrupted run, batch for batch.
#
# The training tests need PyTorch for $PYTHON (Debian: python3-torch) and
# the IDX files of Debian's dataset-fashion-mnist, and skip without them;
# they train on a subset (3000 samples, 500 to evaluate, batches of 100,
# two epochs: seconds).

load helper

FM_PY="$REPO_ROOT/scripts/fashion_mnist.py"
TRAIN_PY="$REPO_ROOT/scripts/train_fashion_mnist.py"
IDX_DIR=/usr/share/datasets/fashion-mnist
# the subset and the run every training test compares with
FM="$BATS_FILE_TMPDIR/fm"
TRAIN_ARGS=(--batch-size 100 --epochs 2 --seed 7)

have_torch() {
	per_file have_torch "${PYFORK[@]}" -c 'import torch' 2>/dev/null
}

have_idx() {
	local f
	for f in train-images-idx3 train-labels-idx1 t10k-images-idx3 t10k-labels-idx1; do
		[ -r "$IDX_DIR/$f-ubyte.gz" ] || return 1
	done
}

need_torch() {
	have_torch || skip "PyTorch is not installed for $PYTHON (Debian: python3-torch)"
}

# need_training: skips without torch or the dataset; fails if setup_file
# could not make the subset or the reference run.
need_training() {
	need_torch
	have_idx || skip "Fashion-MNIST is not in $IDX_DIR (Debian: dataset-fashion-mnist)"
	[ -s "$FM/ref.out" ] ||
		fail "setup_file could not make the subset and its reference run: $(cat "$FM/setup.log")"
}

# The subset, packed, and one uninterrupted run (no checkpoints) that the
# tests compare with: made once for the file.
# The trainers, the run of the killed test aside, fork from a Python that
# has imported torch (2.4 s of CPU a process).
setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	pyfork_start torch
	have_torch && have_idx && [ -x "$CHUTE_BIN" ] || return 0
	mkdir -p "$FM"
	(
		cd "$FM" &&
			"$PYTHON" "$FM_PY" . --limit-train 3000 --limit-test 500 &&
			chute pack -q train.tar -o train &&
			chute pack -q test.tar -o test &&
			train_run --log-cursors ref.log >ref.tmp &&
			mv ref.tmp ref.out
	) >"$FM/setup.log" 2>&1 || true
}

teardown_file() {
	pyfork_stop
}

# train_run ARGS...: the trainer on the subset with TRAIN_ARGS.
train_run() {
	"${PYFORK[@]}" "$TRAIN_PY" "$FM/train" "$FM/test" "${TRAIN_ARGS[@]}" "$@"
}

# mkidx DIR N [DEFECT]: gzipped IDX files of N images (pixel j of image i
# is (31 i + j) mod 256) and labels (i mod 10) for both splits, as
# Fashion-MNIST names them; DEFECT spoils the training images or labels:
# magic, dims, short, label, count, notgz or cutgz.
mkidx() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot make IDX files in $1"
import gzip, os, struct, sys
d, n = sys.argv[1], int(sys.argv[2])
defect = sys.argv[3] if len(sys.argv) > 3 else ""
os.makedirs(d, exist_ok=True)
for prefix in ("train", "t10k"):
    spoil = prefix == "train"
    magic = 0x801 if spoil and defect == "magic" else 0x803
    cols = 27 if spoil and defect == "dims" else 28
    pixels = bytes((31 * i + j) % 256 for i in range(n) for j in range(28 * cols))
    if spoil and defect == "short":
        pixels = pixels[:-1]
    images = struct.pack(">IIII", magic, n, 28, cols) + pixels
    labels = [i % 10 for i in range(n)]
    if spoil and defect == "label":
        labels[3] = 10
    if spoil and defect == "count":
        labels.pop()
    labels = struct.pack(">II", 0x801, len(labels)) + bytes(labels)
    for kind, raw in (("images-idx3", images), ("labels-idx1", labels)):
        data = gzip.compress(raw, mtime=0)
        if spoil and kind == "images-idx3":
            if defect == "notgz":
                data = raw
            elif defect == "cutgz":
                data = data[:len(data) // 2]
        with open(os.path.join(d, "%s-%s-ubyte.gz" % (prefix, kind)), "wb") as f:
            f.write(data)
EOF
}

# mksamples DIR N IMG_SIZE [cls]: N samples sNN with an img field of
# IMG_SIZE bytes and, if asked, a cls field (i mod 10).
mksamples() {
	"$PYTHON" - "$@" <<'EOF' || fail "cannot make samples in $1"
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
for i in range(n):
    with open(os.path.join(d, "s%02d.img" % i), "wb") as f:
        f.write(bytes((i + j) % 256 for j in range(size)))
    if len(sys.argv) > 4:
        with open(os.path.join(d, "s%02d.cls" % i), "w") as f:
            f.write("%d" % (i % 10))
EOF
}

# wait_for_checkpoint PID OUT LOG: waits until the trainer PID has written a
# checkpoint and trained two more batches (its log has 9 lines or more).
wait_for_checkpoint() {
	local i
	for ((i = 0; i < 1200; i++)); do
		if grep -q '^checkpoint after ' "$2" &&
			[ "$(cat "$3" 2>/dev/null | wc -l)" -ge 9 ]; then
			return 0
		fi
		kill -0 "$1" 2>/dev/null ||
			fail "the trainer ended before it could be killed: $(cat "$2")"
		sleep 0.05
	done
	fail "no checkpoint after 60 s: $(cat "$2")"
}

# ------------------------------------------------------------ fashion_mnist.py

@test "fashion_mnist.py: deterministic tars of KEY.img (784 bytes) and KEY.cls that chute packs" {
	mkidx src 12
	run -0 "$PYTHON" "$FM_PY" out --source src --limit-test 5
	assert_line "out/train.tar: 12 samples"
	assert_line "out/test.tar: 5 samples"
	"$PYTHON" "$FM_PY" out2 --source src --limit-test 5 >/dev/null
	cmp out/train.tar out2/train.tar || fail "train.tar differs between two runs"
	cmp out/test.tar out2/test.tar || fail "test.tar differs between two runs"
	assert_file_not_exists out/train.tar.tmp
	# members sorted, ustar, owner 0, mode 0644, mtime 0, the right bytes
	run -0 "$PYTHON" - out/train.tar <<'EOF'
import sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names), names
    want = []
    for i in range(12):
        want += ["train/%06d.cls" % i, "train/%06d.img" % i]
    assert names == want, names
    for m in members:
        assert (m.mtime, m.mode, m.uid, m.gid) == (0, 0o644, 0, 0), m
        i = int(m.name[6:12])
        data = tar.extractfile(m).read()
        if m.name.endswith(".img"):
            assert data == bytes((31 * i + j) % 256 for j in range(784)), m.name
        else:
            assert data == b"%d" % (i % 10), (m.name, data)
print("ok")
EOF
	assert_output "ok"
	run -0 tar -tf out/test.tar
	assert_equal "${#lines[@]}" 10
	assert_line --index 9 "test/000004.img"
	# chute packs it; a stream in eval mode gives every sample once
	chute pack -q out/train.tar -o train >/dev/null || fail "chute pack failed"
	run -0 chute stream --mode eval -f jsonl -b 5 train
	assert_equal "${#lines[@]}" 12
	assert_line --index 3 '{"key":"train/000003","epoch":0,"batch":0,"fields":{"cls":1,"img":784},"text":{"cls":"3"}}'
}

@test "fashion_mnist.py: a missing, truncated or corrupt IDX file is an error naming it" {
	local defect
	mkidx src 4
	rm src/t10k-labels-idx1-ubyte.gz
	run -2 "$PYTHON" "$FM_PY" out --source src
	assert_output "fashion_mnist.py: cannot read 'src/t10k-labels-idx1-ubyte.gz': no such file (install Debian's dataset-fashion-mnist, or give --source DIR)"
	for defect in magic dims short label count notgz cutgz; do
		rm -rf src out
		mkidx src 4 "$defect"
		run -1 "$PYTHON" "$FM_PY" out --source src
		case $defect in
		magic) assert_output "fashion_mnist.py: 'src/train-images-idx3-ubyte.gz': magic 0x00000801, expected 0x00000803 (offset 0)" ;;
		dims) assert_output "fashion_mnist.py: 'src/train-images-idx3-ubyte.gz': dimension 2 is 27, expected 28 (offset 12)" ;;
		short) assert_output "fashion_mnist.py: 'src/train-images-idx3-ubyte.gz': 3135 bytes after the header, expected 3136 for 4 items of 784 bytes (offset 16)" ;;
		label) assert_output "fashion_mnist.py: 'src/train-labels-idx1-ubyte.gz': label 10 of item 3 is not 0-9 (offset 11)" ;;
		count) assert_output "fashion_mnist.py: 'src/train-images-idx3-ubyte.gz' has 4 images but 'src/train-labels-idx1-ubyte.gz' 3 labels" ;;
		notgz) assert_output --regexp "^fashion_mnist.py: 'src/train-images-idx3-ubyte.gz' is not a valid gzip file: " ;;
		cutgz) assert_output --regexp "^fashion_mnist.py: 'src/train-images-idx3-ubyte.gz' is a truncated or corrupt gzip file: " ;;
		esac
		# nothing half-written
		[ ! -e out ] || assert_no_entries out
	done
	run -2 "$PYTHON" "$FM_PY" out --limit-train 0
	assert_output --partial "must be at least 1"
}

# ------------------------------------------------------ train_fashion_mnist.py

@test "train: a run prints each epoch's eval accuracy and the final weights' hash, every batch once" {
	need_training
	run -0 cat "$FM/ref.out"
	assert_line --regexp '^epoch 0: eval accuracy [0-9]+\.[0-9]{2} %$'
	assert_line --regexp '^epoch 1: eval accuracy [0-9]+\.[0-9]{2} %$'
	assert_line --regexp '^final weights sha256 [0-9a-f]{64}$'
	refute_line --partial "checkpoint"
	# it learns: far above the 10 % of chance, even on 3000 samples
	local acc
	acc=$(sed -n 's/^epoch 1: eval accuracy \(.*\) %$/\1/p' "$FM/ref.out")
	awk -v a="$acc" 'BEGIN { exit !(a > 50) }' ||
		fail "eval accuracy $acc % after two epochs"
	# the batches trained on are those of chute stream with the same options
	chute stream -b 100 -e 2 --seed 7 --transform 'img: bytes u8 784' \
		--transform 'cls: int' "$FM/train" |
		"$PYTHON" "$REPO_ROOT/scripts/chute_batch.py" | cut -d' ' -f5 >want.log
	assert_equal "$(wc -l <want.log)" 60
	diff want.log "$FM/ref.log" || fail "the trainer's cursors differ from chute stream's"
}

@test "train: a run killed with SIGKILL after a checkpoint resumes to the same weights, batch for batch" {
	need_training
	local pid child status=0 cursor i
	# --sleep: time to kill it halfway (60 batches, a checkpoint every 7)
	# (python itself in the background, not train_run: $! must be its pid)
	"$PYTHON" "$TRAIN_PY" "$FM/train" "$FM/test" "${TRAIN_ARGS[@]}" \
		--checkpoint ck.pt --checkpoint-every 7 --log-cursors killed.log \
		--sleep 0.05 >killed.out 2>&1 3>&- &
	pid=$!
	wait_for_checkpoint "$pid" killed.out killed.log
	child=$(pgrep -P "$pid" || true)
	kill -9 "$pid"
	wait "$pid" || status=$?
	[ "$status" -eq 137 ] ||
		fail "the trainer ended with status $status before it was killed: $(cat killed.out)"
	refute [ -z "$(grep '^checkpoint after ' killed.out)" ]
	grep -q '^final weights' killed.out && fail "the killed run finished"
	# its chute stream, reading for a dead trainer, ends too
	if [ -n "$child" ]; then
		for ((i = 0; i < 100; i++)); do
			kill -0 "$child" 2>/dev/null || break
			sleep 0.05
		done
		kill -0 "$child" 2>/dev/null && fail "chute stream ($child) outlived its trainer"
	fi

	run -0 train_run --checkpoint ck.pt --checkpoint-every 7 --resume-from ck.pt \
		--log-cursors resumed.log
	printf '%s\n' "$output" >resumed.out
	cursor=$(sed -n 's/^resuming after //p' resumed.out)
	[[ $cursor =~ ^ch1\.[0-9a-f]{16}\.[0-9a-f]{8}\.[01]\.([0-9]+)\.[0-9]+$ ]] ||
		fail "no 'resuming after CURSOR' line: $output"
	[ "${BASH_REMATCH[1]}" -lt 29 ] || fail "the checkpoint $cursor is at the end of an epoch"

	# (a) the same weights as the uninterrupted run
	assert_line "$(grep '^final weights sha256 ' "$FM/ref.out")"
	# the epochs that ended after the resume report what the reference did
	grep '^epoch ' resumed.out >resumed.epochs
	[ -s resumed.epochs ] || fail "the resumed run printed no epoch line: $output"
	grep '^epoch ' "$FM/ref.out" | tail -n "$(wc -l <resumed.epochs)" | diff - resumed.epochs ||
		fail "the resumed run's epoch lines differ from the reference's"
	# (c) the killed run's batches up to its checkpoint, then the resumed
	# run's, are the uninterrupted run's
	grep -qxF "$cursor" killed.log || fail "the checkpoint's cursor $cursor is not in killed.log"
	{
		awk -v c="$cursor" '{ print } $0 == c { exit }' killed.log
		cat resumed.log
	} >joined.log
	diff "$FM/ref.log" joined.log ||
		fail "killed.log up to $cursor + resumed.log differs from the uninterrupted run's cursors"
	# the last checkpoint is the end of the stream: resuming from it trains nothing
	run -0 train_run --resume-from ck.pt
	assert_line --regexp "^trained 0 batches in "
	assert_line "$(grep '^final weights sha256 ' "$FM/ref.out")"
}

@test "train: samples that are not 28x28 images, a failing chute or a bad checkpoint are clear errors" {
	need_torch
	mksamples small 6 10 cls
	mksamples nocls 6 784
	mksamples good 6 784 cls
	local d
	for d in small nocls good; do
		chute pack -q "$d" -o "ds-$d" >/dev/null || fail "cannot pack $d"
	done
	run -1 "${PYFORK[@]}" "$TRAIN_PY" ds-small ds-small -b 2
	# chute's `bytes u8 784` refuses it, naming the sample
	assert_output --regexp "^train_fashion_mnist.py: train: chute stream failed \(exit 1\): chute stream: field 'img': .*has 10 bytes.* needs 784 \(sample 's0[0-5]', "
	run -2 "${PYFORK[@]}" "$TRAIN_PY" ds-nocls ds-nocls -b 2
	assert_output "train_fashion_mnist.py: train: chute stream failed (exit 2): chute stream: --transform: no field 'cls' in the dataset (fields: img)"
	run -2 "${PYFORK[@]}" "$TRAIN_PY" missing ds-good -b 2
	assert_output "train_fashion_mnist.py: train: chute stream failed (exit 2): chute stream: cannot open 'missing': No such file or directory"
	run -2 "${PYFORK[@]}" "$TRAIN_PY" ds-good ds-good --chute ./no-such-chute
	assert_output --regexp "^train_fashion_mnist.py: train: cannot run the chute binary './no-such-chute': No such file or directory; .*chute="

	run -2 "${PYFORK[@]}" "$TRAIN_PY" ds-good ds-good --resume-from none.pt
	assert_output "train_fashion_mnist.py: cannot read checkpoint 'none.pt': No such file or directory"
	echo "not a checkpoint" >junk.pt
	run -2 "${PYFORK[@]}" "$TRAIN_PY" ds-good ds-good --resume-from junk.pt
	assert_output --regexp "^train_fashion_mnist.py: 'junk.pt' is not a checkpoint of train_fashion_mnist.py: "
	run -0 "${PYFORK[@]}" "$TRAIN_PY" ds-good ds-good -b 2 --epochs 1 --checkpoint ok.pt
	assert_line --regexp '^checkpoint after ch1\.'
	assert_line --regexp '^epoch 0: eval accuracy [0-9]+\.[0-9]{2} %$'
	assert_file_not_exists ok.pt.tmp
	run -2 "${PYFORK[@]}" "$TRAIN_PY" ds-good ds-good -b 2 --seed 9 --resume-from ok.pt
	assert_output "train_fashion_mnist.py: checkpoint 'ok.pt' was made with --seed 0, not 9"
	run -2 "${PYFORK[@]}" "$TRAIN_PY" ds-good ds-good --checkpoint-every 3
	assert_output --partial "--checkpoint-every needs --checkpoint FILE"
}
