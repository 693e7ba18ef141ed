"""Sans-IO RESP: request parsing (multibulk and inline) and reply encoding (RESP2 and RESP3).

Nothing here touches a socket. `RequestParser.feed()` takes bytes, `parse()` returns the
complete commands; `encode()` turns reply values into bytes for a protocol version.

Reply values are plain Python values:
  bytes / str            bulk string (str is UTF-8 encoded)
  int                    integer (bool is a RESP3 boolean, 1/0 under RESP2)
  float                  double (RESP3 `,`; bulk string under RESP2)
  None                   null bulk (`$-1` / `_`)
  NULL_ARRAY             null array (`*-1` / `_`), e.g. BLPOP timing out, EXEC aborted
  list / tuple           array
  dict                   map (flat array under RESP2)
  set / frozenset        set (array under RESP2)
  Status                 simple string (`+OK`)
  Verbatim               verbatim string (RESP3 `=`; bulk under RESP2)
  BigNumber              big number (RESP3 `(`; bulk under RESP2)
  Push                   push frame (RESP3 `>`; array under RESP2)
  Replies                several consecutive replies to one command (SUBSCRIBE a b)
  Encoded                bytes already encoded for the client's protocol (a script's array)
  RedisError             error line
"""
from __future__ import annotations

import math
import re

from minired.protocol import errors
from minired.protocol.errors import RedisError

MAX_BULK_LEN = 512 * 1024 * 1024
MAX_MULTIBULK = 2**31 - 1  # Redis 7 refuses only counts past INT_MAX; nothing is allocated from it
MAX_INLINE = 64 * 1024
# Limits Redis applies to clients that still have to AUTH.
UNAUTHENTICATED_MAX_MULTIBULK = 10
UNAUTHENTICATED_MAX_BULK = 16384


# Compiled (see setup.py), parse_canonical beats hiredis plus the checks its answers need, so
# hiredis serves the uncompiled build only (and the compiled one does not load it: start-up).
COMPILED = not __file__.endswith(".py")
_PURE = not COMPILED
_HiredisReader = None
if not COMPILED:
    try:  # hiredis is optional: the pure-Python parser gives the same results, more slowly
        from hiredis import Reader as _HiredisReader
    except ImportError:  # pragma: no cover - depends on the environment
        pass
_USE_HIREDIS = _HiredisReader is not None


class _NotForHiredis(Exception):
    pass


# Frames hiredis answers as bytes although they are not bulk strings: simple strings, verbatim
# strings, big numbers, and the element after an attribute (which it drops). Every element
# header follows a CRLF, so one scan finds them all; a value that happens to contain such a
# CRLF only costs the general parser. (One regex pass is several times cheaper than one
# `in` test per frame type.)
_NON_BULK_FRAME = re.compile(rb"\r\n[+=(|]")

_ONLY_BYTES = {bytes}


