"""The mixed sequence of chute-stream(1) MIXING, computed from the rule.

mix_ref.py SEED SHUFFLE EPOCHS RULE NAME=WEIGHT...: one line a sample,
"EPOCH KEY", of the first EPOCHS epochs.  SHUFFLE: global, none, or
window:K (--shuffle window --window K).  RULE is shortest, a number or a
source's name.  Each source's own order (pass p) is that of a single
stream of it (chute stream SRC --start-epoch p), as the page says.
"""
import json
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction

seed, shuffle, epochs, rule = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    sys.argv[4]
names, weights = [], []
for item in sys.argv[5:]:
    name, w = item.rsplit("=", 1)
    names.append(name)
    weights.append(int(Decimal(w) * 1000000))


def single(name, epoch):
    """Keys of one epoch of a single stream of source `name`."""
    ds, _, split = name.partition(":")
    mode, _, window = shuffle.partition(":")
    cmd = ["chute", "stream", ds, "--seed", seed, "--shuffle", mode,
           "--window", window or "4",
           "--start-epoch", str(epoch), "--epochs", str(epoch + 1), "-b",
           "1", "-f", "jsonl", "-w", "0"] + (["--split", split] if split
                                             else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return [json.loads(line)["key"] for line in out.stdout.splitlines()]


n = [len(single(s, 0)) for s in names]
W, k = sum(weights), len(names)


def one_pass(s):
    return [n[s] if i == s else (2 * n[s] * weights[i] + weights[s]) //
            (2 * weights[s]) for i in range(k)]


if rule == "shortest":
    s = 0
    for i in range(1, k):
        if n[i] * weights[s] < n[s] * weights[i]:
            s = i
    c = one_pass(s)
elif rule in names:
    c = one_pass(names.index(rule))
else:
    N = int(rule)
    c = [N * w // W for w in weights]
    rem = sorted(range(k), key=lambda i: (-(N * weights[i] % W), i))
    for i in rem[:N - sum(c)]:
        c[i] += 1

# every draw (time, source, j) with time (2j+1)/(2c_i), ties by source
draws = sorted((Fraction(2 * j + 1, 2 * c[i]), i, j)
               for i in range(k) for j in range(c[i]))
orders = {}
for e in range(epochs):
    for _, i, j in draws:
        g = e * c[i] + j
        p, q = divmod(g, n[i])
        if (i, p) not in orders:
            orders[i, p] = single(names[i], p)
        print(e, orders[i, p][q])
