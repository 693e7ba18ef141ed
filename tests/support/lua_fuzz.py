"""Differential fuzzing of the Lua bridge: generated scripts run by EVAL on real Redis and on
minired, their replies compared byte for byte, and the server checked alive after each.

A script builds values - scalars of every Lua type (integers, floats with NaN, infinities and
-0, strings with NUL, CR, LF and non-UTF-8 bytes, booleans, nil, functions, coroutines,
cjson.null), arrays with holes, sparse and hash tables, the reply-shaped tables (ok, err,
double, big_number, verbatim_string, map, set), metatables, cycles, chains nested from a few
to twenty thousand levels deep, tables of up to a hundred thousand elements - and then returns
one, passes it to redis.call / redis.pcall (arguments included: huge unpacked lists, tables,
nil), to cjson (encode, decode of generated and deeply nested text) or cmsgpack (pack, unpack
of packed and of random bytes), to redis.error_reply / status_reply, or raises it; under
RESP2 or RESP3 clients, with redis.setresp(3) or not.

Only deterministic output is generated, so nothing is normalised: Redis's Lua and lupa's are
both Lua 5.1 with the same string and number hashing (checked: pairs() visits string and number
keys in the same order on both), but a table, function or coroutine key hashes by address,
so such a key is only ever the single key of its table; tostring() of a table, function,
coroutine or userdata prints an address and is never generated. What Redis 7.0.15 itself
cannot take is not generated either: error() with a table that has no `err` field crashes it
(luaExtractErrorInformation reads a NULL message).

bench/lua_fuzz.py runs this for long; tests/scripting/test_lua_fuzz_diff.py for a few seconds.
"""
from __future__ import annotations

import random
import socket
from dataclasses import dataclass

from .shrinking import drop_while_same

# --- raw RESP ---------------------------------------------------------------------------------


class RawConnection:
    """One connection, replies read as their raw bytes (one whole frame, however deep: the
    frame is walked with a counter of the elements still due, not recursively)."""

    def __init__(self, port: int, timeout: float = 10.0, protocol: int = 2) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        if protocol == 3:
            self.call(b"HELLO", b"3")

    def close(self) -> None:
        self.sock.close()

    def call(self, *args: bytes) -> bytes:
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            out.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
        self.sock.sendall(b"".join(out))
        return self.read_frame()

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos:end])
                self.pos = end + 2
                return line
            self._fill()

    def _skip(self, size: int) -> None:
        while len(self.buf) < self.pos + size + 2:
            self._fill()
        self.pos += size + 2

    def read_frame(self) -> bytes:
        start = self.pos
        due = 1
        while due:
            due -= 1
            line = self._line()
            kind, rest = line[:1], line[1:]
            if kind in (b"$", b"=", b"!"):
                size = int(rest)
                if size >= 0:
                    self._skip(size)
            elif kind in (b"*", b"~", b">"):
                due += max(int(rest), 0)
            elif kind in (b"%", b"|"):
                due += 2 * int(rest) + (1 if kind == b"|" else 0)
            elif kind not in (b"+", b"-", b":", b",", b"#", b"_", b"("):
                raise ValueError(f"not a RESP frame: {line!r}")
        frame = bytes(self.buf[start:self.pos])
        del self.buf[:self.pos]
        self.pos = 0
        return frame


# --- generated Lua ----------------------------------------------------------------------------

# Numbers that matter to the conversions: integral and not, past 2^53 and 2^63, -0, NaN (whose
# sign shows in "%.17g"), infinities.
NUMBERS = ["0", "1", "-1", "7", "42", "1024", "3.99", "-3.99", "0.1", "1e15", "1e17", "2^53",
           "2^53+1", "2^63", "-2^63", "2^64", "1e300", "-1e300", "-0.0", "0/0", "-(0/0)", "1/0",
           "-1/0", "123456789012", "1.5e-7"]
