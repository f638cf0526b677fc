#!/usr/bin/env python3
"""fake_slurm.py - sbatch, squeue, sacct and scontrol as a one-node Slurm
cluster would answer them, for running chute-scale(7)'s Slurm recipe in
tests/cli/scale.bats.

    fake_slurm.py sbatch [OPTIONS] [SCRIPT]
    fake_slurm.py squeue -j JOB -o %r
    fake_slurm.py sacct -X -j JOB -o JobID,State
    fake_slurm.py scontrol update jobid=JOB dependency=SPEC

What it honours, as Slurm does: #SBATCH lines up to the first command
(the command line wins over them); --array (A-B[:STEP], lists, %LIMIT);
--dependency (afterok, afterany: every job and every array task named);
--cpus-per-task (more than the node's $FAKE_SLURM_CPUS, default 4, and
the job waits for ever, reason Resources); --parsable; --wrap; --job-name.
Each task runs with the submitter's environment plus SLURM_JOB_ID,
SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_{ID,COUNT,MIN,MAX,STEP},
SLURM_CPUS_PER_TASK, SLURM_JOB_NAME, SLURM_SUBMIT_DIR and a TMPDIR of
its own, in the submit folder, its output in slurm-%A_%a.out (slurm-%j.out
for a plain job).  A job whose dependency failed stays pending with the
reason DependencyNeverSatisfied until scontrol update gives it another.

Jobs run at once, inside the sbatch (or scontrol) that made them
runnable, the tasks of an array side by side (a node each): the state
lies in $FAKE_SLURM (a folder).
$FAKE_SLURM_FAIL=ID makes the first run of array task ID fail without
running, as a lost node would.
"""
import json
import os
import re
import subprocess
import sys

STATE = os.environ.get("FAKE_SLURM") or sys.exit("fake_slurm: set FAKE_SLURM")
CPUS = int(os.environ.get("FAKE_SLURM_CPUS", "4"))


def die(tool, msg):
    print(f"{tool}: error: {msg}", file=sys.stderr)
    sys.exit(1)


