"""Connection soak: hold thousands of connections at once, then open and drop connections in a
loop while they misbehave (vanish mid-command, mid-MULTI, while blocked or subscribed), against a
minired subprocess. Prints the connections held, the churn done, what the server still counts
afterwards (clients, blocked clients, pub/sub channels) and its RSS before and after.

    python bench/soak_connections.py [--hold 4000] [--churn 20000]
"""
from __future__ import annotations

import argparse
import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from minired.embed import SubprocessServer


def command(*args: str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode()
        out.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(out)


MISBEHAVIOUR = [
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc",                  # gone mid-command
    command("WATCH", "w") + command("MULTI") + command("SET", "w", "1"),  # gone mid-MULTI
    command("BLPOP", "q1", "q2", "0"),                              # gone while blocked
    command("BZPOPMIN", "z", "0"),
    command("SUBSCRIBE", "c1", "c2") + command("PSUBSCRIBE", "p*"),  # gone while subscribed
    command("PING") * 100,                                          # gone with replies unread
    b"*1\r\n$500000000\r\n",                                        # a huge header, then gone
]


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def info(port: int) -> dict[str, str]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(command("INFO", "clients"))
        data = b""
        while not data.endswith(b"\r\n\r\n") or data.count(b"\r\n") < 3:
            data += sock.recv(65536)
        sock.sendall(command("PUBSUB", "NUMPAT") + command("PUBSUB", "CHANNELS"))
        time.sleep(0.05)
        tail = sock.recv(65536)
    fields = dict(line.split(":", 1) for line in data.decode().splitlines() if ":" in line)
    fields["numpat"] = tail.split(b"\r\n")[0][1:].decode()
    fields["channels"] = tail.split(b"\r\n")[1][1:].decode()
    return fields


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=int, default=4000)
    parser.add_argument("--churn", type=int, default=20000)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, args.hold * 2 + 256)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    hold = min(args.hold, wanted // 2 - 128)

    mb = 1024 * 1024
    with SubprocessServer() as server:
        pid = server.proc.pid
        start_rss = rss(pid)

        started = time.monotonic()
        held = []
        for i in range(hold):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            if i % 2:
                sock.sendall(MISBEHAVIOUR[i % len(MISBEHAVIOUR)])
            held.append(sock)
        while int(info(server.port).get("connected_clients", 0)) < hold:
            time.sleep(0.1)
        peak = info(server.port)
        held_rss = rss(pid)
        for sock in held:
            sock.close()
        hold_seconds = time.monotonic() - started

        started = time.monotonic()
        for i in range(args.churn):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(MISBEHAVIOUR[i % len(MISBEHAVIOUR)])
            if i % 3 == 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()
        churn_seconds = time.monotonic() - started

        deadline = time.monotonic() + 30
        while True:
            after = info(server.port)
            settled = (after["connected_clients"] == "1" and after["blocked_clients"] == "0"
                       and after["numpat"] == "0" and after["channels"] == "0")
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        end_rss = rss(pid)

    print(f"connections held at once:  {hold} (server counted {peak['connected_clients']}, "
          f"{peak.get('blocked_clients')} blocked) in {hold_seconds:.1f} s")
    print(f"connections churned:       {args.churn} in {churn_seconds:.1f} s "
          f"({args.churn / churn_seconds:.0f}/s)")
    print(f"left behind:               clients={after['connected_clients']} (this probe) "
          f"blocked={after['blocked_clients']} patterns={after['numpat']} channels={after['channels']}")
    print(f"RSS start / holding / end: {start_rss / mb:.1f} MB / {held_rss / mb:.1f} MB / "
          f"{end_rss / mb:.1f} MB")
    return 0 if settled else 1


if __name__ == "__main__":
    sys.exit(main())
