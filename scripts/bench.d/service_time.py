#!/usr/bin/python3
"""C1, after `scripts/bench --keep`: how much of the app's latency was the server's
answer and how much was queueing.
Usage: service_time.py WORKDIR [AFTER_SECONDS (default 5)]
Under --rate, pgbench counts a transaction's latency from its scheduled start, so
it holds the schedule lag (the time the transaction waited for its client, busy
with the one before) and the service time (from the client's send to its last
answer). For every C1 attempt in WORKDIR/c1-spans ("VARIANT APP_START T0 T1"),
the app's transactions (WORKDIR/c1-c1_VARIANT.*) by where they started: the 9 s
before the expiry, during it, and AFTER_SECONDS after its end:
  VARIANT WINDOW N P99_LATENCY_MS P99_LAG_MS P50_SERVICE_MS P99_SERVICE_MS
A median service time that grows while the expiry runs is work the server does
for each transaction (the dead rows a page view meets, a CPU shared); a lag that
grows with it is the queue that work builds."""
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
from pgbench_log import c1_attempts, c1_logs, quantile, transactions

work = sys.argv[1]
after = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0

print("variant window n p99_latency_ms p99_lag_ms p50_service_ms p99_service_ms")
for variant, db, t0, t1 in c1_attempts(work):
    app = [(start, latency * 1000, lag * 1000)
           for path in c1_logs(work, db) for start, latency, lag in transactions(path, with_lag=True)]
    for window, low, high in (("before", t0 - 9, t0), ("during", t0, t1), ("after", t1, t1 + after)):
        inside = [(latency, lag) for start, latency, lag in app if low <= start < high]
        service = [latency - lag for latency, lag in inside]
        print(f"{variant} {window} {len(inside)} {quantile([l for l, _ in inside], 0.99):.2f}"
              f" {quantile([g for _, g in inside], 0.99):.2f} {quantile(service, 0.5):.2f} {quantile(service, 0.99):.2f}")
