#!/usr/bin/python3
"""The soak's SMTP server: aiosmtpd on 127.0.0.1:PORT, accepts every message and
appends one line per recipient to MESSAGES (tab-separated, written and flushed
before the 250 reply to DATA):

    ARRIVAL_TIME(ISO 8601, UTC)  RCPT  MESSAGE_ID  SUBJECT  HAS_PASSWORD_LINE(t/f)

which is PostgreSQL COPY text format (soak.mail).

The password itself is not kept. Usage: smtp_server.py PORT MESSAGES.
Runs until SIGTERM or SIGINT. Must run under Debian's /usr/bin/python3
(python3-aiosmtpd)."""
import datetime, email.parser, email.policy, signal, sys, threading
from aiosmtpd.controller import Controller

port, messages_path = int(sys.argv[1]), sys.argv[2]
messages = open(messages_path, "a", buffering=1)
lock = threading.Lock()


def clean(text):
    return " ".join(str(text or "").split()).replace("\\", "/")


class Recorder:
    async def handle_DATA(self, server, session, envelope):
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        parsed = email.parser.BytesParser(policy=email.policy.default).parsebytes(envelope.content)
        body = parsed.get_body(preferencelist=("plain",))
        text = body.get_content() if body is not None else ""
        has_password = any(line.startswith("Temporary password: ") for line in text.splitlines())
        with lock:
            for rcpt in envelope.rcpt_tos:
                messages.write("\t".join([now, clean(rcpt), clean(parsed.get("Message-ID")),
                                          clean(parsed.get("Subject")), "t" if has_password else "f"]) + "\n")
            messages.flush()
        return "250 OK"


controller = Controller(Recorder(), hostname="127.0.0.1", port=port)
controller.start()
print(f"smtp_server listening on 127.0.0.1:{port}", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
stop.wait()
controller.stop()
