#!/usr/bin/python3
"""M1: memory of a process, in KiB.
  procmem.py PID          -> "RSS USS PSS THREADS PEAK_RSS PRIVATE_DIRTY ANONYMOUS"
  procmem.py PID --top N  -> the N mappings (by file) holding the most resident memory
RSS, PSS and USS (= Private_Clean + Private_Dirty) come from /proc/PID/smaps_rollup,
the peak resident size (VmHWM) from /proc/PID/status, the breakdown from /proc/PID/smaps."""
import collections, os, sys

pid = sys.argv[1]

if len(sys.argv) > 2 and sys.argv[2] == "--top":
    rss, private = collections.Counter(), collections.Counter()
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if not parts[0].endswith(":") or "-" in parts[0]:
                # a mapping header: "start-end perms offset dev inode [path]"
                name = parts[5] if len(parts) > 5 else "[anonymous]"
                continue
            if parts[0] == "Rss:":
                rss[name] += int(parts[1])
            elif parts[0] in ("Private_Clean:", "Private_Dirty:"):
                private[name] += int(parts[1])
    for name, kib in rss.most_common(int(sys.argv[3])):
        print(f"  {kib / 1024:6.1f} MiB resident, {private[name] / 1024:5.1f} MiB private  {name}")
    sys.exit(0)

fields = {}
with open(f"/proc/{pid}/smaps_rollup") as f:
    for line in f:
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith(":") and parts[2] == "kB":
            fields[parts[0][:-1]] = int(parts[1])
peak = 0
with open(f"/proc/{pid}/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1])
threads = len(os.listdir(f"/proc/{pid}/task"))
uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
print(fields.get("Rss", 0), uss, fields.get("Pss", 0), threads, peak,
      fields.get("Private_Dirty", 0), fields.get("Anonymous", 0))