class ProtocolError(Exception):
    """Malformed input; `reply` is the exact error Redis sends before closing the connection."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.reply = RedisError(message)


class Status(bytes):
    """A simple-string reply such as +OK."""


class Verbatim(bytes):
    """A verbatim-string reply (RESP3 `=`), used by INFO and CLIENT INFO; bulk under RESP2."""


class BigNumber(bytes):
    """A big-number reply (RESP3 `(`; bulk under RESP2), as Lua scripts can return."""


class Push(list):
    """A push frame (RESP3 `>`): pub/sub messages and subscription confirmations."""


class OrderedSet(list):
    """A set reply whose elements Redis writes in a fixed order (CLIENT TRACKINGINFO's flags)."""


class MapPairs(list):
    """A map reply given as (key, value) pairs, for a map that may repeat a key: Redis counts
    what it writes (COMMAND DOCS get get names GET twice)."""


class Replies(list):
    """Several replies produced by one command, encoded one after another."""


class Encoded:
    """A reply already in RESP for the protocol of the client it is for: a script's array
    result, which the Lua side encodes in one pass (see sandbox.lua's encode_array)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"Encoded({self.data!r})"


class _NullArray:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY = _NullArray()
OK = Status(b"OK")
PONG = Status(b"PONG")
QUEUED = Status(b"QUEUED")


class RequestParser:
    """Splits a client's byte stream into commands (lists of bytes arguments).

    Never allocates from a length header: a bulk is sliced out only once all its bytes are here,
    and while a command is incomplete the parser just records how many bytes it still needs.
    """

    __slots__ = ("_chunks", "buffered", "_need", "max_bulk_len", "max_multibulk", "max_inline",
                 "error", "unauthenticated", "_hiredis")

    def __init__(self, max_bulk_len: int = MAX_BULK_LEN, max_multibulk: int = MAX_MULTIBULK,
                 max_inline: int = MAX_INLINE) -> None:
        self._chunks: list[bytes] = []
        self.buffered = 0  # bytes received but not yet parsed into commands (the query buffer)
        self._need = 0
        self.max_bulk_len = max_bulk_len
        self.max_multibulk = max_multibulk
        # Before AUTH (when a password is required) Redis parses one command at a time, so the
        # next one is judged by the auth state the previous one left, with tighter limits.
        self.unauthenticated = False
        self._hiredis = None
        self.max_inline = max_inline
        self.error: ProtocolError | None = None

    def feed(self, data: bytes) -> None:
        # Chunks are joined only when a parse can make progress, so a large bulk arriving in
        # many reads is copied once rather than once per read.
        if data:
            self._chunks.append(bytes(data))
            self.buffered += len(data)

    def feed_and_parse(self, data: bytes) -> list[list[bytes]]:
        """feed(data) then parse(), with a shortcut for the usual read: nothing left over from
        earlier reads, and data made of whole multibulk commands."""
        if self._chunks or self.unauthenticated or self.error is not None or data[:1] != b"*":
            self.feed(data)
            return self.parse()
        if _USE_HIREDIS and len(data) < 1 << 20 and _NON_BULK_FRAME.search(data) is None:
            commands = self._parse_with_hiredis(data)
            if commands is not None:
                return commands
        commands = []
        end = parse_canonical(data, commands, self.max_bulk_len, self.max_multibulk)
        if end == len(data):
            return commands
        self.feed(data[end:] if end else data)
        return commands + self.parse() if commands else self.parse()

    def _parse_with_hiredis(self, data: bytes) -> list[list[bytes]] | None:
        """hiredis's C reader, trusted only where its answer must equal ours: every command is
        an array whose elements all came back as bytes, none of them from a frame type other
        than a bulk string (the caller ruled those out), and the read held whole commands only
        (see the CRLF count below), every header parsed by hiredis with the same string2ll
        as Redis. Anything else returns None and the general parser, which owns every error
        text, starts over on the same bytes."""
        reader = self._hiredis
        if reader is None:
            reader = self._hiredis = _HiredisReader()
        reader.feed(data)
        commands = []
        try:
            while (command := reader.gets()) is not False:
                if type(command) is not list or not command or not _ONLY_BYTES.issuperset(map(type, command)):
                    raise _NotForHiredis
                commands.append(command)
        except Exception:
            self._hiredis = None  # a reader that saw an unusual frame is never reused
            return None
        # Whole canonical commands end the read and hold exactly one CRLF per header line and
        # one after each argument; a partial command left inside the reader would add a CRLF
        # or leave the read ending without one, and a CRLF inside a value adds one too.
        if not data.endswith(b"\r\n") or data.count(b"\r\n") != len(commands) + 2 * sum(map(len, commands)):
            self._hiredis = None
            return None
        if self.max_bulk_len < len(data) and any(len(a) > self.max_bulk_len for c in commands for a in c):
            return None
        return commands

    def parse(self) -> list[list[bytes]]:
        """Every complete command buffered so far. On malformed input, the commands before it
        are returned and `self.error` is set; the connection should then reply and close."""
        if self.buffered < self._need or self.error is not None or not self.buffered:
            return []
        chunks = self._chunks
        buf = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        n = len(buf)
        self._need = 0
        commands: list[list[bytes]] = []
        unauthenticated = self.unauthenticated
        pos = 0 if unauthenticated else parse_canonical(buf, commands, self.max_bulk_len,
                                                        self.max_multibulk)
        try:
            while pos < n and not (unauthenticated and commands):
                if buf[pos] == 42:  # '*'
                    end = self._parse_multibulk(buf, pos, n, commands)
                else:
                    end = self._parse_inline(buf, pos, n, commands)
                if end < 0:
                    break
                pos = end
        except ProtocolError as exc:
            self.error = exc
            self._chunks = []
            self.buffered = 0
            return commands
        if pos >= n:
            self._chunks = []
            self.buffered = 0
        else:
            rest = buf[pos:] if pos else buf
            self._chunks = [rest]
            self.buffered = len(rest)
        return commands

    def _parse_multibulk(self, buf: bytes, pos: int, n: int, out: list) -> int:
        nl = buf.find(b"\r\n", pos)
        if nl < 0:
            if n - pos > self.max_inline:
                raise ProtocolError(errors.PROTOCOL_BIG_MBULK)
            return -1
        count = string2ll(buf[pos + 1:nl])
        if count is None or count > self.max_multibulk:
            raise ProtocolError(errors.PROTOCOL_INVALID_MULTIBULK)
        if count > UNAUTHENTICATED_MAX_MULTIBULK and self.unauthenticated:
            raise ProtocolError(errors.PROTOCOL_UNAUTHENTICATED_MULTIBULK)
        p = nl + 2
        if count <= 0:
            return p
        args = []
        append = args.append
        find = buf.find
        max_bulk = self.max_bulk_len
        for _ in range(count):
            if p >= n:
                self._need = n - pos + 1
                return -1
            if buf[p] != 36:  # '$'
                raise ProtocolError(errors.PROTOCOL_EXPECTED_DOLLAR.format(chr(buf[p])))
            nl = find(b"\r\n", p)
            if nl < 0:
                if n - p > self.max_inline:
                    raise ProtocolError(errors.PROTOCOL_BIG_BULK)
                self._need = n - pos + 1
                return -1
            size = string2ll(buf[p + 1:nl])
            if size is None or size < 0 or size > max_bulk:
                raise ProtocolError(errors.PROTOCOL_INVALID_BULK)
            if size > UNAUTHENTICATED_MAX_BULK and self.unauthenticated:
                raise ProtocolError(errors.PROTOCOL_UNAUTHENTICATED_BULK)
            start = nl + 2
            stop = start + size
            if stop + 2 > n:
                # Remember how much must arrive before parsing is worth retrying: a large bulk
                # arriving in many reads is then scanned once, not once per read.
                self._need = stop + 2 - pos
                return -1
            append(buf[start:stop])
            p = stop + 2
        out.append(args)
        return p

    def _parse_inline(self, buf: bytes, pos: int, n: int, out: list) -> int:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            if n - pos > self.max_inline:
                raise ProtocolError(errors.PROTOCOL_BIG_INLINE)
            return -1
        line = buf[pos:nl]
        if line.endswith(b"\r"):
            line = line[:-1]
        args = split_inline(line)
        if args:
            out.append(args)
        return nl + 1


# The largest magnitudes string2ll's digits may reach, positive and negative.
_POSITIVE_LIMIT = 2**63 - 1
_NEGATIVE_LIMIT = 2**63


def string2ll(raw: bytes) -> int | None:
    """A signed 64-bit integer as Redis's string2ll reads it, or None: no '+', no spaces, no
    leading zeros and no '-0' (Python's int() would take all of those). The one port of that
    rule: request headers, command arguments (commands/args.parse_int), config values, RDB and
    listpack integers. At most 19 digits, which an unsigned 64-bit integer always holds, so the
    compiled build (resp.pxd types these locals) reads every text in C, without building objects."""
    data = raw
    size = len(raw)  # (not len(data): compiled, that is strlen, which stops at a NUL byte)
    if _PURE and 0 < size < 19 and type(raw) is bytes and raw.isdigit() and (
            size == 1 or data[0] != 48):
        # Uncompiled, the loop below is a round of bytecode per digit (timestamps and ids
        # have 13 or more); canonical non-negative digits read the same through int().
        return int(raw)
    negative = size > 0 and data[0] == 45  # '-'
    i = 1 if negative else 0
    # Refused before reading the digits: "", "-", more than 19 digits, "01", "-0".
    if i == size or size - i > 19 or (data[i] == 48 and (negative or size > 1)):
        return None
    value = 0
    while i < size:
        digit = data[i] - 48
        if digit < 0 or digit > 9:
            return None
        value = value * 10 + digit
        i += 1
    if negative:
        if value > _NEGATIVE_LIMIT:
            return None
        below = value - 1  # -value, in signed arithmetic that cannot overflow at INT64_MIN
        return -below - 1
    if value > _POSITIVE_LIMIT:
        return None
    return value


def parse_canonical(buf: bytes, out: list, max_bulk: int, max_multibulk: int) -> int:
    """The fast path for what clients normally send: multibulk commands whose headers are
    canonical (no sign, no leading zero, at most 18 digits, within the limits) and whose
    arguments end in CRLF. Appends each whole command to `out` and returns the offset where it
    stopped; the general parser goes on from there (a partial command, inline commands, odd
    headers, and every error case, so error replies always come from one place). Canonical
    digits read the same everywhere, so the two parsers cannot disagree on what this accepts.

    Compiled, resp.pxd makes this a C loop over the bytes, cheaper than any other parse; as
    plain Python it is the fallback when hiredis is missing."""
    n = len(buf)
    data = buf  # compiled: a pointer to buf's bytes, read and sliced without index objects
    pos = 0
    while pos < n and data[pos] == 42:  # '*'
        count = 0
        p = pos + 1
        while p < n and 48 <= data[p] <= 57 and p - pos <= 18:
            count = count * 10 + data[p] - 48
            p += 1
        if (count == 0 or data[pos + 1] == 48 or count > max_multibulk or p + 1 >= n
                or data[p] != 13 or data[p + 1] != 10):
            break
        p += 2
        args = []
        for i in range(count):
            if p >= n or data[p] != 36:  # '$'
                break
            size = 0
            q = p + 1
            while q < n and 48 <= data[q] <= 57 and q - p <= 18:
                size = size * 10 + data[q] - 48
                q += 1
            if (q == p + 1 or (data[p + 1] == 48 and q != p + 2) or size > max_bulk or q + 1 >= n
                    or data[q] != 13 or data[q + 1] != 10):
                break
            start = q + 2
            stop = start + size
            if stop + 2 > n or data[stop] != 13 or data[stop + 1] != 10:
                break
            args.append(data[start:stop])
            p = stop + 2
        else:
            out.append(args)
            pos = p
            continue
        break
    return pos


_ESCAPES = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b", ord("a"): b"\a"}
_HEX = b"0123456789abcdefABCDEF"


def split_inline(line: bytes) -> list[bytes]:
    """Split an inline command like Redis's sdssplitargs: spaces separate, "..." and '...' quote."""
    if b'"' not in line and b"'" not in line:
        return line.split()
    args: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in b" \t\n\r\v\f":
            i += 1
        if i >= n:
            return args
        current = bytearray()
        in_double = in_single = False
        while True:
            if in_double:
                if i >= n:
                    raise ProtocolError(errors.PROTOCOL_UNBALANCED_QUOTES)
                c = line[i]
                if c == 92 and i + 3 < n and line[i + 1] == 120 and line[i + 2] in _HEX and line[i + 3] in _HEX:
                    current.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    current += _ESCAPES.get(line[i], bytes([line[i]]))
                elif c == 34:
                    if i + 1 < n and line[i + 1] not in b" \t\n\r\v\f":
                        raise ProtocolError(errors.PROTOCOL_UNBALANCED_QUOTES)
                    i += 1
                    break
                else:
                    current.append(c)
            elif in_single:
                if i >= n:
                    raise ProtocolError(errors.PROTOCOL_UNBALANCED_QUOTES)
                c = line[i]
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    current.append(39)
                elif c == 39:
                    if i + 1 < n and line[i + 1] not in b" \t\n\r\v\f":
                        raise ProtocolError(errors.PROTOCOL_UNBALANCED_QUOTES)
                    i += 1
                    break
                else:
                    current.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in b" \t\n\r\v\f":
                    break
                if c == 34:
                    in_double = True
                elif c == 39:
                    in_single = True
                else:
                    current.append(c)
            i += 1
        args.append(bytes(current))


# ---------------------------------------------------------------------------------------------
# Encoding

def format_double(value: float) -> bytes:
    """A double as Redis 7.0's addReplyDouble prints it: %.17g (so 3.0 is "3", 0.1 is
    "0.10000000000000001", -0.0 is "-0"), infinities as "inf"/"-inf"."""
    if math.isinf(value):
        return b"inf" if value > 0 else b"-inf"
    if math.isnan(value):
        return b"nan"
    return b"%.17g" % value


# Frame heads of the lengths and integers most replies have, made once: bytes formatting
# costs more than the rest of encoding a short reply.
_TABLED = 1024
_BULK_HEADS = [b"$%d\r\n" % n for n in range(_TABLED)]
_SMALL_INTEGERS = [b":%d\r\n" % n for n in range(_TABLED)]
_ARRAY_HEADS = [b"*%d\r\n" % n for n in range(_TABLED)]


def _encode_bulk(v, proto, out):
    size = len(v)
    if size < _TABLED:
        out.append(_BULK_HEADS[size] + v + b"\r\n")
    else:
        out.append(b"$%d\r\n%b\r\n" % (size, v))


def _encode_str(v, proto, out):
    _encode_bulk(v.encode("utf-8", "surrogateescape"), proto, out)


def _encode_status(v, proto, out):
    if v is OK:
        out.append(b"+OK\r\n")
    elif v is PONG:
        out.append(b"+PONG\r\n")
    else:
        out.append(b"+%b\r\n" % v)


def _encode_int(v, proto, out):
    if 0 <= v < _TABLED:
        out.append(_SMALL_INTEGERS[v])
    else:
        out.append(b":%d\r\n" % v)


def _encode_bool(v, proto, out):
    if proto == 3:
        out.append(b"#t\r\n" if v else b"#f\r\n")
    else:
        out.append(b":1\r\n" if v else b":0\r\n")


def _encode_none(v, proto, out):
    out.append(b"_\r\n" if proto == 3 else b"$-1\r\n")


def _encode_null_array(v, proto, out):
    out.append(b"_\r\n" if proto == 3 else b"*-1\r\n")


def _encode_double(v, proto, out):
    text = format_double(v)
    if proto == 3:
        out.append(b",%b\r\n" % text)
    else:
        out.append(b"$%d\r\n%b\r\n" % (len(text), text))


def _encode_error(v, proto, out):
    # (surrogateescape: an error text decoded from arbitrary bytes goes back as those bytes)
    out.append(b"-%b\r\n" % v.message.encode("utf-8", "surrogateescape"))


def _encode_verbatim(v, proto, out):
    if proto == 3:
        out.append(b"=%d\r\ntxt:%b\r\n" % (len(v) + 4, v))
    else:
        _encode_bulk(v, proto, out)


def _encode_big_number(v, proto, out):
    if proto == 3:
        out.append(b"(%b\r\n" % v)
    else:
        _encode_bulk(v, proto, out)


def _encode_array(v, proto, out):
    count = len(v)
    out.append(_ARRAY_HEADS[count] if count < _TABLED else b"*%d\r\n" % count)
    if count > 4 and type(v[0]) is bytes and set(map(type, v)) == _ONLY_BYTES:
        # LRANGE, SMEMBERS, HGETALL ...: every element a plain bulk string (subclasses such as
        # Status are excluded by the exact type test), formatted in one pass.
        out.append(b"".join([b"$%d\r\n%b\r\n" % (len(item), item) for item in v]))
        return
    for item in v:
        kind = type(item)
        # Strings, integers and arrays called directly (a stream entry is [id, [field, value
        # ...]], EXEC and SCAN reply arrays of arrays): the lookup and Python call through
        # _ENCODERS cost more than the encoding of such an element (compiled, C calls).
        if kind is bytes:
            _encode_bulk(item, proto, out)
        elif kind is list:
            _encode_array(item, proto, out)
        elif kind is int:
            _encode_int(item, proto, out)
        else:
            _ENCODERS.get(kind, _encode_other)(item, proto, out)


def _encode_push(v, proto, out):
    out.append((b">%d\r\n" if proto == 3 else b"*%d\r\n") % len(v))
    for item in v:
        _ENCODERS.get(type(item), _encode_other)(item, proto, out)


def _encode_set(v, proto, out):
    out.append((b"~%d\r\n" if proto == 3 else b"*%d\r\n") % len(v))
    for item in v:
        _ENCODERS.get(type(item), _encode_other)(item, proto, out)


def _encode_map(v, proto, out):
    if proto == 3:
        out.append(b"%%%d\r\n" % len(v))
    else:
        out.append(b"*%d\r\n" % (2 * len(v)))
    for key, item in v.items():
        _ENCODERS.get(type(key), _encode_other)(key, proto, out)
        _ENCODERS.get(type(item), _encode_other)(item, proto, out)


def _encode_map_pairs(v, proto, out):
    if proto == 3:
        out.append(b"%%%d\r\n" % len(v))
    else:
        out.append(b"*%d\r\n" % (2 * len(v)))
    for key, item in v:
        _ENCODERS.get(type(key), _encode_other)(key, proto, out)
        _ENCODERS.get(type(item), _encode_other)(item, proto, out)


def _encode_replies(v, proto, out):
    for item in v:
        _ENCODERS.get(type(item), _encode_other)(item, proto, out)


def _encode_encoded(v, proto, out):
    out.append(v.data)


def _encode_other(v, proto, out):
    # Subclasses and less common types: walk the MRO once and remember the answer.
    for cls in type(v).__mro__:
        encoder = _ENCODERS.get(cls)
        if encoder is not None:
            _ENCODERS[type(v)] = encoder
            return encoder(v, proto, out)
    raise TypeError(f"cannot encode reply of type {type(v).__name__}")


_ENCODERS = {
    bytes: _encode_bulk,
    bytearray: _encode_bulk,
    memoryview: _encode_bulk,
    str: _encode_str,
    Status: _encode_status,
    int: _encode_int,
    bool: _encode_bool,
    type(None): _encode_none,
    _NullArray: _encode_null_array,
    float: _encode_double,
    RedisError: _encode_error,
    Verbatim: _encode_verbatim,
    BigNumber: _encode_big_number,
    list: _encode_array,
    tuple: _encode_array,
    Push: _encode_push,
    set: _encode_set,
    frozenset: _encode_set,
    OrderedSet: _encode_set,
    dict: _encode_map,
    MapPairs: _encode_map_pairs,
    Replies: _encode_replies,
    Encoded: _encode_encoded,
}


def encode_into(value, proto: int, out: list) -> None:
    """Append the encoding of one reply to `out` (a list of bytes chunks, joined by the caller)."""
    _ENCODERS.get(type(value), _encode_other)(value, proto, out)


def encode(value, proto: int = 2) -> bytes:
    out: list[bytes] = []
    _ENCODERS.get(type(value), _encode_other)(value, proto, out)
    return b"".join(out)


def encode_command(argv: list) -> bytes:
    """A command as a client sends it, an array of bulk strings: the AOF's records, the
    replication stream, requests to other servers. Arguments that are not bytes are sent as
    their text (an int as its digits)."""
    out = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        if type(arg) is not bytes:
            arg = bytes(arg) if isinstance(arg, (bytes, bytearray, memoryview)) else str(arg).encode()
        size = len(arg)
        out.append(_BULK_HEADS[size] if size < _TABLED else b"$%d\r\n" % size)
        out.append(arg)
        out.append(b"\r\n")
    return b"".join(out)
