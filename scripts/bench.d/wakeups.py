#!/usr/bin/python3
"""W1: voluntary context switches of every thread of PID over SECONDS.
Sums /proc/PID/task/*/status voluntary_ctxt_switches per thread id at the start
and the end; a thread born meanwhile counts from zero. A thread that ended
meanwhile takes its count with it, so the threads at both ends are printed too.
Prints "SWITCHES THREADS_START THREADS_END THREADS_GONE"."""
import os, sys, time

def snapshot(pid):
    counts = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        counts[tid] = int(line.split()[1])
        except FileNotFoundError:
            pass
    return counts

pid, seconds = sys.argv[1], float(sys.argv[2])
before = snapshot(pid)
time.sleep(seconds)
after = snapshot(pid)
switches = sum(count - before.get(tid, 0) for tid, count in after.items())
gone = len(set(before) - set(after))
print(switches, len(before), len(after), gone)
