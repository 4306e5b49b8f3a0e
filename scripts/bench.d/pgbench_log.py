"""Reading pgbench --log files (PostgreSQL 15), for pgbench_p99.py, timeline.py and
service_time.py, the C1 attempts a kept work directory records, and the quantile
they take of the latencies (percentiles.py takes it too).
A line: client_id transaction_no latency_us script_no end_epoch end_us [schedule_lag_us].
A transaction's start is its end minus its latency; under --rate the latency counts
from the scheduled start, so time spent queued behind a stall counts too."""
import glob
import math
import re


def transactions(path, with_script=False, with_lag=False):
    """(start, latency) in seconds of every transaction logged in path; with
    with_script its script's number (pgbench's -f order, from 0) as the next item,
    and with with_lag its schedule lag in seconds (0 without --rate) as the last."""
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6:
                continue
            latency = int(parts[2]) / 1e6
            start = int(parts[4]) + int(parts[5]) / 1e6 - latency
            item = (start, latency) + ((int(parts[3]),) if with_script else ())
            yield item + ((int(parts[6]) / 1e6 if len(parts) > 6 else 0.0,) if with_lag else ())


def c1_attempts(work):
    """(variant, database, t0, t1) of every C1 attempt in work's c1-spans ("VARIANT
    APP_START T0 T1", epoch seconds): the expiry ran from t0 to t1, and the attempt's
    files are named after its database, c1-DATABASE.*."""
    with open(f"{work}/c1-spans") as f:
        for line in f:
            variant, _, t0, t1 = line.split()
            yield variant, "c1_" + re.sub(r"[^a-z0-9]", "_", variant), float(t0), float(t1)


def c1_logs(work, database):
    """The pgbench logs of an attempt's database (c1-DATABASE.PID and .PID.N, not its
    .out, .samples or .waits)."""
    return [path for path in glob.glob(f"{work}/c1-{database}.*") if re.search(r"\.\d+(\.\d+)?$", path)]


def quantile(values, q):
    """The q-quantile (0 < q <= 1) of values by the nearest rank; NaN when there are none."""
    if not values:
        return float("nan")
    values = sorted(values)
    return values[max(0, math.ceil(q * len(values)) - 1)]