def load(job_id):
    try:
        with open(os.path.join(STATE, f"{job_id}.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save(job):
    path = os.path.join(STATE, f"{job['id']}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(job, f)
    os.replace(path + ".tmp", path)


def all_jobs():
    ids = sorted(int(n[:-5]) for n in os.listdir(STATE)
                 if re.fullmatch(r"\d+\.json", n))
    return [load(i) for i in ids]


def new_id():
    path = os.path.join(STATE, "next")
    n = int(open(path).read()) if os.path.exists(path) else 1000
    with open(path, "w") as f:
        f.write(str(n + 1))
    return n


def parse_array(spec):
    """Task ids of --array=SPEC (A-B[:STEP],... and %LIMIT), and the
    SLURM_ARRAY_TASK_STEP Slurm gives them: a range's step, else 1."""
    ids, step = [], 1
    for item in spec.split("%")[0].split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", item)
        if not m:
            die("sbatch", f"invalid job array specification: {spec}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        step = int(m.group(3) or 1)
        ids += range(lo, hi + 1, step)
    return sorted(set(ids)), step


def parse_dependency(spec):
    """[(kind, [job ids])] of afterok:1:2,afterany:3."""
    deps = []
    for part in spec.split(","):
        kind, *ids = part.split(":")
        if kind not in ("afterok", "afterany") or not ids:
            die("sbatch", f"unsupported dependency '{part}' (fake_slurm "
                "knows afterok and afterany)")
        for i in ids:
            if not i.isdigit() or load(i) is None:
                die("sbatch", "Batch job submission failed: Job dependency "
                    "problem")
        deps.append((kind, [int(i) for i in ids]))
    return deps


OPTS = {"-J": "job-name", "-a": "array", "-c": "cpus-per-task",
        "-d": "dependency"}
FLAGS = {"parsable"}


def parse_opts(args, tool="sbatch"):
    """Options and the rest (the script and its arguments)."""
    opts, i = {}, 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            if name in FLAGS:
                opts[name] = True
                i += 1
                continue
            if not eq:
                i += 1
                val = args[i]
        elif a[:2] in OPTS:
            name, val = OPTS[a[:2]], a[2:]
            if not val:
                i += 1
                val = args[i]
        else:
            die(tool, f"unrecognized option '{a}'")
        if name not in ("job-name", "array", "cpus-per-task", "dependency",
                        "wrap"):
            die(tool, f"fake_slurm does not model --{name}")
        opts[name] = val
        i += 1
    return opts, args[i:]


def script_opts(text):
    """The #SBATCH options of a script, up to its first command."""
    args = []
    for line in text.splitlines()[1:]:
        s = line.strip()
        if s.startswith("#SBATCH"):
            args += s.split()[1:]
        elif s and not s.startswith("#"):
            break
    return parse_opts(args)[0]


def sbatch(args):
    opts, rest = parse_opts(args)
    if "wrap" in opts:
        text = "#!/bin/sh\n" + opts["wrap"] + "\n"
    elif rest:
        text = open(rest[0]).read()
        opts = {**script_opts(text), **opts}
    else:
        die("sbatch", "no script given")
    job = {"id": new_id(), "name": opts.get("job-name", "sbatch"),
           "script": text, "cwd": os.getcwd(), "env": dict(os.environ),
           "cpus": int(opts.get("cpus-per-task", "1")), "tasks": None,
           "deps": parse_dependency(opts["dependency"])
           if "dependency" in opts else [],
           "state": "PENDING", "reason": "None"}
    if "array" in opts:
        ids, step = parse_array(opts["array"])
        job["tasks"] = {str(t): "PENDING" for t in ids}
        job["step"] = step
    save(job)
    print(job["id"] if opts.get("parsable") else
          f"Submitted batch job {job['id']}")
    sys.stdout.flush()
    schedule()


def finished(job):
    return job["state"] in ("COMPLETED", "FAILED")


def dependency_state(job):
    """'ok', 'wait' or 'never'."""
    result = "ok"
    for kind, ids in job["deps"]:
        for d in map(load, ids):
            if not finished(d):
                result = "wait"
            elif kind == "afterok" and d["state"] != "COMPLETED":
                return "never"
    return result


def start_task(job, task):
    """The task's process, or None when it fails before it runs."""
    env = dict(job["env"])
    tmp = os.path.join(STATE, "tmp", f"{job['id']}_{task}")
    os.makedirs(tmp, exist_ok=True)
    env.update(SLURM_JOB_ID=str(job["id"]), SLURM_JOB_NAME=job["name"],
               SLURM_SUBMIT_DIR=job["cwd"], SLURM_CPUS_PER_TASK=str(job["cpus"]),
               TMPDIR=tmp)
    out = f"slurm-{job['id']}.out"
    if task is not None:
        ids = sorted(map(int, job["tasks"]))
        env.update(SLURM_ARRAY_JOB_ID=str(job["id"]),
                   SLURM_ARRAY_TASK_ID=str(task),
                   SLURM_ARRAY_TASK_COUNT=str(len(ids)),
                   SLURM_ARRAY_TASK_MIN=str(ids[0]),
                   SLURM_ARRAY_TASK_MAX=str(ids[-1]),
                   SLURM_ARRAY_TASK_STEP=str(job["step"]))
        out = f"slurm-{job['id']}_{task}.out"
        fail = os.environ.get("FAKE_SLURM_FAIL")
        mark = os.path.join(STATE, "failed-once")
        if fail == str(task) and not os.path.exists(mark):
            open(mark, "w").close()
            return None
    with open(os.path.join(job["cwd"], out), "w") as log:
        return subprocess.Popen([script_of(job)], cwd=job["cwd"], env=env,
                                stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)


def script_of(job):
    return os.path.join(STATE, f"{job['id']}.sh")


def run(job):
    """Runs the job, its array tasks side by side (a node each)."""
    with open(script_of(job), "w") as f:
        f.write(job["script"])
    os.chmod(script_of(job), 0o755)
    tasks = [None] if job["tasks"] is None else sorted(job["tasks"], key=int)
    procs = {t: start_task(job, None if t is None else int(t))
             for t in tasks}
    states = {t: "COMPLETED" if p is not None and p.wait() == 0
              else "FAILED" for t, p in procs.items()}
    if job["tasks"] is not None:
        job["tasks"] = states
    job["state"] = ("COMPLETED" if all(v == "COMPLETED"
                                       for v in states.values()) else "FAILED")
    job["reason"] = "None"
    save(job)


def schedule():
    """Runs every pending job that can run, until none can."""
    progress = True
    while progress:
        progress = False
        for job in all_jobs():
            if finished(job):
                continue
            dep = dependency_state(job)
            if job["cpus"] > CPUS:
                job["reason"] = "Resources"
            elif dep == "never":
                job["reason"] = "DependencyNeverSatisfied"
            elif dep == "wait":
                job["reason"] = "Dependency"
            else:
                run(job)
                progress = True
                continue
            save(job)


def pick_job(tool, args):
    opts = dict(zip(args[::2], args[1::2]))
    job = load(opts.get("-j", ""))
    if job is None:
        die(tool, "Invalid job id specified")
    return job, opts


def squeue(args):
    job, opts = pick_job("squeue", args)
    if opts.get("-o") != "%r":
        die("squeue", "fake_slurm knows only -o %r")
    print("REASON")
    if not finished(job):
        print(job["reason"])


def sacct(args):
    job, opts = pick_job("sacct", [a for a in args if a != "-X"])
    if opts.get("-o") != "JobID,State":
        die("sacct", "fake_slurm knows only -o JobID,State")
    print(f"{'JobID':<14} {'State':<10}")
    if job["tasks"] is None:
        print(f"{job['id']:<14} {job['state']:<10}")
    for t, state in sorted((job["tasks"] or {}).items(),
                           key=lambda kv: int(kv[0])):
        print(f"{str(job['id']) + '_' + t:<14} {state:<10}")


def scontrol(args):
    if not args or args[0] != "update":
        die("scontrol", "fake_slurm knows only scontrol update")
    kv = dict(a.split("=", 1) for a in args[1:])
    kv = {k.lower(): v for k, v in kv.items()}
    job = load(kv.get("jobid", ""))
    if job is None:
        die("scontrol", "Invalid job id specified")
    if finished(job):
        die("scontrol", "Job has already finished")
    if "dependency" in kv:
        job["deps"] = parse_dependency(kv["dependency"])
    save(job)
    schedule()


if __name__ == "__main__":
    tools = {"sbatch": sbatch, "squeue": squeue, "sacct": sacct,
             "scontrol": scontrol}
    if len(sys.argv) < 2 or sys.argv[1] not in tools:
        sys.exit("usage: fake_slurm.py sbatch|squeue|sacct|scontrol ARGS...")
    os.makedirs(STATE, exist_ok=True)
    tools[sys.argv[1]](sys.argv[2:])
