#!/usr/bin/python3
"""Numbers on stdin, one per line -> "N P50 P99 MAX" (nearest-rank percentiles, 3 decimals)."""
import math, sys

values = sorted(float(line) for line in sys.stdin if line.strip())
if not values:
    print("0 nan nan nan")
    sys.exit(0)

def rank(p):
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]

print(len(values), f"{rank(50):.3f}", f"{rank(99):.3f}", f"{values[-1]:.3f}")
