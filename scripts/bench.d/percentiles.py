#!/usr/bin/python3
"""Numbers on stdin, one per line -> "N P50 P99 MAX" (nearest-rank percentiles, 3 decimals)."""
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
from pgbench_log import quantile

values = [float(line) for line in sys.stdin if line.strip()]
if not values:
    print("0 nan nan nan")
    sys.exit(0)

print(len(values), f"{quantile(values, 0.5):.3f}", f"{quantile(values, 0.99):.3f}", f"{max(values):.3f}")
