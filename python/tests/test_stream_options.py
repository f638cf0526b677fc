"""chute.Stream's arguments against `chute stream`'s own option table (its
--help, made from cmd/stream_rows.h): the names exist and
the defaults agree, so that the two cannot drift apart."""

import inspect
import re
import subprocess

import pytest

import chute
from chute import stream as stream_module

# Stream defaults that differ from chute's on purpose, and why
DIFFERENT = {
    # chute streams 1 epoch a run; a Stream one epoch a pass, for ever
    "epochs": (None, "1"),
    # None: from torch.distributed or $RANK / $WORLD_SIZE, as chute does
    "rank": (None, "$RANK, else 0"),
    "world_size": (None, "$WORLD_SIZE, else 1"),
}


@pytest.fixture(scope="module")
def chute_options(chute_bin):
    """{long name: its default as --help states it, or None}"""
    text = subprocess.run([chute_bin, "stream", "--help"], check=True,
                          capture_output=True, text=True).stdout
    options = {}
    for m in re.finditer(r"^\s+(?:-\w, )?--([a-z-]+)(.*(?:\n {20,}.*)?)", text, re.M):
        help_text = m.group(2)
        d = re.search(r"\bdefault:? ([^;):]+)", help_text) or \
            re.search(r"(\w+) \(default\)", help_text)
        options[m.group(1)] = d.group(1).strip() if d else None
    return options


def stream_defaults():
    params = inspect.signature(chute.Stream.__init__).parameters
    return {n: p.default for n, p in params.items() if n != "self"}


def test_every_argument_is_an_option_of_chute_stream_or_the_packages_own():
    names = set(stream_defaults())
    mapped = set(stream_module.CLI_OPTIONS) | set(stream_module.PYTHON_ONLY)
    assert names == mapped, (names - mapped, mapped - names)


def test_the_options_exist_in_chute_stream(chute_options):
    for arg, option in stream_module.CLI_OPTIONS.items():
        assert option in chute_options, "Stream(%s=) maps to --%s, which " \
            "chute stream does not have" % (arg, option)


def test_the_defaults_are_chutes(chute_options):
    defaults = stream_defaults()
    for arg, option in stream_module.CLI_OPTIONS.items():
        ours, theirs = defaults[arg], chute_options[option]
        if arg in DIFFERENT:
            assert (ours, theirs) == DIFFERENT[arg], (arg, ours, theirs)
        elif theirs is None:  # chute states none: a flag, a list, a name
            assert ours in (None, False, (), []), (arg, ours)
        else:
            assert str(ours) == theirs, "Stream(%s=%r), chute stream --%s " \
                "defaults to %s" % (arg, ours, option, theirs)


def test_argv_uses_the_mapped_names(make_dataset, chute_bin):
    s = chute.Stream(make_dataset(), chute=chute_bin, split=None, seed=4,
                     transforms={"cls": "int"}, drop_last=True, workers=2,
                     record="run.json")
    argv = s.argv()
    for arg in ("batch_size", "seed", "shuffle", "mode", "rank",
                "world_size", "workers", "transforms", "record", "epochs",
                "drop_last"):
        assert "--" + stream_module.CLI_OPTIONS[arg] in argv, arg
