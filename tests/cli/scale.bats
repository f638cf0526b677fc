#!/usr/bin/env bats
# The Slurm and Kubernetes recipes of chute-scale(7), taken from the
# page's source as printed.  The Slurm scripts and lines run against a
# fake one-node cluster (tests/cli/fake_slurm.py: sbatch that honours
# --array, --dependency and --cpus-per-task, squeue, sacct, scontrol
# update), one task lost on the way and run again as the page says; the
# result is the dataset a single pack makes.  The page's bucket and shared
# folder are mapped to local folders; nothing else is changed.

load helper
load parts

setup() {
	chute_setup
	local tool
	mkdir bin
	for tool in sbatch squeue sacct scontrol; do
		printf '#!/bin/sh\nexec "%s" "%s" %s "$@"\n' "$PYTHON" \
			"$REPO_ROOT/tests/cli/fake_slurm.py" "$tool" >"bin/$tool"
		chmod +x "bin/$tool"
	done
	export PATH=$PWD/bin:$PATH FAKE_SLURM=$PWD/slurm
	# a small node: the recipe must ask for no more cores than this
	export FAKE_SLURM_CPUS=4
}

# example NAME: chute-scale(7)'s example NAME, with its shared folder and
# bucket here.
example() {
	man_example chute-scale.7 "$1" |
		sed -e "s|/shared/images|$PWD/src|g" \
			-e "s|s3://my-datasets/train|file://$PWD/remote|g"
}

@test "scale: the Slurm recipe runs as printed; a lost task is run again as the page says" {
	gen_text src
	example pack.sh >pack.sh
	example merge.sh >merge.sh
	local submit retry
	submit=$(example submit)
	retry=$(example retry)
	assert_equal "$(head -c 11 pack.sh)" '#!/bin/bash'
	[[ $retry == *"scontrol update"* ]] || fail "no retry lines: $retry"
	# task 7 fails on its first run, as on a node that died
	run -0 env FAKE_SLURM_FAIL=7 bash -e -o pipefail -c "$submit
		echo \"job=\$job merge=\$merge\" >ids"
	local job merge
	eval "$(cat ids)"
	# every other part is on the remote; no latest, no v1 yet
	run -0 ls remote/tags
	assert_equal "${#lines[@]}" 15
	refute_line part-7
	refute_line latest
	refute_line v1
	run -0 bash -e -o pipefail -c "job=$job merge=$merge
		$retry"
	assert_line DependencyNeverSatisfied
	assert_line --regexp "^${job}_7 +FAILED"
	run -0 cat "slurm-$merge.out"
	assert_line --regexp "^merged 16 parts: 120 samples"
	assert_equal "$(cat remote/tags/latest)" "$(cat remote/tags/v1)"
	run -0 chute pull "file://$PWD/remote@v1" back
	chute pack -q -o whole src >/dev/null
	run -0 chute diff whole back
	assert_line --partial "equal: same samples"
	# each task packed in its own TMPDIR, and cleaned up
	run -0 find slurm/tmp -mindepth 2
	assert_output ""
}

@test "scale: the Kubernetes recipe: --overrides is strict JSON, the pods run pack, push and merge" {
	mkdir fake
	printf '#!/bin/sh\necho "$@"\n' >fake/chute
	printf '#!/bin/sh\nfor a; do case $a in --overrides=*) printf %%s "${a#--overrides=}";; esac; done\n' >fake/kubectl
	chmod +x fake/chute fake/kubectl
	example kubectl >run.sh
	example pack.yaml >pack.yaml
	PATH=$PWD/fake:$PATH bash -e run.sh >overrides.json
	# json.loads is strict: a raw newline inside a string is refused.
	# The Job's YAML is read too where PyYAML is installed.
	run -0 "$PYTHON" -c '
import json
o = json.loads(open("overrides.json").read())
c = o["spec"]["containers"][0]
assert c["name"] == "chute-merge", c
print(c["command"][2])
try:
    import yaml
except ImportError:
    raise SystemExit
j = yaml.safe_load(open("pack.yaml"))
print(j["spec"]["template"]["spec"]["containers"][0]["command"][2])'
	local merge=${lines[0]} pod=${lines[1]:-}
	run -0 env PATH="$PWD/fake:$PATH" sh -c "$merge"
	assert_output "merge $(printf "file://$PWD/remote@part-%d " $(seq 0 15))-o file://$PWD/remote -t v1"
	[ -n "$pod" ] || return 0
	run -0 env PATH="$PWD/fake:$PATH" JOB_COMPLETION_INDEX=3 sh -c "$pod"
	assert_line --index 0 "pack -q --parts 16 -o /tmp/part /data/images"
	assert_line --index 1 "push /tmp/part file://$PWD/remote -t part-3"
}
