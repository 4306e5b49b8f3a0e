#!/usr/bin/python3
"""C1, after `scripts/bench --keep`: where in each expiry the app paid.
Usage: timeline.py WORKDIR [STEP_SECONDS (default 5)] [AFTER_SECONDS (default 60)]
For every C1 attempt in WORKDIR/c1-spans ("VARIANT APP_START T0 T1", epoch seconds),
the app's transactions (its pgbench logs, WORKDIR/c1-c1_VARIANT.*) by the STEP-second
bucket they started in, from 10 s before the expiry to AFTER_SECONDS after its end:
  +SECONDS  N  P99_MS  MAX_MS  EVENTS
SECONDS counts from the expiry's start. EVENTS are what the server log
(WORKDIR/pg/server.log, log_checkpoints on) says happened in that bucket: a
checkpoint's start and end (with its sync time), an autovacuum or autoanalyze of
posts ending, and, from its elapsed time, when that vacuum started (its log line
comes only at the end, and only with log_autovacuum_min_duration = 0). With
--wait-events, EVENTS also name the wait events the app's active backends were
sampled in during the bucket (WORKDIR/c1-c1_VARIANT.waits, "EPOCH|STATE|WAIT"; none:
CPU), the three most frequent with their counts: "waits IO:WALSync 5, CPU 3".
Each attempt starts with "VARIANT: expiry T1-T0 s, baseline p99 MS" (the 9 s before)."""
import datetime, math, re, sys
from collections import Counter, defaultdict
sys.dont_write_bytecode = True  # no __pycache__ in the work tree
from pgbench_log import c1_attempts, c1_logs, quantile, transactions
from wait_events import samples

work = sys.argv[1]
step = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
after = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0

stamp = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) UTC \[\d+\] LOG:  (.*)$")


def epoch(text):
    moment = datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f")
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def server_events(path):
    """(epoch, words) for checkpoints and posts' autovacuums, in time order. The
    bench's cluster logs its times in UTC (scripts/bench sets log_timezone), so a
    line in another zone is not one of its own and is not matched."""
    events, pending = [], None
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        return events
    for line in lines:
        found = stamp.match(line)
        if found:
            pending = None
            at, message = epoch(found.group(1)), found.group(2)
            if message.startswith("checkpoint starting"):
                events.append((at, "checkpoint start"))
            elif message.startswith("checkpoint complete"):
                sync = re.search(r"sync=([\d.]+) s", message)
                events.append((at, f"checkpoint end (sync {sync.group(1) if sync else '?'} s)"))
            elif re.match(r'automatic (aggressive )?(vacuum|analyze) of table "[^"]*\.posts"', message):
                what = "autoanalyze" if "analyze of" in message else "autovacuum"
                events.append((at, f"{what} of posts ends"))
                pending = (at, what)
        elif pending and "elapsed:" in line:
            elapsed = re.search(r"elapsed: ([\d.]+) s", line)
            if elapsed and pending[1] == "autovacuum":
                events.append((pending[0] - float(elapsed.group(1)), "autovacuum of posts starts"))
            pending = None
    return sorted(events)


def app_transactions(database):
    """(start, latency_ms) of every transaction in the attempt's pgbench logs."""
    return [(start, latency * 1000) for path in c1_logs(work, database) for start, latency in transactions(path)]


def active_waits(path):
    """(epoch, event) of every sample of an active app backend; none without the file."""
    try:
        return [(epoch, event) for _, epoch, state, event in samples(path) if state == "active"]
    except FileNotFoundError:
        return []


def by_bucket(items, first):
    """(at, what) pairs by the STEP-second bucket from first that at falls in."""
    buckets = defaultdict(list)
    for at, what in items:
        if at >= first:
            buckets[int((at - first) // step)].append(what)
    return buckets


events = server_events(f"{work}/pg/server.log")
for variant, db, t0, t1 in c1_attempts(work):
    app = app_transactions(db)
    base = [ms for start, ms in app if t0 - 9 <= start < t0]
    print(f"{variant}: expiry {t1 - t0:.1f} s, baseline p99 {quantile(base, 0.99):.2f} ms")
    first = t0 - 10
    latencies, marked = by_bucket(app, first), by_bucket(events, first)
    waits = by_bucket(active_waits(f"{work}/c1-{db}.waits"), first)
    for index in range(math.ceil((t1 + after - first) / step)):
        bucket = first + index * step
        inside, marks = latencies[index], list(marked[index])
        if waits[index]:
            top = Counter(waits[index]).most_common(3)
            marks.append("waits " + ", ".join(f"{event} {n}" for event, n in top))
        if inside or marks:
            print(f"  {bucket - t0:+7.1f} {len(inside):5d} {quantile(inside, 0.99):8.2f} {max(inside, default=float('nan')):8.2f}"
                  + (f"  {'; '.join(marks)}" if marks else ""))
