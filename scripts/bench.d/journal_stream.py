"""Runs a command with its stderr on systemd-journald's stream socket, as systemd
does for a service with StandardError=journal: connects to /run/systemd/journal/stdout,
sends the stream's header, makes the connection fd 2, sets JOURNAL_STREAM to its
device:inode (systemd.exec(5)) and execs the command, which keeps this PID.

    python3 journal_stream.py IDENTIFIER COMMAND [ARG...]
"""
import os
import socket
import sys

identifier, command = sys.argv[1], sys.argv[2:]
stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
stream.connect("/run/systemd/journal/stdout")
# identifier, unit id, priority, level prefix, forward to syslog, kmsg, console
stream.sendall(f"{identifier}\n\n6\n1\n0\n0\n0\n".encode())
stream.shutdown(socket.SHUT_RD)
os.dup2(stream.fileno(), 2)
stream.close()
status = os.fstat(2)
os.environ["JOURNAL_STREAM"] = f"{status.st_dev}:{status.st_ino}"
os.execvp(command[0], command)