TEXTS = [b"", b"x", b"OK", b"hello world", b"a\0b", b"\0", b"\r\n", b"a\r\nb", b"x\r\n",
         b"\r\nx", b"\xff\xfe", b"\xff x", b"ERR x", b"-ERR y", b"MY code here", b"-", b" ",
         b"nospace", b"A" * 40 + b" long code", b"1", b"-1", b"3.5", b"txt", b"t", b"{}",
         b"[1,2]", b"null"]
LEAVES = ["true", "false", "nil", "cjson.null", "function() end",
          "coroutine.create(function() end)"]
COMMANDS = ["echo", "ping", "set", "get", "rpush", "lrange", "hset", "hget", "incr",
            "incrbyfloat", "zadd", "zrange", "del", "type", "strlen", "exists", "append",
            "getrange", "nosuch", "lpush", "llen"]
# Chain depths around every limit: the C encoder's 32, cmsgpack's 16, cjson's 1000, the Lua
# stack's 7996 (after a few slots of each kind of level), and far past them.
DEPTHS = [3, 15, 16, 17, 31, 32, 33, 100, 999, 1000, 1001, 2665, 2666, 2667, 3997, 3998, 3999,
          7990, 7994, 7995, 7996, 8000, 20000]
SIZES = [0, 1, 255, 256, 257, 1000, 3999, 4000, 4001, 7997, 7998, 7999, 8000, 100000]


def lua_string(raw: bytes) -> str:
    """A Lua string literal for any bytes."""
    out = []
    for byte in raw:
        char = chr(byte)
        if byte < 128 and (char.isalnum() or char in " -_.,:;!?{}[]()+*/=<>@#$%^&|~"):
            out.append(char)
        else:
            out.append("\\%03d" % byte)  # (three digits: a digit may follow)
    return "'" + "".join(out) + "'"


