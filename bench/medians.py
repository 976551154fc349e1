#!/usr/bin/env python3
"""Prints the median (with its 95% interval) and mean of every criterion benchmark under the
given directories (e.g. target/criterion/hydrate), from the last run's estimates.json.

    python3 bench/medians.py target/criterion/hydrate [more dirs...]
"""
import json
import pathlib
import sys


def fmt(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


for root in sys.argv[1:]:
    for est in sorted(pathlib.Path(root).rglob("new/estimates.json")):
        bench = json.loads((est.parent / "benchmark.json").read_text())
        e = json.loads(est.read_text())
        med, mean = e["median"], e["mean"]
        ci = med["confidence_interval"]
        print(
            f'{bench["full_id"]}\tmedian {fmt(med["point_estimate"])} '
            f'[{fmt(ci["lower_bound"])} .. {fmt(ci["upper_bound"])}]\tmean {fmt(mean["point_estimate"])}'
            f'\t{med["point_estimate"]:.1f}'
        )
