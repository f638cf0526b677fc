#!/usr/bin/env bats
# Data-parallel training on CPUs: scripts/train_ddp.py under
# `torchrun --nproc_per_node 2` (gloo), each rank reading its part of the
# epoch through chute.Stream.  The ranks see disjoint samples that together
# are the epoch, the same number of batches each, and a run killed after a
# checkpoint and resumed ends with the weights of a run never stopped.
#
# Needs PyTorch with torchrun for $PYTHON and Debian's
# dataset-fashion-mnist; skips without them.

load helper

IDX_DIR=/usr/share/datasets/fashion-mnist
DDP_PY="$REPO_ROOT/scripts/train_ddp.py"
FM="$BATS_FILE_TMPDIR/fm"
ARGS=(--batch-size 50 --epochs 2 --seed 4)

have_torchrun() {
	per_file have_torchrun "$PYTHON" -c 'import torch.distributed.run, torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null &&
		[ -r "$IDX_DIR/train-images-idx3-ubyte.gz" ]
}

# ddp ARGS...: the trainer on 2 ranks; a port of its own for each run.
# --redirects 2 --tee 2: Debian 12's torchrun (torch 1.13 on Python 3.11)
# fails on its defaults (0 reads as None: "'NoneType' object has no
# attribute 'get'"); 2, stderr to a log and the terminal, reads right.
ddp() {
	local port=$((29500 + RANDOM % 10000))
	PYTHONPATH="$REPO_ROOT/python" timeout --foreground 300 "$PYTHON" -m torch.distributed.run \
		--nproc_per_node 2 --redirects 2 --tee 2 \
		--master_addr 127.0.0.1 --master_port "$port" \
		"$DDP_PY" "$FM/train" --chute "$CHUTE_BIN" "${ARGS[@]}" "$@"
}

setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	have_torchrun && [ -x "$CHUTE_BIN" ] || return 0
	mkdir -p "$FM"
	(
		cd "$FM" &&
			"$PYTHON" "$REPO_ROOT/scripts/fashion_mnist.py" . --limit-train 1000 --limit-test 10 &&
			"$CHUTE_BIN" pack -q train.tar -o train
	) >"$FM/setup.log" 2>&1 || true
}

setup() {
	chute_setup
	have_torchrun || skip "no torchrun with gloo for $PYTHON, or no Fashion-MNIST (python3-torch, dataset-fashion-mnist)"
	[ -d "$FM/train" ] || fail "setup_file could not pack the subset: $(cat "$FM/setup.log")"
}

@test "ddp: two ranks see disjoint samples, together the epoch, the same number of batches" {
	run -0 ddp --log-keys keys
	assert_line --regexp '^final weights sha256 [0-9a-f]{64}$'
	assert_equal "$(cat keys/rank-0.batches)" "$(cat keys/rank-1.batches)"
	# 1000 samples, 2 epochs, batches of 50 per rank: 10 batches a rank an epoch
	assert_equal "$(cat keys/rank-0.batches)" 20
	chute ls "$FM/train" | cut -f1 | sort >all.keys
	local e
	for e in 0 1; do
		awk -v e=$e '$1 == e { print $2 }' keys/rank-0.keys | sort >r0
		awk -v e=$e '$1 == e { print $2 }' keys/rank-1.keys | sort >r1
		assert_equal "$(wc -l <r0)" 500
		assert_equal "$(wc -l <r1)" 500
		comm -12 r0 r1 >both
		[ ! -s both ] || fail "epoch $e: both ranks saw $(wc -l <both) samples: $(head -3 both)"
		sort r0 r1 | diff - all.keys || fail "epoch $e: the ranks together are not the epoch"
	done
}

@test "ddp: a run killed after a checkpoint resumes to the weights of an uninterrupted one" {
	run -0 ddp
	local ref
	ref=$(grep '^final weights sha256 ' <<<"$output")
	[ -n "$ref" ] || fail "no final weights: $output"
	# killed: the whole torchrun group, with SIGKILL, after its first checkpoint
	setsid bash -c "$(declare -f ddp); $(declare -p ARGS FM DDP_PY CHUTE_BIN REPO_ROOT PYTHON); \
		ddp --checkpoint ck.pt --checkpoint-every 7 --sleep 0.1" >killed.out 2>&1 &
	local pid=$! i
	for ((i = 0; i < 600; i++)); do
		grep -qs '^checkpoint after' killed.out && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^checkpoint after' killed.out || fail "no checkpoint: $(cat killed.out)"
	kill -9 -- -"$pid" 2>/dev/null || true
	wait "$pid" || true
	grep -q '^final weights' killed.out && fail "the killed run finished: $(cat killed.out)"
	run ddp --checkpoint ck.pt --checkpoint-every 7 --resume-from ck.pt
	[ "$status" -eq 0 ] || fail "the resumed run failed ($status): $output"
	# checkpoints every 7 of 20 batches: killed after the one of 7 or 14
	assert_line --regexp '^resuming after (7|14) batches$'
	assert_line "$ref"
}
