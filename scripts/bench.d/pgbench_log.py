"""Reading pgbench --log files (PostgreSQL 15), for pgbench_p99.py and timeline.py,
and the quantile they take of the latencies (percentiles.py takes it too).
A line: client_id transaction_no latency_us script_no end_epoch end_us [schedule_lag_us].
A transaction's start is its end minus its latency; under --rate the latency counts
from the scheduled start, so time spent queued behind a stall counts too."""
import math


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


def quantile(values, q):
    """The q-quantile (0 < q <= 1) of values by the nearest rank; NaN when there are none."""
    if not values:
        return float("nan")
    values = sorted(values)
    return values[max(0, math.ceil(q * len(values)) - 1)]
