"""An attacker's listener for the tests: listens on 127.0.0.1 at the ports
given, accepts every connection and never answers, holding them all until
it exits, --life seconds after it started (or on SIGTERM).  Prints
"listening N" once bound (N ports: one already in use is left out) and
"connection PORT" for each connection, flushed, so the test can count them.

    hold_listener.py --life SECONDS PORT..."""
import argparse
import select
import signal
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--life", type=float, default=60.0)
    ap.add_argument("ports", type=int, nargs="+")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    end = time.monotonic() + args.life
    listeners = []
    for port in args.ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        s.listen(64)
        listeners.append(s)
    print("listening %d" % len(listeners), flush=True)
    held = []
    while listeners and time.monotonic() < end:
        ready, _, _ = select.select(listeners, [], [], 0.2)
        for s in ready:
            conn, _ = s.accept()
            held.append(conn)
            print("connection %d" % s.getsockname()[1], flush=True)


main()
