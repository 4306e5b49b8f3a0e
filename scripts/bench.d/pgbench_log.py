"""Reading pgbench --log files (PostgreSQL 15), for pgbench_p99.py and timeline.py.
A line: client_id transaction_no latency_us script_no end_epoch end_us [schedule_lag_us].
A transaction's start is its end minus its latency; under --rate the latency counts
from the scheduled start, so time spent queued behind a stall counts too."""


def transactions(path):
    """(start, latency) in seconds of every transaction logged in path."""
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6:
                continue
            latency = int(parts[2]) / 1e6
            yield int(parts[4]) + int(parts[5]) / 1e6 - latency, latency
