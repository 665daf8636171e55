#!/usr/bin/env python3
"""Writes the two arrival traces `kiroku simulate` ships with (minute, arrivals_per_second):

  diurnal.csv  24 hours of a recipe site's photo uploads: 1.5/s at night, a morning rise to about
               8/s, a lunchtime peak of about 16/s around 12:30, an evening plateau, with +-8%
               minute-to-minute noise.
  burst.csv    3 hours at 4/s with a 15-minute burst to 24/s at 01:00 (a bulk re-import).

Deterministic (fixed seed): rerunning rewrites the same files.
"""
import math
import random
import sys
from pathlib import Path

out = Path(sys.argv[1] if len(sys.argv) > 1 else "Benchmarks/traces")
out.mkdir(parents=True, exist_ok=True)
rng = random.Random(20261122)


def bump(minute, centre, width, height):
    return height * math.exp(-0.5 * ((minute - centre) / width) ** 2)


with open(out / "diurnal.csv", "w") as f:
    f.write("minute,arrivals_per_second\n")
    for minute in range(24 * 60):
        rate = 1.5 + bump(minute, 10 * 60, 150, 6.5) + bump(minute, 12.5 * 60, 45, 8.5) + bump(minute, 19 * 60, 120, 5)
        f.write(f"{minute},{rate * rng.uniform(0.92, 1.08):.3f}\n")

with open(out / "burst.csv", "w") as f:
    f.write("minute,arrivals_per_second\n")
    for minute in range(3 * 60):
        rate = 24.0 if 60 <= minute < 75 else 4.0
        f.write(f"{minute},{rate * rng.uniform(0.95, 1.05):.3f}\n")
