#!/usr/bin/python3
"""The soak's SMTP server: aiosmtpd on 127.0.0.1:PORT, accepts every message and
appends one line per recipient to MESSAGES (tab-separated, written and flushed
before the 250 reply to DATA):

    ARRIVAL_TIME(ISO 8601, UTC)  RCPT  MESSAGE_ID  SUBJECT  HAS_PASSWORD_LINE(t/f)

which is PostgreSQL COPY text format (soak.mail). Mail to ALERTS_TO (caretaker's
[alerts] mail_to) goes to ALERTS instead, one line per message:

    ARRIVAL_TIME  RCPT  SUBJECT  FIRST_300_CHARACTERS_OF_THE_BODY

Half-broken SMTP (the smtp-broken fault): the first word of the file MODE, read
for every command, makes the server answer every MAIL FROM with 451
(`451-mail`), every message with 554 after its data (`554-data`), or close the
connection after a message's data without a reply (`close-data`); anything
else (`ok`, or no file) is normal service. Nothing is recorded for a message
that was not answered 250.

The password itself is not kept. Usage:
smtp_server.py PORT MESSAGES ALERTS_TO ALERTS MODE. Runs until SIGTERM or
SIGINT. Must run under Debian's /usr/bin/python3 (python3-aiosmtpd)."""
import datetime, email.parser, email.policy, signal, sys, threading
from aiosmtpd.controller import Controller

port, messages_path, alerts_to, alerts_path, mode_path = int(sys.argv[1]), *sys.argv[2:6]
messages = open(messages_path, "a", buffering=1)
alerts = open(alerts_path, "a", buffering=1)
lock = threading.Lock()


def mode():
    try:
        with open(mode_path) as f:
            return (f.read().split() or ["ok"])[0]
    except FileNotFoundError:
        return "ok"


def clean(text):
    return " ".join(str(text or "").split()).replace("\\", "/")


class Recorder:
    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if mode() == "451-mail":
            return "451 4.3.0 soak: try again later"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        current = mode()
        if current == "554-data":
            return "554 5.6.0 soak: message refused"
        if current == "close-data":
            server.transport.close()
            return "421 4.3.0 soak: closing"  # never reaches the client: the connection is gone
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        parsed = email.parser.BytesParser(policy=email.policy.default).parsebytes(envelope.content)
        body = parsed.get_body(preferencelist=("plain",))
        text = body.get_content() if body is not None else ""
        has_password = any(line.startswith("Temporary password: ") for line in text.splitlines())
        with lock:
            for rcpt in envelope.rcpt_tos:
                if rcpt.lower() == alerts_to.lower():
                    alerts.write("\t".join([now, clean(rcpt), clean(parsed.get("Subject")), clean(text)[:300]]) + "\n")
                    continue
                messages.write("\t".join([now, clean(rcpt), clean(parsed.get("Message-ID")),
                                          clean(parsed.get("Subject")), "t" if has_password else "f"]) + "\n")
            messages.flush()
            alerts.flush()
        return "250 OK"


controller = Controller(Recorder(), hostname="127.0.0.1", port=port)
controller.start()
print(f"smtp_server listening on 127.0.0.1:{port}", flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
stop.wait()
controller.stop()
