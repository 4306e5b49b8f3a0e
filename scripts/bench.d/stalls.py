"""The app's stalls during an expiry, and what the server's other processes did in
them (C1 --wait-events).

Usage: stalls.py SAMPLES CLIENTS FROM TO

SAMPLES holds the lines of C1's server sampler: "EPOCH|WHO|STATE|WAIT" for each
server process at each sample (every 10 ms), WHO being "app" for the app's backends
(pgbench's), "caretaker" for caretaker's, "delete" for the single DELETE's, otherwise
the backend type ("walwriter", "checkpointer", "background writer", ...), and WAIT
"type:event", or empty for a process on a CPU. A *stall* is a moment in which
all CLIENTS app backends were active at once: at 400 tx/s of a millisecond or two
each, the app's four clients are rarely all busy, unless something holds every one
of them up (a slow WAL flush, which every commit waits for, is the usual one).

Considers the samples in [FROM, TO]. Prints one line: "no stall" when no sample had
every client active; otherwise "stalled in N samples of M, the longest T ms from
+S s", S from FROM, T the longest streak of consecutive stalled samples times 10 ms,
then, for the samples of streaks of at least 5 (50 ms), the app's waits (a share of
its backends' samples) and each other process's (a share of the samples) that took at
least 10 %, largest first: "app LWLock:WALWrite 70%, IO:WALSync 25%; walwriter
IO:WALSync 60%; ...". A process idle in its main loop ("Activity:..." waits) or
waiting for its client (Client:ClientRead) is left out.
"""

import sys
from collections import Counter, defaultdict

SAMPLE_MS = 10
LONG_STREAK = 5


def samples(path):
    """{epoch text: [(who, state, wait)]} of every sample line in path, in order;
    psql's blank lines between samples are skipped."""
    moments = defaultdict(list)
    with open(path) as lines:
        for line in lines:
            fields = line.rstrip("\n").split("|")
            if len(fields) != 4:
                continue
            try:
                float(fields[0])
            except ValueError:
                continue
            moments[fields[0]].append((fields[1], fields[2], fields[3]))
    return moments


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.split("\n\n")[1])
    path, clients = sys.argv[1], int(sys.argv[2])
    start, end = float(sys.argv[3]), float(sys.argv[4])
    moments = sorted(
        (float(stamp), processes) for stamp, processes in samples(path).items() if start <= float(stamp) <= end)
    stalled = [
        sum(1 for who, state, _ in processes if who == "app" and state == "active") >= clients
        for _, processes in moments
    ]
    if not any(stalled):
        print("no stall")
        return
    # Streaks of consecutive stalled samples: (first index, length).
    streaks, first = [], None
    for index, stall in enumerate(stalled + [False]):
        if stall and first is None:
            first = index
        elif not stall and first is not None:
            streaks.append((first, index - first))
            first = None
    longest = max(streaks, key=lambda streak: streak[1])
    line = (f"stalled in {sum(stalled)} samples of {len(moments)}, the longest {longest[1] * SAMPLE_MS} ms "
            f"from +{moments[longest[0]][0] - start:.2f} s")
    long_samples = [index for first, length in streaks if length >= LONG_STREAK for index in range(first, first + length)]
    if long_samples:
        waits = defaultdict(Counter)
        for index in long_samples:
            for who, state, wait in moments[index][1]:
                if not (wait.startswith("Activity:") or wait == "Client:ClientRead"):
                    waits[who][wait or "CPU"] += 1
        parts = []
        for who in ["app"] + sorted(who for who in waits if who != "app"):
            total = len(long_samples) * (clients if who == "app" else 1)
            shown = [(wait, 100 * count / total) for wait, count in waits[who].most_common()]
            shown = [f"{wait} {share:.0f}%" for wait, share in shown if share >= 10]
            if shown:
                parts.append(f"{who} " + ", ".join(shown))
        line += f"; in the {len(long_samples)} samples of streaks of {LONG_STREAK * SAMPLE_MS} ms or more: " + "; ".join(parts)
    print(line)


if __name__ == "__main__":
    main()
