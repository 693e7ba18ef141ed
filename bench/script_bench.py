"""EVALSHA cost, in-process: server CPU µs per call of compare.py's EVALSHA load.

    python bench/script_bench.py            # µs per EVALSHA, pipelines of 1 and 16
    python bench/script_bench.py --profile  # plus a cProfile of the P16 loop

Feeds RESP straight to a ClientProtocol (no sockets), timing with process_time and keeping
the best of several repetitions: the machine is shared and wall-clock numbers swing. Over
TCP, against real Redis: `python bench/compare.py --quick --only EVALSHA`.

The script moves one element between two lists and SETs a lock key; successive batches swap
source and destination so the lists never run dry.
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minired.engine.server import ClientProtocol, Server
from minired.startup import prepare_server

SCRIPT = (b"redis.call('RPOPLPUSH', KEYS[1], KEYS[2]) "
          b"return redis.call('SET', KEYS[3], ARGV[1], 'PX', 30000)")
SHA = hashlib.sha1(SCRIPT).hexdigest().encode()


class Transport:
    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        if len(self.out) < 4:
            self.out.append(data)

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def multibulk(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args)


def batches(pipeline: int) -> tuple[bytes, bytes]:
    def batch(src: bytes, dst: bytes) -> bytes:
        return b"".join(multibulk(b"EVALSHA", SHA, b"3", src, dst, b"lock:%06d" % i, b"token")
                        for i in range(pipeline))
    return batch(b"src", b"dst"), batch(b"dst", b"src")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=4000, help="batches per repetition")
    parser.add_argument("-r", type=int, default=7, help="repetitions (best is kept)")
    parser.add_argument("--profile", action="store_true")
    opts = parser.parse_args()

    server = prepare_server(Server())
    transport = Transport()
    protocol = ClientProtocol(server)
    protocol.connection_made(transport)
    protocol.data_received(multibulk(b"SCRIPT", b"LOAD", SCRIPT))
    protocol.data_received(multibulk(b"RPUSH", b"src", *[b"0123456789abcdef"] * 64))
    protocol.data_received(multibulk(b"EVALSHA", SHA, b"3", b"src", b"dst", b"lock:x", b"token"))
    print("reply check:", transport.out[-1][:60])

    for pipeline in (1, 16):
        forward, back = batches(pipeline)
        best = float("inf")
        for _ in range(opts.r):
            started = time.process_time()
            for _ in range(opts.n // 2):
                protocol.data_received(forward)
                protocol.data_received(back)
            best = min(best, time.process_time() - started)
        per_call = best / ((opts.n // 2) * 2 * pipeline) * 1e6
        print(f"EVALSHA -P {pipeline:<2}  {per_call:6.2f} µs/call (in-process, best of {opts.r})")

    if opts.profile:
        forward, back = batches(16)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(opts.n // 4):
            protocol.data_received(forward)
            protocol.data_received(back)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
