#!/usr/bin/env python3
"""Runs the whole Swift Testing suite in a few lanes, one test at a time in each.

A lane is one process of the test binary with `--no-parallel` and a filter naming
its suites; the lanes run side by side. Why not the test library's own parallel
run: it starts every test at once on Swift's cooperative pool (one thread per core),
and the tests that block a thread (libpq, child processes) hold those threads, so a
test reports as its time ("passed after") the minutes it waited in that queue, and
any check across an `await` that depends on wall time is exposed. In a lane a test's
clock starts when it starts, so its time is its work (slowed only by the other
lanes sharing the machine).

Suites go to lanes longest first, each to the lane with the least work so far, by
the seconds each suite took alone (SECONDS_FILE; a suite it does not list counts a
second a test). Suites matching --alone run after the lanes, alone.

Prints each lane's output when the lane ends, then per lane its suites, tests and
time, the slowest tests, and the suites that took more than twice their listed
seconds; writes this run's seconds per suite to LOG_DIR/suite-seconds.tsv (copy it
over SECONDS_FILE to rebalance). Exit status: 0 when every lane passed, else 1.

    test_lanes.py --binary PATH --lanes N --seconds SECONDS_FILE --log-dir DIR
                  [--skip REGEX]... [--alone REGEX]...
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time


def list_tests(binary):
    listed = subprocess.run(
        [binary, "--testing-library", "swift-testing", "--list-tests"],
        check=True, capture_output=True, text=True)
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()]


def suite_of(test_id):
    """The top-level suite of a test ID (`Module.Suite/test()`), or the ID itself."""
    return test_id.split("/", 1)[0]


def read_seconds(path):
    seconds = {}
    if path and os.path.exists(path):
        with open(path) as table:
            for line in table:
                if line.startswith("#") or not line.strip():
                    continue
                suite, value = line.split("\t")[:2]
                seconds[suite] = float(value)
    return seconds


def filter_for(suites):
    return "^(?:" + "|".join(re.escape(suite) for suite in sorted(suites)) + ")(?:/|$)"


class Lane:
    def __init__(self, number, suites, args):
        self.number = number
        self.suites = suites
        self.log = os.path.join(args.log_dir, f"lane-{number}.log")
        self.events = os.path.join(args.log_dir, f"lane-{number}.jsonl")
        self.command = [
            args.binary, "--testing-library", "swift-testing", "--no-parallel",
            "--event-stream-output-path", self.events, "--event-stream-version", "0",
            "--filter", filter_for(suites),
        ]
        self.process = None
        self.started = None
        self.seconds = None

    def start(self):
        self.started = time.monotonic()
        environment = dict(os.environ, NO_COLOR="1")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment)

    def finished(self):
        if self.process.poll() is None:
            return False
        if self.seconds is None:
            self.seconds = time.monotonic() - self.started
        return True


def timings(lanes):
    """Per test and per suite: seconds from its start to its end, from the event streams."""
    names, tests, suites = {}, {}, {}
    for lane in lanes:
        if not os.path.exists(lane.events):
            continue
        started = {}
        with open(lane.events) as stream:
            for line in stream:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                payload = record.get("payload", {})
                if record.get("kind") == "test":
                    names[payload["id"]] = payload.get("displayName") or payload.get("name")
                    continue
                kind, test = payload.get("kind"), payload.get("testID")
                instant = payload.get("instant", {}).get("absolute")
                if test is None or instant is None:
                    continue
                if kind == "testStarted":
                    started[test] = instant
                elif kind == "testEnded" and test in started:
                    seconds = instant - started.pop(test)
                    if "/" in test:
                        tests[test] = (seconds, lane.number)
                    else:
                        suites[test] = seconds
    return names, tests, suites


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--lanes", type=int, required=True)
    parser.add_argument("--seconds", help="seconds per suite, measured alone (tab-separated)")
    parser.add_argument("--log-dir", required=True)
    parser.add_argument("--skip", action="append", default=[])
    parser.add_argument("--alone", action="append", default=[])
    args = parser.parse_args()
    os.makedirs(args.log_dir, exist_ok=True)

    skips = [re.compile(pattern) for pattern in args.skip]
    counts = {}
    for test in list_tests(args.binary):
        if not any(skip.search(test) for skip in skips):
            counts[suite_of(test)] = counts.get(suite_of(test), 0) + 1
    alone = [re.compile(pattern) for pattern in args.alone]
    listed = read_seconds(args.seconds)
    estimate = {suite: listed.get(suite, float(count)) for suite, count in counts.items()}

    loads = [[0.0, []] for _ in range(max(1, args.lanes))]
    later = []
    for suite in sorted(counts, key=lambda s: -estimate[s]):
        if any(pattern.search(suite) for pattern in alone):
            later.append(suite)
            continue
        lightest = min(loads, key=lambda load: load[0])
        lightest[0] += estimate[suite]
        lightest[1].append(suite)
    lanes = [Lane(number, suites, args) for number, (_, suites) in enumerate(loads, 1) if suites]

    began = time.monotonic()
    for lane in lanes:
        lane.start()
    print(f"test lanes: {len(lanes)} lanes, {sum(counts.values())} tests in {len(counts)} suites"
          + (f"; then alone: {', '.join(later)}" if later else ""), flush=True)
    pending = list(lanes)
    while pending:
        for lane in [lane for lane in pending if lane.finished()]:
            pending.remove(lane)
            with open(lane.log) as log:
                sys.stdout.write(log.read())
            print(f"test lanes: lane {lane.number} ended after {lane.seconds:.0f} s, "
                  f"exit {lane.process.returncode}", flush=True)
        time.sleep(0.5)
    if later:
        last = Lane(len(lanes) + 1, later, args)
        last.start()
        last.process.wait()
        last.finished()
        with open(last.log) as log:
            sys.stdout.write(log.read())
        print(f"test lanes: {', '.join(later)} ended after {last.seconds:.0f} s, exit {last.process.returncode}")
        lanes.append(last)
    total = time.monotonic() - began

    names, tests, suites = timings(lanes)
    print(f"test lanes: {total:.0f} s in all")
    for lane in lanes:
        work = sum(estimate[suite] for suite in lane.suites)
        print(f"  lane {lane.number}: {len(lane.suites)} suites, {sum(counts[s] for s in lane.suites)} tests, "
              f"{lane.seconds:.0f} s (estimated alone: {work:.0f} s), exit {lane.process.returncode}")
    print("slowest tests (seconds from start to end, lane):")
    for test, (seconds, number) in sorted(tests.items(), key=lambda item: -item[1][0])[:10]:
        print(f"  {seconds:7.1f}  {suite_of(test)}: {names.get(test, test)}  (lane {number})")
    slower = [(suite, seconds, listed[suite]) for suite, seconds in suites.items()
              if suite in listed and seconds > 2 * listed[suite] and seconds > 5]
    if slower:
        print(f"suites slower than twice their seconds alone ({len(slower)}; the machine's other load counts too):")
    else:
        checked = sum(1 for suite, seconds in suites.items() if suite in listed and seconds > 5)
        print(f"no suite slower than twice its seconds alone ({checked} suites of over 5 s checked)")
    for suite, seconds, alone_seconds in sorted(slower, key=lambda item: -item[1] / item[2])[:10]:
        print(f"  {suite}: {seconds:.1f} s (alone {alone_seconds:.1f} s)")
    with open(os.path.join(args.log_dir, "suite-seconds.tsv"), "w") as table:
        table.write("# suite\tseconds (one test at a time)\n")
        for suite, seconds in sorted(suites.items()):
            table.write(f"{suite}\t{seconds:.1f}\n")
    return 0 if all(lane.process.returncode == 0 for lane in lanes) else 1


if __name__ == "__main__":
    sys.exit(main())
