#!/usr/bin/python3
"""Writes DIR/manifest.json for a dataset of N shards whose files do not
exist: a valid manifest (chute-manifest(5)), id included, to measure how
chute scales with the number of shards without packing them.

usage: gen-manifest.py N DIR [--samples-per-shard K]

Deterministic: the same N and K give the same bytes.
"""
import argparse
import json
import os
import sys

import xxhash

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_python  # noqa: E402

debian_python.use_repo_package()
import chute  # noqa: E402  (THE ID: chute.manifest_id)


def fake_hash(kind, i):
    return xxhash.xxh3_128_hexdigest(b"%s-%d" % (kind, i))


def manifest(n, per_shard, name="big"):
    shard_bytes = 4096
    shards = [{
        "bytes": shard_bytes,
        "first_sample": i * per_shard,
        "path": "shards/%s-%06d.chs" % (name, i),
        "samples": per_shard,
        "seal": fake_hash(b"seal", i),
        "xxh3_128": fake_hash(b"file", i),
    } for i in range(n)]
    samples = n * per_shard
    return {
        "bytes": samples * 100,
        "chute_version": "0.1.0",
        "classes": [],
        "format": "chute-manifest",
        "format_version": 2,
        "name": name,
        "options": {
            "block_size": 1048576, "dict": False, "keep_order": False,
            "label_from": None, "level": 3, "shard_bytes": 0,
            "shard_samples": per_shard,
        },
        "parent": None,
        "samples": samples,
        "schema": {"fields": {"bin": {"bytes": samples * 100,
                                      "count": samples}}},
        "shard_bytes": n * shard_bytes,
        "shards": shards,
        "sources": ["gen-manifest"],
        "splits": {},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int, help="number of shards")
    ap.add_argument("dir", help="dataset folder to write manifest.json in")
    ap.add_argument("--samples-per-shard", type=int, default=10)
    a = ap.parse_args()
    if a.n < 0 or a.samples_per_shard < 1:
        sys.exit("gen-manifest.py: N >= 0 and K >= 1")
    m = manifest(a.n, a.samples_per_shard)
    m["id"] = chute.manifest_id(m)
    os.makedirs(a.dir, exist_ok=True)
    tmp = os.path.join(a.dir, "manifest.json.tmp-%d" % os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(m, f, sort_keys=True, indent=2, ensure_ascii=False)
        f.write("\n")
    os.rename(tmp, os.path.join(a.dir, "manifest.json"))


if __name__ == "__main__":
    main()
