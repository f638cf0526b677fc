"""chute.Dataset read at random through its cache, chute.collate, and
the CacheWarning: the same bytes as a sequential read, whatever the
cache; the default cache keeps a small dataset whole; a cache too small
for random reads says so, once, and nothing else does."""

import json
import os
import pickle
import random
import subprocess
import warnings

import numpy as np
import pytest

import chute
from chute import shard as shard_module


def pack_fixed(chute_bin, root, count, size=12, block="1M"):
    """A dataset of `count` samples k0000...: `x.bin`, `size` seeded bytes,
    and `x.cls`, the label as text; returns its folder."""
    rng = random.Random("test_dataset_fast:%d:%d" % (count, size))
    src = os.path.join(root, "src")
    os.makedirs(src)
    for i in range(count):
        with open(os.path.join(src, "k%04d.bin" % i), "wb") as f:
            f.write(rng.randbytes(size))
        with open(os.path.join(src, "k%04d.cls" % i), "w") as f:
            f.write("%d\n" % (i % 10))
    out = os.path.join(root, "ds")
    subprocess.run([chute_bin, "pack", "-q", "-b", block, "-o", out, src],
                   check=True, stdout=subprocess.DEVNULL)
    return out


@pytest.fixture
def count_block_reads(monkeypatch):
    """A list that receives the number of each block a Shard decodes."""
    decoded = []
    real = shard_module.Shard.block

    def block(self, b, key=None):
        decoded.append(b)
        return real(self, b, key)

    monkeypatch.setattr(shard_module.Shard, "block", block)
    return decoded


