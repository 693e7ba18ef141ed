"""The floor: the smallest asyncio server that answers PING, SET and GET from a dict.

It does nothing minired does not also have to do (parse RESP, look up, encode), so the CPU it
spends per request is the floor for a Python server on this machine; minired is measured
against it (target: within 1.2x). Run: python bench/floor_server.py PORT
"""
from __future__ import annotations

import asyncio
import sys

DATA: dict[bytes, bytes] = {}


class FloorProtocol(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        buf = self.buf + data
        out = []
        pos = 0
        n = len(buf)
        while pos < n:
            if buf[pos] != 42:  # inline (redis-benchmark's PING_INLINE)
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                args = buf[pos:nl].split()
                pos = nl + 1
            else:
                nl = buf.find(b"\r\n", pos)
                if nl < 0:
                    break
                count = int(buf[pos + 1:nl])
                p = nl + 2
                args = []
                for _ in range(count):
                    nl = buf.find(b"\r\n", p)
                    if nl < 0:
                        break
                    size = int(buf[p + 1:nl])
                    if nl + 2 + size + 2 > n:
                        break
                    args.append(buf[nl + 2:nl + 2 + size])
                    p = nl + 2 + size + 2
                if len(args) < count:
                    break
                pos = p
            if not args:
                continue
            name = args[0].upper()
            if name == b"PING":
                out.append(b"+PONG\r\n")
            elif name == b"SET":
                DATA[args[1]] = args[2]
                out.append(b"+OK\r\n")
            elif name == b"GET":
                value = DATA.get(args[1])
                out.append(b"$-1\r\n" if value is None else b"$%d\r\n%b\r\n" % (len(value), value))
            else:
                out.append(b"-ERR unknown command\r\n")
        self.buf = buf[pos:]
        if out:
            self.transport.write(b"".join(out))


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(FloorProtocol, "127.0.0.1", port)
    print(f"floor server ready on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 6390))