class ScriptGenerator:
    """Generates one Lua script at a time: `lines` (statements that build locals) and a last
    line that uses them."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.names = 0

    def _local(self, expression: str) -> str:
        self.names += 1
        name = f"v{self.names}"
        self.lines.append(f"local {name} = {expression}")
        return name

    # scalars

    def number(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.6:
            return rng.choice(NUMBERS)
        if pick < 0.8:
            return str(rng.randint(-10**6, 10**6))
        return "%.17g" % rng.uniform(-1e6, 1e6)

    def text(self) -> str:
        rng = self.rng
        if rng.random() < 0.7:
            return lua_string(rng.choice(TEXTS))
        if rng.random() < 0.1:
            return f"string.rep('ab', {rng.choice([100, 5000, 100000])})"
        length = rng.randint(0, 12)
        return lua_string(bytes(rng.choice(b"ab \0\r\n\xff\x7f\"'\\-:+$*%~") for _ in range(length)))

    def scalar(self) -> str:
        pick = self.rng.random()
        if pick < 0.4:
            return self.number()
        if pick < 0.8:
            return self.text()
        return self.rng.choice(LEAVES)

    def key(self) -> str:
        """A table key that iterates in the same order on both Luas (see the module doc)."""
        pick = self.rng.random()
        if pick < 0.6:
            return lua_string(self.rng.choice([b"a", b"b", b"c", b"k1", b"k2", b"long key", b"\0",
                                               b"ok", b"err", b"map", b"set", b"x\r\n"]))
        if pick < 0.9:
            return self.rng.choice(["1", "2", "3", "5", "100", "1.5", "-1", "0", "2^40"])
        return self.rng.choice(["true", "false"])

    # tables

    def value(self, depth: int = 0) -> str:
        if depth > 3 or self.rng.random() < 0.35:
            return self.scalar()
        builders = [self.array, self.array, self.holes, self.sparse, self.hash, self.shaped,
                    self.shaped, self.meta, self.cycle, self.chain, self.huge, self.reply_helper,
                    self.pointer_key]
        return self.rng.choice(builders)(depth + 1)

    def array(self, depth: int) -> str:
        return "{" + ", ".join(self.value(depth) for _ in range(self.rng.randint(0, 5))) + "}"

    def holes(self, depth: int) -> str:
        items = [self.value(depth) if self.rng.random() < 0.6 else "nil"
                 for _ in range(self.rng.randint(1, 6))]
        return "{" + ", ".join(items) + "}"

    def sparse(self, depth: int) -> str:
        indexes = sorted(self.rng.sample([1, 2, 3, 4, 5, 10, 11, 20, 100, 2**31, 2**31 + 1],
                                         self.rng.randint(1, 4)))
        return "{" + ", ".join(f"[{i}] = {self.value(depth)}" for i in indexes) + "}"

    def hash(self, depth: int) -> str:
        keys = {self.key() for _ in range(self.rng.randint(1, 5))}
        return "{" + ", ".join(f"[{k}] = {self.value(depth)}" for k in keys) + "}"

    def shaped(self, depth: int) -> str:
        rng = self.rng
        shape = rng.choice(["ok", "err", "err_counted", "double", "big_number", "verbatim",
                            "map", "set", "ok_number", "double_text", "err_and_ok"])
        if shape == "ok":
            return "{ok = %s}" % self.text()
        if shape == "err":
            return "{err = %s}" % self.text()
        if shape == "err_counted":
            return "{err = %s, ignore_error_stats_update = %s}" % (
                self.text(), rng.choice(["true", "false", "1"]))
        if shape == "double":
            return "{double = %s}" % self.number()
        if shape == "big_number":
            return "{big_number = %s}" % self.text()
        if shape == "verbatim":
            return "{verbatim_string = {format = %s, string = %s}}" % (
                rng.choice([self.text(), "'txt'", "'mkd'", "1"]), self.text())
        if shape == "map":
            return "{map = %s}" % self.hash(depth)
        if shape == "set":
            keys = {self.key() for _ in range(rng.randint(0, 4))}
            return "{set = {" + ", ".join(f"[{k}] = true" for k in keys) + "}}"
        if shape == "ok_number":
            return "{ok = %s, 1, 2}" % self.number()
        if shape == "double_text":
            return "{double = %s}" % self.text()
        return "{err = %s, ok = %s}" % (self.text(), self.text())

    def meta(self, depth: int) -> str:
        rng = self.rng
        handlers = rng.choice([
            "{__index = function(t, k) return 9 end}",
            "{__index = %s}" % self.array(depth),
            "{__len = function() return 100 end}",
            "{__tostring = function() return 'shown' end}",
            "{__newindex = function() error('no') end}",
            "{__call = function() return 1 end, __index = {err = 'hidden'}}",
            "{__index = {ok = 'hidden'}}",
            "{__metatable = 'locked'}",
        ])
        return f"setmetatable({self.array(depth)}, {handlers})"

    def cycle(self, depth: int) -> str:
        name = self._local(self.rng.choice(["{}", "{1}", "{'a', 'b'}", "{map = {}}"]))
        where = self.rng.choice(["[1]", "[2]", ".map.k", ".set"])
        if where == ".map.k":
            self.lines.append(f"{name}.map = {{k = {name}}}")
        elif where == ".set":
            self.lines.append(f"{name}.set = {{[{name}] = true}}")
        else:
            self.lines.append(f"{name}{where} = {name}")
        return name

    def chain(self, depth: int) -> str:
        """A table nested DEPTH deep through arrays, maps or sets, ending in a value."""
        rng = self.rng
        levels = rng.choice(DEPTHS)
        name = self._local("{}")
        link = rng.choice(["array", "array", "map", "set", "mixed"])
        end = self.scalar()
        step = {
            "array": "c[1] = n",
            "map": "c.map = {k = n}",
            "set": "c.set = {[n] = true}",
            "mixed": "if i % 3 == 0 then c.map = {k = n} elseif i % 3 == 1 then c[1] = n "
                     "else c[1] = 'x' c[2] = n end",
        }[link]
        self.lines.append(f"do local c = {name} for i = 1, {levels} do local n = {{}} {step} "
                          f"c = n end c[1] = {end} end")
        return name

    def huge(self, depth: int) -> str:
        size = self.rng.choice(SIZES)
        element = self.rng.choice(["i", "'x' .. i", "{i}", "i + 0.5", "i % 2 == 0"])
        name = self._local("{}")
        self.lines.append(f"for i = 1, {size} do {name}[i] = {element} end")
        return name

    def reply_helper(self, depth: int) -> str:
        helper = self.rng.choice(["redis.error_reply", "redis.status_reply"])
        arguments = self.rng.choice([self.text(), self.text(), self.scalar(), "",
                                     f"{self.text()}, {self.text()}"])
        return f"{helper}({arguments})"

    def pointer_key(self, depth: int) -> str:
        """A table whose one key is a table or function (hashed by address)."""
        return "{[%s] = %s}" % (self.rng.choice(["{}", "{1}", "function() end"]),
                                self.value(depth))

    # what a script does with its values

    def call_arguments(self) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.15:
            name = self.huge(1)
            return f"unpack({name})"
        count = rng.randint(0, 4)
        return ", ".join(self.scalar() if rng.random() < 0.85 else self.value(2)
                         for _ in range(count))

    def action(self) -> str:
        rng = self.rng
        kind = rng.choice(["return", "return", "return", "call", "call", "pcall", "cjson",
                           "cjson_decode", "cmsgpack", "cmsgpack_unpack", "error", "setresp",
                           "api", "builtin", "coroutine", "struct_bit"])
        if kind == "return":
            return f"return {self.value()}"
        if kind in ("call", "pcall"):
            command = lua_string(rng.choice(COMMANDS).encode())
            arguments = self.call_arguments()
            function = "redis.call" if kind == "call" else "redis.pcall"
            call = f"{function}({command}{', ' + arguments if arguments else ''})"
            return rng.choice([f"return {call}", f"return {{{call}}}",
                               f"return {{pcall({function}, {command}"
                               f"{', ' + arguments if arguments else ''})}}"])
        if kind == "cjson":
            value = self.value()
            return rng.choice([f"return cjson.encode({value})",
                               f"return {{pcall(cjson.encode, {value})}}",
                               f"return cjson.decode(cjson.encode({value}))"])
        if kind == "cjson_decode":
            return f"return {{pcall(cjson.decode, {self.json_text()})}}"
        if kind == "cmsgpack":
            value = self.value()
            return rng.choice([f"return cmsgpack.pack({value})",
                               f"return {{pcall(cmsgpack.pack, {value})}}",
                               f"return {{cmsgpack.unpack(cmsgpack.pack({value}))}}",
                               f"return {{pcall(cmsgpack.pack, {self.value()}, {value})}}"])
        if kind == "cmsgpack_unpack":
            return f"return {{pcall(cmsgpack.unpack, {self.msgpack_bytes()})}}"
        if kind == "api":
            # The rest of the redis table, given odd values (their errors are Lua errors).
            function = rng.choice(["redis.setresp", "redis.set_repl", "redis.log", "redis.sha1hex",
                                   "redis.acl_check_cmd", "redis.error_reply",
                                   "redis.status_reply", "redis.breakpoint", "redis.debug"])
            arguments = ", ".join(self.scalar() if rng.random() < 0.8 else self.value(2)
                                  for _ in range(rng.randint(0, 3)))
            return f"return {{pcall({function}{', ' + arguments if arguments else ''})}}"
        if kind == "builtin":
            # Lua's own functions (those the sandbox wraps among them) given any values;
            # tostring and string.format are left out (of a table they print its address), and
            # so are error and assert (with a table, see the module's doc).
            function = rng.choice(["setmetatable", "rawset", "rawget", "next", "pairs", "ipairs",
                                   "getmetatable", "loadstring", "load", "table.insert",
                                   "table.remove", "table.sort", "table.concat", "unpack",
                                   "select", "tonumber", "string.rep", "string.sub",
                                   "string.dump", "coroutine.create", "coroutine.wrap", "type",
                                   "rawequal"])
            arguments = ", ".join(self.scalar() if rng.random() < 0.6 else self.value(2)
                                  for _ in range(rng.randint(0, 4)))
            call = f"{function}({arguments})"
            return rng.choice([f"return {{pcall({function}{', ' + arguments if arguments else ''})}}",
                               f"return {{{call}}}", f"return {call}"])
        if kind == "struct_bit":
            values = ", ".join(self.scalar() for _ in range(rng.randint(0, 4)))
            if rng.random() < 0.5:
                function = rng.choice(["bit.tobit", "bit.tohex", "bit.bnot", "bit.band", "bit.bor",
                                       "bit.bxor", "bit.lshift", "bit.rshift", "bit.arshift",
                                       "bit.rol", "bit.ror", "bit.bswap"])
            else:
                format_ = "".join(rng.choice("bBhHiIlLfdsczx<>!=0123456789 ")
                                  for _ in range(rng.randint(0, 6)))
                function = rng.choice(["struct.pack", "struct.unpack", "struct.size"])
                values = lua_string(format_.encode()) + (", " + values if values else "")
            return f"return {{pcall({function}{', ' + values if values else ''})}}"
        if kind == "coroutine":
            inner = self.action()
            return (f"local co = coroutine.create(function() {inner} end) "
                    f"local r = {{coroutine.resume(co)}} return r[2]")
        if kind == "error":
            # error() of a table with no err field crashes Redis 7.0.15: only err tables,
            # strings, numbers, booleans and nil are raised.
            value = rng.choice([self.text(), self.number(), "nil", "true",
                                "{err = %s}" % self.text(),
                                "{err = %s, ignore_error_stats_update = true}" % self.text(),
                                "{err = %s}" % self.number()])
            return rng.choice([f"error({value})", f"error({value}, 0)",
                               f"return {{pcall(error, {value})}}"])
        # setresp: the script's own protocol decides how tables and booleans convert.
        return f"redis.setresp(3) return {rng.choice([self.value(), self.call_of_resp3()])}"

    def call_of_resp3(self) -> str:
        return self.rng.choice([
            "redis.call('hgetall', 'h')", "redis.call('get', 'nosuch')",
            "redis.call('incrbyfloat', 'f', '1.5')", "{redis.call('zrange', 'z', 0, -1, 'withscores')}",
            "redis.pcall('nosuch')", "redis.call('echo', 'x')",
        ])

    def json_text(self) -> str:
        rng = self.rng
        depth = rng.choice([1, 2, 10, 999, 1000, 1001, 5000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        inner = rng.choice(["1", '"x"', "null", "true", "[]", "{}", "1e400", "-0", "0x10", "nan",
                            '"\\u0000"', '"\\ud800"', ""])
        if rng.random() < 0.5:
            return lua_string(rng.choice([b"", b"[", b"]", b"{", b"[1,]", b'{"a"}', b"nul", b"1 2",
                                          b'"\\x"', b"\0", b"[1]\0junk", b"\xff", b"[1, 2, 3]",
                                          b'{"a": [1, {"b": null}]}', b"  42  "]))
        return f"string.rep({lua_string(opener.encode())}, {depth}) .. {lua_string(inner.encode())}" \
               f" .. string.rep({lua_string(closer.encode())}, {depth})"

    def msgpack_bytes(self) -> str:
        rng = self.rng
        if rng.random() < 0.3:
            # arrays nested deep: 0x91 is fixarray(1)
            return f"string.rep('\\145', {rng.choice([10, 16, 17, 1000, 8000, 20000])}) .. '\\1'"
        length = rng.randint(0, 12)
        return lua_string(bytes(rng.randrange(256) for _ in range(length)))

    def script(self) -> str:
        self.lines = []
        self.names = 0
        last = self.action()
        return "\n".join([*self.lines, last])


# --- running ----------------------------------------------------------------------------------

# Keys the scripts' commands find: a hash, a sorted set and a float.
SETUP = [
    (b"HSET", b"h", b"a", b"1", b"b", b"2"),
    (b"ZADD", b"z", b"1", b"m1", b"2.5", b"m2"),
    (b"SET", b"f", b"1.5"),
]


@dataclass
class Mismatch:
    script: str
    protocol: int
    redis_reply: bytes
    minired_reply: bytes
    died: bool = False
    function: bool = False  # run as a function (FCALL) rather than by EVAL

    def describe(self, limit: int = 300) -> str:
        def show(reply: bytes) -> str:
            if len(reply) <= limit:
                return repr(reply)
            return f"{reply[:limit // 2]!r} ... {reply[-limit // 2:]!r} ({len(reply)} bytes)"

        head = "minired died or stopped answering" if self.died else "replies differ"
        how = "FCALL of the function" if self.function else "EVAL of the script"
        return (f"{head} (RESP{self.protocol}), {how}:\n{self.script}\n"
                f"  redis:   {show(self.redis_reply)}\n  minired: {show(self.minired_reply)}")


class MiniredDied(Exception):
    pass


class LuaFuzzPair:
    """A connection to each server per protocol; scripts sent to both, replies compared."""

    def __init__(self, redis_port: int, minired_port: int, timeout: float = 20.0) -> None:
        self.ports = (redis_port, minired_port)
        self.timeout = timeout
        self.connections: dict[int, tuple[RawConnection, RawConnection]] = {}

    def _pair(self, protocol: int) -> tuple[RawConnection, RawConnection]:
        if protocol not in self.connections:
            self.connections[protocol] = (
                RawConnection(self.ports[0], self.timeout, protocol),
                RawConnection(self.ports[1], self.timeout, protocol))
        return self.connections[protocol]

    def close(self) -> None:
        for redis, minired in self.connections.values():
            redis.close()
            minired.close()
        self.connections.clear()

    def reset(self) -> None:
        redis, minired = self._pair(2)
        for command in [(b"FLUSHALL",), (b"SCRIPT", b"FLUSH"), (b"FUNCTION", b"FLUSH"), *SETUP]:
            redis.call(*command)
            minired.call(*command)

    def run(self, script: str, protocol: int, function: bool = False) -> Mismatch | None:
        """EVAL the script on both, or (`function`) load it as the body of a function and
        FCALL that; the mismatch, if any. A dead or silent minired is one."""
        redis, minired = self._pair(protocol)
        if function:
            library = (b"#!lua name=fuzz\nredis.register_function('f', function(KEYS, ARGV)\n"
                       + script.encode() + b"\nend)")
            command: tuple = (b"FCALL", b"f", b"0")
            for connection in (redis, minired):
                connection.call(b"FUNCTION", b"LOAD", b"REPLACE", library)
        else:
            command = (b"EVAL", script.encode(), b"0")
        expected = redis.call(*command)
        try:
            actual = minired.call(*command)
            alive = minired.call(b"PING") == b"+PONG\r\n"
        except (OSError, ConnectionError, socket.timeout) as exc:
            self.connections.pop(protocol, None)
            return Mismatch(script, protocol, expected, repr(exc).encode(), True, function)
        if not alive:
            return Mismatch(script, protocol, expected, b"(no PONG after it)", True, function)
        if expected != actual:
            return Mismatch(script, protocol, expected, actual, False, function)
        return None

    def shrink(self, mismatch: Mismatch) -> Mismatch:
        """Drop the script's statements (not its last line) while it still mismatches."""
        if mismatch.died:
            return mismatch

        def rerun(script: str) -> Mismatch | None:
            self.reset()
            return self.run(script, mismatch.protocol, mismatch.function)

        return drop_while_same(
            mismatch, lambda m: m.script.count("\n"),
            lambda m, i: "\n".join(m.script.split("\n")[:i] + m.script.split("\n")[i + 1:]),
            rerun, lambda found: not found.died)


def generate(rng: random.Random) -> tuple[str, int, bool]:
    """(script, protocol, whether it runs as a function) of one case."""
    return ScriptGenerator(rng).script(), rng.choice([2, 2, 3]), rng.random() < 0.2
