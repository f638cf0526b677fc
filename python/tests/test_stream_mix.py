"""chute.Stream over a list of datasets with mix=: the command line it
makes, the same batches as `chute stream A B --mix`, and a resume from its
state_dict() that goes on where it stopped."""

import json
import subprocess

import pytest

import chute


def cli_keys(chute_bin, *args):
    out = subprocess.run([chute_bin, "stream", "-f", "jsonl"] + list(args),
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line)["key"] for line in out.splitlines()]


def stream_keys(batches):
    return [k for b in batches for k in b.keys]


@pytest.fixture
def two(make_dataset):
    return make_dataset(count=12, name="a"), make_dataset(count=5, name="b",
                                                          shards="2s")


def test_a_mix_streams_what_chute_stream_mix_does(chute_bin, two):
    a, b = two
    s = chute.Stream([a, b], mix={a: 0.7, b: 0.3}, batch_size=4, seed=3,
                     chute=chute_bin, source_field="index")
    argv = s.argv()
    assert argv[argv.index("--mix") + 1] == "%s=0.7,%s=0.3" % (a, b)
    assert argv[-2:] == [a, b]
    got = list(s)
    assert stream_keys(got) == cli_keys(
        chute_bin, a, b, "--mix", "%s=0.7,%s=0.3" % (a, b), "-b", "4",
        "--seed", "3")
    assert {bytes(v) for bt in got for v in bt.fields["source"]} <= {b"0", b"1"}
    assert len(s) == len(got)


def test_a_mix_resumes_from_its_state(chute_bin, two):
    a, b = two
    opts = dict(mix={a: 1, b: 1}, batch_size=3, seed=5, chute=chute_bin,
                epochs=2)
    full = stream_keys(chute.Stream([a, b], **opts))
    s = chute.Stream([a, b], **opts)
    first = []
    for bt in s:
        first.append(bt)
        if len(first) == 2:
            break
    state = s.state_dict()
    rest = stream_keys(chute.Stream([a, b], resume=state, **opts))
    assert stream_keys(first) + rest == full
    with pytest.raises(chute.StateError):
        chute.Stream([a, b], resume=state, **dict(opts, mix={a: 1, b: 2}))


def test_a_list_without_mix_is_refused(two):
    with pytest.raises(ValueError, match="mix="):
        chute.Stream(list(two))
