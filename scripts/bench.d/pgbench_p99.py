#!/usr/bin/python3
"""C1: p99 latency of pgbench transactions by the window they started in.
Usage: pgbench_p99.py BASE_FROM BASE_TO RUN_FROM RUN_TO AFTER_FROM AFTER_TO LOGFILE...
(epoch seconds); LOGFILE: pgbench --log's (pgbench_log.py reads them).
Prints "BASE_P99_MS RUN_P99_MS BASE_N RUN_N RUN_MAX_MS BASE_P50_MS AFTER_P99_MS AFTER_N
BASE_HALVES_RATIO RUN_P99_0 RATIO_0 RUN_P99_1 RATIO_1":
before the expiry, while it ran, and after it ended (what the deletion left
behind: dead rows the app's reads step over, pages to write in full again);
then the baseline against itself, the p99 of its second half ÷ that of its first
(no expiry in either: how far one window's p99 strays from another's by chance);
then the p99 during the expiry of the app's first script (pgbench's script_no 0)
and its ratio to that script's p99 before, and the same of its second ("nan"
where a window holds none of a script's transactions)."""
import sys
from collections import defaultdict
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
from pgbench_log import quantile, transactions

base_from, base_to, run_from, run_to, after_from, after_to = map(float, sys.argv[1:7])
middle = (base_from + base_to) / 2
base, run, after, halves = [], [], [], ([], [])
by_script = defaultdict(list)  # (window, script) -> latencies
for path in sys.argv[7:]:
    for start, latency, script in transactions(path, with_script=True):
        ms = latency * 1000
        if base_from <= start < base_to:
            base.append(ms)
            halves[start >= middle].append(ms)
            by_script["base", script].append(ms)
        elif run_from <= start <= run_to:
            run.append(ms)
            by_script["run", script].append(ms)
        elif after_from < start <= after_to:
            after.append(ms)


def ratio(later, earlier):
    """The p99 of later ÷ that of earlier; NaN when either holds nothing."""
    return quantile(later, 0.99) / quantile(earlier, 0.99) if later and earlier else float("nan")


print(f"{quantile(base, 0.99):.2f} {quantile(run, 0.99):.2f} {len(base)} {len(run)} "
      f"{max(run, default=float('nan')):.2f} {quantile(base, 0.5):.2f} "
      f"{quantile(after, 0.99):.2f} {len(after)} {ratio(halves[1], halves[0]):.2f} "
      + " ".join(f"{quantile(by_script['run', script], 0.99):.2f} "
                 f"{ratio(by_script['run', script], by_script['base', script]):.2f}" for script in (0, 1)))
