#!/usr/bin/python3
"""The one real SMTP server of caretaker's tests, soak and benchmark: aiosmtpd on
127.0.0.1. It must run under Debian's /usr/bin/python3 (python3-aiosmtpd).

    smtp_server.py [--port N] [--messages DIR] [--log FILE [--alerts-to ADDRESS --alerts FILE]]
                   [--reject STAGE=CODE]... [--faults FILE] [--auth USER PASSWORD]
                   [--tls starttls|implicit --cert FILE --key FILE] [--until-stdin-closes]

It listens on --port (default 0: a free one), prints "ready PORT" on standard output
once it accepts connections, and runs until SIGTERM or SIGINT, or with
--until-stdin-closes until its standard input reaches end of file (the Swift test
support holds a pipe there, so the server goes when the test process does).

What it keeps of each message it accepted (both may be given):
  --messages DIR  one JSON file per message, written atomically: mail_from, rcpt_tos,
                  login (AUTH user or null), data (as sent after DATA), tls (true/false).
  --log FILE      one line per recipient, PostgreSQL COPY text format, written and
                  flushed before the 250 reply to DATA (the password itself is not kept):
                      ARRIVAL(ISO 8601, UTC)  RCPT  MESSAGE_ID  SUBJECT  HAS_PASSWORD_LINE(t/f)
                  With --alerts-to, mail to that address goes to --alerts instead:
                      ARRIVAL  RCPT  SUBJECT  FIRST_300_CHARACTERS_OF_THE_BODY
Nothing is kept of a message that was not answered 250.

Refusals: --reject mail=CODE, rcpt=CODE or data=CODE answers every MAIL FROM, RCPT TO
or message (after its data) with CODE. --faults FILE is read for every command; its
first word makes the server answer every MAIL FROM with 451 (`451-mail`), every
message with 554 (`554-data`), or close the connection after a message's data without
a reply (`close-data`); anything else (`ok`, or no file) is normal service.

--auth requires AUTH (PLAIN or LOGIN, TLS not needed) with that user and password.
--tls offers STARTTLS (required before MAIL) or implicit TLS with that certificate."""
import argparse, asyncio, datetime, email.parser, email.policy, json, os, signal, socket, ssl, sys
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

parser = argparse.ArgumentParser(description="caretaker's test SMTP server (aiosmtpd)")
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--messages")
parser.add_argument("--log")
parser.add_argument("--alerts-to")
parser.add_argument("--alerts")
parser.add_argument("--reject", action="append", default=[], metavar="STAGE=CODE")
parser.add_argument("--faults")
parser.add_argument("--auth", nargs=2, metavar=("USER", "PASSWORD"))
parser.add_argument("--tls", choices=["starttls", "implicit"])
parser.add_argument("--cert")
parser.add_argument("--key")
parser.add_argument("--until-stdin-closes", action="store_true")
args = parser.parse_args()

rejections = {}
for spec in args.reject:
    stage, _, code = spec.partition("=")
    if stage not in ("mail", "rcpt", "data") or not code.isdigit():
        parser.error(f"--reject {spec}: expected mail=CODE, rcpt=CODE or data=CODE")
    rejections[stage] = int(code)
if bool(args.alerts_to) != bool(args.alerts) or (args.alerts and not args.log):
    parser.error("--alerts-to and --alerts go together, with --log")
if args.tls and not (args.cert and args.key):
    parser.error("--tls needs --cert and --key")

log = open(args.log, "a", buffering=1) if args.log else None
alerts = open(args.alerts, "a", buffering=1) if args.alerts else None
REFUSALS = {"mail": "sender refused", "rcpt": "recipient refused", "data": "message refused"}
FAULTS = {"451-mail": ("mail", "451 4.3.0 soak: try again later"),
          "554-data": ("data", "554 5.6.0 soak: message refused"),
          "close-data": ("data", None)}


def refusal(stage):
    """The reply refusing this stage, None to close the connection, or "" to accept."""
    if args.faults:
        try:
            with open(args.faults) as f:
                fault = FAULTS.get((f.read().split() or ["ok"])[0])
        except FileNotFoundError:
            fault = None
        if fault and fault[0] == stage:
            return fault[1]
    if stage in rejections:
        return "%d %s by test server" % (rejections[stage], REFUSALS[stage])
    return ""


def clean(text):
    return " ".join(str(text or "").split()).replace("\\", "/")


class Handler:
    counter = 0

    async def handle_MAIL(self, server, session, envelope, address, options):
        if reply := refusal("mail"):
            return reply
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, options):
        if reply := refusal("rcpt"):
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        reply = refusal("data")
        if reply is None:
            server.transport.close()
            return "421 4.3.0 closing"  # never reaches the client: the connection is gone
        if reply:
            return reply
        arrival = datetime.datetime.now(datetime.timezone.utc)
        if args.messages:
            self.keep_message(server, session, envelope)
        if log:
            self.log_recipients(arrival.isoformat(), envelope)
        return "250 OK queued"

    def keep_message(self, server, session, envelope):
        Handler.counter += 1
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "login": session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None,
            "data": envelope.original_content.decode("utf-8", "replace"),
            "tls": session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None,
        }
        name = os.path.join(args.messages, "%06d.json" % Handler.counter)
        with open(name + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(name + ".tmp", name)  # readers never see half a file

    def log_recipients(self, now, envelope):
        parsed = email.parser.BytesParser(policy=email.policy.default).parsebytes(envelope.original_content)
        body = parsed.get_body(preferencelist=("plain",))
        text = body.get_content() if body is not None else ""
        has_password = any(line.startswith("Temporary password: ") for line in text.splitlines())
        for rcpt in envelope.rcpt_tos:
            if alerts and rcpt.lower() == args.alerts_to.lower():
                alerts.write("\t".join([now, clean(rcpt), clean(parsed.get("Subject")), clean(text)[:300]]) + "\n")
                continue
            log.write("\t".join([now, clean(rcpt), clean(parsed.get("Message-ID")),
                                 clean(parsed.get("Subject")), "t" if has_password else "f"]) + "\n")
        log.flush()
        if alerts:
            alerts.flush()


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = (isinstance(auth_data, LoginPassword)
          and auth_data.login.decode() == args.auth[0] and auth_data.password.decode() == args.auth[1])
    return AuthResult(success=ok, handled=False, auth_data=auth_data)


class NoDelaySMTP(SMTP):
    """aiosmtpd writes a multi-line reply (EHLO's) one line at a time; with Nagle's
    algorithm on, every line after the first waits for the client's delayed ACK, and
    each session loses 40 ms to it (a real MTA sends the reply in one write)."""

    def connection_made(self, transport):
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


async def main():
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(16)
    context = None
    if args.tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.cert, args.key)
    starttls = args.tls == "starttls"
    factory = lambda: NoDelaySMTP(
        Handler(), hostname="caretaker-test", decode_data=False,
        authenticator=authenticator if args.auth else None,
        auth_required=bool(args.auth), auth_require_tls=False,
        tls_context=context if starttls else None, require_starttls=starttls,
    )
    server = await loop.create_server(factory, sock=sock, ssl=context if args.tls == "implicit" else None)
    stopped = loop.create_future()
    stop = lambda: stopped.done() or stopped.set_result(None)
    loop.add_signal_handler(signal.SIGTERM, stop)
    loop.add_signal_handler(signal.SIGINT, stop)
    if args.until_stdin_closes:
        stdin = sys.stdin.fileno()
        loop.add_reader(stdin, lambda: os.read(stdin, 1024) or stop())
    print("ready %d" % sock.getsockname()[1], flush=True)
    async with server:
        await stopped


asyncio.run(main())
