#!/usr/bin/python3
"""P1's real SMTP server: aiosmtpd on 127.0.0.1, accepts everything, and writes
one line per recipient, "ARRIVAL_EPOCH<TAB>RCPT", when the message is accepted
(just before the 250 reply to DATA). Usage: smtp_sink.py PORT_FILE ARRIVALS_FILE.
Runs until SIGTERM."""
import signal, socket, sys, threading, time
from aiosmtpd.controller import Controller

port_file, arrivals_path = sys.argv[1], sys.argv[2]
arrivals = open(arrivals_path, "a", buffering=1)

class Sink:
    async def handle_DATA(self, server, session, envelope):
        now = time.time()
        for rcpt in envelope.rcpt_tos:
            arrivals.write(f"{now:.6f}\t{rcpt}\n")
        return "250 OK"

probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
controller = Controller(Sink(), hostname="127.0.0.1", port=port)
controller.start()
with open(port_file, "w") as f:
    f.write(f"{port}\n")
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
stop.wait()
controller.stop()
