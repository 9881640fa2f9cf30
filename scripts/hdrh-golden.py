#!/usr/bin/env python3
"""Golden fixture of an independent HdrHistogram implementation (Python `hdrh`).

Pinned: hdrhistogram==0.10.8 (`python3 -m pip install hdrhistogram==0.10.8`).

Reads the inputs connstorm wrote under results/tests/data/hdrh/ (regenerate them with
`CONNSTORM_BLESS=1 cargo test --release -p connstorm-results --test integration hdrh_golden`):
  skewed.b64, record-handshake.b64   our encoded histograms (V2 + DEFLATE, base64)
  three-phase.<phase>.hlog           our interval logs of a 3-phase record
and writes results/tests/data/hdrh/python-hdrh.json: what Python decoded (counts, min, max, mean,
stddev, recorded buckets, percentiles; per interval: tag, start ms after StartTime, length), and
one histogram Python encoded itself, for the Rust tests to compare with no Python at test time.

Run from the repository root: python3 scripts/hdrh-golden.py
"""
import glob
import importlib.metadata
import json
import os
import sys

import hdrh.histogram
import hdrh.log

PINNED = "0.10.8"
PERCENTILES = [1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99]
DATA = os.path.join("results", "tests", "data", "hdrh")


def describe(h):
    rec = [[int(i.value_iterated_to), int(i.count_added_in_this_iter_step)]
           for i in h.get_recorded_iterator()]
    return {"total": h.get_total_count(), "min": h.get_min_value(), "max": h.get_max_value(),
            "mean": h.get_mean_value(), "stddev": h.get_stddev(), "recorded": rec,
            "pcts": [h.get_value_at_percentile(p) for p in PERCENTILES]}


def decode_file(name):
    with open(os.path.join(DATA, name), encoding="ascii") as f:
        return describe(hdrh.histogram.HdrHistogram.decode(f.read().strip()))


def read_log(path):
    reader = hdrh.log.HistogramLogReader(path, hdrh.histogram.HdrHistogram(1, 3600 * 10**9, 3))
    out = []
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        out.append({
            "tag": h.get_tag(),
            "start_ms": h.get_start_time_stamp() - reader.get_start_time_sec() * 1000.0,
            "length_ms": h.get_end_time_stamp() - h.get_start_time_stamp(),
            "start_time_sec": reader.get_start_time_sec(),
            "d": describe(h),
        })
    return out


def main():
    version = importlib.metadata.version("hdrhistogram")
    if version != PINNED:
        sys.exit(f"hdrhistogram {version} installed; this fixture is pinned to {PINNED}")
    ours = hdrh.histogram.HdrHistogram(1, 3600 * 10**9, 3)
    for i in range(1, 20001):
        ours.record_value(1000 + (i * 7919) % 5_000_000)
    python_encoded = describe(ours)
    python_encoded["b64"] = ours.encode().decode()
    logs = {}
    for path in sorted(glob.glob(os.path.join(DATA, "three-phase.*.hlog"))):
        logs[os.path.basename(path)] = read_log(path)
    result = {
        "generator": f"scripts/hdrh-golden.py with hdrhistogram=={version}",
        "percentiles": PERCENTILES,
        "skewed": decode_file("skewed.b64"),
        "record_handshake": decode_file("record-handshake.b64"),
        "python_encoded": python_encoded,
        "hlogs": logs,
    }
    with open(os.path.join(DATA, "python-hdrh.json"), "w", encoding="ascii") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
