#!/usr/bin/python3
"""S1: time from spawning `caretaker run` to its READY=1 datagram on $NOTIFY_SOCKET.
Usage: ready.py RUNS DIR COMMAND... ; prints one line per run, milliseconds.
Each run binds a fresh datagram socket in DIR, spawns the command with NOTIFY_SOCKET
set (watchdog variables removed), waits for READY=1, then SIGTERMs it and waits."""
import os, signal, socket, subprocess, sys, time

runs, directory, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
for run in range(runs):
    path = os.path.join(directory, f"notify-{os.getpid()}-{run}.sock")
    if os.path.exists(path):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(30)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WATCHDOG_")}
    env["NOTIFY_SOCKET"] = path
    started = time.monotonic()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = None
    try:
        while True:
            data = sock.recv(4096)
            if b"READY=1" in data.split(b"\n"):
                elapsed = (time.monotonic() - started) * 1000
                break
    except socket.timeout:
        pass
    child.send_signal(signal.SIGTERM)
    try:
        child.wait(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    sock.close()
    os.unlink(path)
    print(f"{elapsed:.1f}" if elapsed is not None else "timeout", flush=True)