def reference(path):
    """Every sample, read in order with no cache at all (which thrashes,
    and says so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", chute.CacheWarning)
        return list(chute.Dataset(path, cache_bytes=0))


def shuffled(n, seed=3):
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


# -- collate ------------------------------------------------------------


def test_collate_stacks_the_samples_bytes_and_parses_labels(chute_bin,
                                                             tmp_path):
    ds = chute.Dataset(pack_fixed(chute_bin, str(tmp_path), 30))
    batch = [ds[i] for i in shuffled(len(ds))[:16]]
    out = chute.collate({"bin": "bytes u8 3x4", "cls": "int"})(batch)
    assert sorted(out) == ["bin", "cls"]
    assert out["bin"].dtype == np.uint8 and out["bin"].shape == (16, 3, 4)
    assert out["bin"].tobytes() == b"".join(s["bin"] for s in batch)
    assert out["cls"].dtype == np.int64
    assert out["cls"].tolist() == [int(s["cls"]) for s in batch]
    # the tuple spelling, another item type, and the bytes as they are
    out = chute.collate({"bin": ("f32", 3), "cls": "raw"})(batch)
    assert out["bin"].dtype == np.float32 and out["bin"].shape == (16, 3)
    assert out["bin"].tobytes() == b"".join(s["bin"] for s in batch)
    assert out["cls"] == [s["cls"] for s in batch]
    # without a shape: 1-D rows of the fields' size
    out = chute.collate({"bin": "bytes u8"})(batch)
    assert out["bin"].shape == (16, 12)


def test_collate_gives_torch_tensors_and_pickles(chute_bin, tmp_path):
    torch = pytest.importorskip("torch")
    ds = chute.Dataset(pack_fixed(chute_bin, str(tmp_path), 10))
    to_batch = pickle.loads(pickle.dumps(chute.collate(
        {"bin": "bytes u8 12", "cls": "int"}, as_torch=True)))
    out = to_batch(list(ds))
    assert isinstance(out["bin"], torch.Tensor)
    assert out["bin"].dtype == torch.uint8
    assert tuple(out["bin"].shape) == (10, 12)
    assert bytes(out["bin"].numpy()) == b"".join(s["bin"] for s in ds)
    assert out["cls"].dtype == torch.int64
    assert out["cls"].tolist() == [i % 10 for i in range(10)]


def test_collate_refuses_a_field_of_another_size_naming_the_sample(
        chute_bin, tmp_path):
    ds = chute.Dataset(pack_fixed(chute_bin, str(tmp_path), 4))
    with pytest.raises(ValueError, match=r"field 'bin': has 12 bytes; u8 4x4 "
                       r"needs 16 \(sample 'k0000'\)"):
        chute.collate({"bin": "bytes u8 4x4"})(list(ds))
    with pytest.raises(ValueError, match="is not an int64 .sample 'k0000'"):
        chute.collate({"bin": "int"})(list(ds))
    with pytest.raises(ValueError, match="has no field 'jpg'"):
        chute.collate({"jpg": "raw"})(list(ds))
    with pytest.raises(ValueError, match="item type"):
        chute.collate({"bin": "bytes u9 12"})
    with pytest.raises(ValueError):
        chute.collate({"bin": "bytes u8 0x3"})


# -- the cache ----------------------------------------------------------


def test_the_default_cache_keeps_a_small_dataset_whole(make_dataset,
                                                       count_block_reads):
    path = make_dataset(count=300, shards="100s", pack_args=("-b", "4K"))
    ds = chute.Dataset(path)
    assert ds.cache_bytes == chute.dataset.DEFAULT_CACHE_BYTES == 256 << 20
    assert ds.decoded_bytes < ds.cache_need < ds.cache_bytes
    order = shuffled(len(ds))
    first = [ds[i] for i in order]
    blocks = len(count_block_reads)
    assert blocks > 3  # several blocks, each decoded once
    again = [ds[i] for i in order]
    assert len(count_block_reads) == blocks, "a second pass decoded again"
    assert again == first
    # what the cache keeps is not pickled
    copy = pickle.loads(pickle.dumps(ds))
    assert copy[order[0]] == first[0] and copy.cache_bytes == ds.cache_bytes


def test_cache_bytes_bounds_the_cache(make_dataset):
    path = make_dataset(count=300, shards="100s", pack_args=("-b", "4K"))
    ds = chute.Dataset(path, cache_bytes=16384)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", chute.CacheWarning)
        for i in shuffled(len(ds)):
            ds[i]
            assert ds._block_bytes <= 16384 or len(ds._blocks) <= 1
    with pytest.raises(ValueError, match="cache_bytes"):
        chute.Dataset(path, cache_bytes=-1)


@pytest.mark.parametrize("cache_bytes", [None, 0, 4096, 65536])
def test_random_reads_give_the_bytes_of_a_sequential_read(make_dataset,
                                                          cache_bytes):
    path = make_dataset(count=300, shards="100s", pack_args=("-b", "4K"))
    ref = reference(path)
    kw = {} if cache_bytes is None else {"cache_bytes": cache_bytes}
    ds = chute.Dataset(path, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", chute.CacheWarning)
        for round_ in range(2):  # the second from what the cache kept
            for i in shuffled(len(ds), seed=round_):
                s = ds[i]
                assert s == ref[i], i
                assert type(s) is chute.Sample
                assert all(type(d) is bytes for d in s.fields.values())
            assert ds[-1] == ref[-1] and ds[1:4] == ref[1:4]


def test_get_and_index_read_what_the_cache_remembers(make_dataset):
    path = make_dataset(count=300, shards="100s", pack_args=("-b", "4K"))
    ref = reference(path)
    ds = chute.Dataset(path, cache_bytes=16384)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", chute.CacheWarning)
        for i in shuffled(len(ds)):
            assert ds[i] == ref[i]
            assert ds.get(ref[i].key) == ref[i]   # remembered by ds[i]
            assert ds[ds.index(ref[i].key)] == ref[i]


def test_a_split_read_at_random_gives_its_samples(make_dataset, chute_bin):
    path = make_dataset(count=300, shards="100s", pack_args=("-b", "4K"))
    subprocess.run([chute_bin, "split", "-q", path, "--val", "0.2"],
                   check=True, stdout=subprocess.DEVNULL)
    whole = reference(path)
    for name in ("train", "val"):
        ref = list(chute.Dataset(path, split=name))
        ds = chute.Dataset(path, split=name)
        for i in shuffled(len(ds)) * 2:
            s = ds[i]
            assert s == ref[i] and s.index == i
            assert whole[s.number] == s._replace(index=s.number)


def test_a_fixed_size_dataset_read_twice_at_random(chute_bin, tmp_path):
    path = pack_fixed(chute_bin, str(tmp_path), 2000, size=100, block="8K")
    ref = reference(path)
    ds = chute.Dataset(path)
    for i in shuffled(len(ds)) + shuffled(len(ds), seed=9):
        assert ds[i] == ref[i], i


# -- the warning --------------------------------------------------------


def test_random_reads_through_a_small_cache_warn_once(make_dataset):
    path = make_dataset(count=1000, shards="1000s", pack_args=("-b", "4K"))
    ds = chute.Dataset(path, cache_bytes=8192)
    assert ds.decoded_bytes > 8192
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in shuffled(len(ds)) + shuffled(len(ds), seed=4):
            ds[i]
    thrash = [w for w in caught if issubclass(w.category, chute.CacheWarning)]
    assert len(thrash) == 1, [str(w.message) for w in caught]
    message = str(thrash[0].message)
    assert "cache_bytes=" in message and "thrashes" in message, message
    assert "does not fit cache_bytes=8192; pass cache_bytes=1048576" in message
    assert ds.cache_need > ds.decoded_bytes
    assert issubclass(chute.CacheWarning, RuntimeWarning)


@pytest.mark.parametrize("how", ["random, default cache",
                                 "in order, small cache"])
def test_no_warning_when_the_cache_serves(make_dataset, how):
    path = make_dataset(count=1000, shards="1000s", pack_args=("-b", "4K"))
    if how.startswith("random"):
        ds, order = chute.Dataset(path), shuffled(1000) + shuffled(1000, 4)
    else:
        ds = chute.Dataset(path, cache_bytes=8192)
        order = list(range(1000)) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", chute.CacheWarning)
        for i in order:
            ds[i]


# -- Sample's repr --------------------------------------------------------


def test_a_samples_repr_is_short(chute_bin, tmp_path):
    path = pack_fixed(chute_bin, str(tmp_path), 3, size=100000)
    s = chute.Dataset(path)[1]
    text = repr(s)
    assert text == "<chute.Sample 'k0001' index 1: bin 100000 B, cls 2 B>"
    assert len(text) < 100
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate
    batch = default_collate([s, s])
    assert repr(batch) == "<chute.Sample batch of 2: bin, cls>"
    del torch


def test_a_dataloader_with_workers_and_collate_reads_every_sample_once(
        chute_bin, tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, RandomSampler
    ds = chute.Dataset(pack_fixed(chute_bin, str(tmp_path), 500))
    ds[0]  # a parent that read first: the workers inherit its cache
    loader = DataLoader(ds, batch_size=64, num_workers=2,
                        sampler=RandomSampler(ds),
                        collate_fn=chute.collate({"bin": "bytes u8 12"},
                                                 as_torch=True))
    rows = sorted(bytes(row) for b in loader for row in b["bin"].numpy())
    assert rows == sorted(s["bin"] for s in reference(ds.path))
    del torch


def test_a_manifest_with_u0000_in_a_string_is_refused_as_chute_refuses_it(
        make_dataset, chute_bin):
    path = make_dataset(count=10)
    mpath = os.path.join(path, "manifest.json")
    m = json.load(open(mpath))
    m["sources"] = ["a\0b"]
    m["id"] = chute.manifest_id(m)
    with open(mpath, "w") as f:
        json.dump(m, f)  # writes "a\u0000b"
    with pytest.raises(chute.DataError,
                       match=r"^U\+0000 in a string is not allowed \(.*"
                             r"manifest\.json\)$"):
        chute.Dataset(path)
    run = subprocess.run([chute_bin, "verify", path], capture_output=True,
                         text=True)
    assert run.returncode == 1
    assert "U+0000 in a string is not allowed (" in run.stdout
