#!/usr/bin/python3
"""C1: p99 latency of pgbench transactions by the window they started in.
Usage: pgbench_p99.py BASE_FROM BASE_TO RUN_FROM RUN_TO AFTER_FROM AFTER_TO LOGFILE...
(epoch seconds); LOGFILE: pgbench --log's (pgbench_log.py reads them).
Prints "BASE_P99_MS RUN_P99_MS BASE_N RUN_N RUN_MAX_MS BASE_P50_MS AFTER_P99_MS AFTER_N":
before the expiry, while it ran, and after it ended (what the deletion left
behind: dead rows the app's reads step over, pages to write in full again)."""
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
from pgbench_log import quantile, transactions

base_from, base_to, run_from, run_to, after_from, after_to = map(float, sys.argv[1:7])
base, run, after = [], [], []
for path in sys.argv[7:]:
    for start, latency in transactions(path):
        if base_from <= start < base_to:
            base.append(latency * 1000)
        elif run_from <= start <= run_to:
            run.append(latency * 1000)
        elif after_from < start <= after_to:
            after.append(latency * 1000)

print(f"{quantile(base, 0.99):.2f} {quantile(run, 0.99):.2f} {len(base)} {len(run)} "
      f"{max(run, default=float('nan')):.2f} {quantile(base, 0.5):.2f} "
      f"{quantile(after, 0.99):.2f} {len(after)}")
