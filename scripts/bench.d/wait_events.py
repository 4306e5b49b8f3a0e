"""What the app's backends were doing, before, during and after the expiry (C1 --wait-events).

Usage: wait_events.py SAMPLES BEFORE_FROM DURING_FROM DURING_TO AFTER_TO

SAMPLES holds the lines of C1's wait-event sampler: "EPOCH|STATE|WAIT" for each app
backend (pgbench's) at each sample, WAIT being "type:event" or empty. A backend with
state "active" and no wait event is running on a CPU (or waiting for one: PostgreSQL
cannot tell); one that is not active waits for its client, pgbench, and is left out.
The windows are [BEFORE_FROM, DURING_FROM), [DURING_FROM, DURING_TO] and
(DURING_TO, AFTER_TO], as in pgbench_p99.py.

Prints one line per window: "WINDOW: A active backends per sample (N samples); EVENT
SHARE%, ..." with the events that made up at least 2 % of the active backends' samples,
largest first. A window without samples prints "WINDOW: no samples".
"""

import sys
from collections import Counter


def samples(path):
    """(EPOCH text, epoch, state, event) of every sample line in path, the event "CPU"
    when there is none; psql's blank lines between samples are skipped."""
    with open(path) as lines:
        for line in lines:
            fields = line.rstrip("\n").split("|")
            if len(fields) != 3:
                continue  # a blank line between two samples
            try:
                epoch = float(fields[0])
            except ValueError:
                continue
            yield fields[0], epoch, fields[1], fields[2] or "CPU"


def summarize(name, samples, counts):
    if samples == 0:
        return f"{name}: no samples"
    active = sum(counts.values())
    line = f"{name}: {active / samples:.2f} active backends per sample ({samples} samples)"
    shares = [(event, 100 * count / active) for event, count in counts.most_common()]
    events = ", ".join(f"{event} {share:.0f}%" for event, share in shares if share >= 2)
    return f"{line}; {events}" if events else line


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("\n\n")[1])
    path = sys.argv[1]
    before_from, during_from, during_to, after_to = (float(a) for a in sys.argv[2:])
    windows = {"before": (set(), Counter()), "during": (set(), Counter()), "after": (set(), Counter())}
    for stamp, epoch, state, event in samples(path):
        if before_from <= epoch < during_from:
            window = "before"
        elif during_from <= epoch <= during_to:
            window = "during"
        elif during_to < epoch <= after_to:
            window = "after"
        else:
            continue
        stamps, counts = windows[window]
        stamps.add(stamp)
        if state == "active":
            counts[event] += 1
    for name, (stamps, counts) in windows.items():
        print(summarize(name, len(stamps), counts))


if __name__ == "__main__":
    main()
