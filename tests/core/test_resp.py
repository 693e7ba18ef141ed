"""The sans-IO RESP core, tested on bytes alone: no sockets, no server."""
from __future__ import annotations

import contextlib
import importlib.util
import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minired.protocol import resp
from minired.protocol.errors import RedisError
from minired.protocol.resp import (
    NULL_ARRAY,
    ProtocolError,
    Push,
    Replies,
    RequestParser,
    Status,
    Verbatim,
    encode,
    encode_command,
    parse_canonical,
)


def multibulk(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args)


@contextlib.contextmanager
def hiredis_first(use: bool):
    """feed_and_parse tries hiredis first in the uncompiled build and the canonical scanner
    first in the compiled one; the tests run both, whichever build is installed."""
    saved = resp._USE_HIREDIS
    resp._USE_HIREDIS = use and resp._HiredisReader is not None
    try:
        yield
    finally:
        resp._USE_HIREDIS = saved


def parse_all(data: bytes, **limits) -> tuple[list, RedisError | None]:
    """Parse one read every way the server may (feed+parse, and the feed_and_parse shortcut
    with and without hiredis); they must agree."""
    parser = RequestParser(**limits)
    parser.feed(data)
    commands = parser.parse()
    error = parser.error.reply if parser.error else None
    for use_hiredis in (True, False):
        with hiredis_first(use_hiredis):
            shortcut = RequestParser(**limits)
            assert shortcut.feed_and_parse(data) == commands
            assert (shortcut.error.reply if shortcut.error else None) == error
    return commands, error


_RESPISH = st.lists(st.sampled_from([
    b"*", b"$", b"+", b":", b"-", b"_", b"%", b"~", b",", b"#", b"=", b"(", b"|", b"!", b">",
    b"\r\n", b"\n", b"0", b"1", b"2",
    b"3", b"-1", b"01", b"+1", b" ", b"PING", b"a", b"\x00", b"*1\r\n$4\r\nPING\r\n",
    b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"]), max_size=30).map(b"".join)


@pytest.mark.parametrize("element", [b"+PING\r\n", b"=8\r\ntxt:PING\r\n", b"(123\r\n", b"|1\r\n+a\r\n+b\r\n$4\r\nPING\r\n"])
def test_elements_hiredis_reads_as_bytes_are_not_bulk_strings(element):
    """Redis wants '$' before every argument; hiredis would hand these back as bytes."""
    commands, error = parse_all(b"*1\r\n" + element)
    assert commands == []
    assert error is not None and error.message.startswith("ERR Protocol error: expected '$', got")


@pytest.mark.parametrize("use_hiredis", [True, False], ids=["hiredis", "scanner"])
@given(st.lists(_RESPISH, min_size=1, max_size=4))
@settings(max_examples=400)
def test_shortcut_and_general_parser_agree_on_junk(use_hiredis, reads):
    fast, slow = RequestParser(), RequestParser()
    for data in reads:
        if not data:
            continue
        with hiredis_first(use_hiredis):
            got_fast = fast.feed_and_parse(data)
        slow.feed(data)
        assert got_fast == slow.parse()
        assert (fast.error.reply if fast.error else None) == (slow.error.reply if slow.error else None)
        assert fast.buffered == slow.buffered



def _general_multibulk(buf: bytes, max_bulk: int, max_multibulk: int) -> tuple[list, list[int]]:
    """The general parser alone over buf's leading multibulk commands: the commands and the
    offset after each (index 0: the start)."""
    parser = RequestParser(max_bulk_len=max_bulk, max_multibulk=max_multibulk)
    commands, offsets = [], [0]
    try:
        while offsets[-1] < len(buf) and buf[offsets[-1]] == 42:
            end = parser._parse_multibulk(buf, offsets[-1], len(buf), commands)
            if end < 0:
                break
            offsets.append(end)
    except ProtocolError:
        pass
    return commands, offsets


def _source_resp():
    """resp.py loaded from source, whether or not the installed one is compiled."""
    path = pathlib.Path(resp.__file__).with_name("resp.py")
    spec = importlib.util.spec_from_file_location("minired._resp_from_source", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SOURCE_RESP = _source_resp()

_CANONICALISH = st.lists(st.one_of(
    _RESPISH,
    st.lists(st.binary(max_size=12), min_size=1, max_size=4).map(lambda args: multibulk(*args)),
    st.sampled_from([b"*1\r\n$01\r\nx\r\n", b"*1\r\n$-0\r\n\r\n", b"*2\r\n$1\r\nx\r\n",
                     b"*1\r\n$1\r\nxy\r\n", b"*1\r\n$3\r\nx\r\n\r\n", b"*1\r\n$0\r\n\r\n",
                     b"*99999999999999999999\r\n", b"*1\r\n$99999999999999999999\r\n",
                     b"*1\r\n$1\r\nx\n\r", b"*1\n$1\r\nx\r\n", b"*1\r\n$1 \r\nx\r\n"]),
), max_size=6).map(b"".join)


@given(_CANONICALISH, st.sampled_from([0, 1, 3, 512 * 1024 * 1024]), st.sampled_from([1, 2, 2**31 - 1]))
@settings(max_examples=600)
def test_canonical_scanner_is_a_prefix_of_the_general_parse(data, max_bulk, max_multibulk):
    """parse_canonical may stop early but never disagrees: its commands are the general
    parser's first ones, it stops where they end, and compiled or not it answers the same."""
    out: list = []
    stop = parse_canonical(data, out, max_bulk, max_multibulk)
    general, offsets = _general_multibulk(data, max_bulk, max_multibulk)
    assert out == general[:len(out)]
    assert stop == offsets[len(out)]
    source_out: list = []
    assert _SOURCE_RESP.parse_canonical(data, source_out, max_bulk, max_multibulk) == stop
    assert source_out == out


def test_canonical_scanner_takes_whole_canonical_commands_only():
    whole = multibulk(b"SET", b"k", b"a\r\nb") + multibulk(b"PING")
    out: list = []
    assert parse_canonical(whole + b"*2\r\n$3\r\nGET", out, 100, 100) == len(whole)
    assert out == [[b"SET", b"k", b"a\r\nb"], [b"PING"]]
    for odd in (b"*01\r\n$4\r\nPING\r\n", b"*1\r\n$+4\r\nPING\r\n", b"*1\r\n$4\r\nPINGxx",
                b"PING\r\n", b"*0\r\n", b"*-1\r\n"):
        assert parse_canonical(odd, out, 100, 100) == 0
    assert parse_canonical(multibulk(b"GET", b"k"), out, 0, 100) == 0  # over proto-max-bulk-len
    assert parse_canonical(multibulk(b"GET", b"k"), out, 100, 1) == 0  # over the multibulk limit


# --- requests ---------------------------------------------------------------------------------

def test_multibulk_and_inline_pipeline():
    data = multibulk(b"SET", b"k", b"v") + b"PING\r\n" + multibulk(b"GET", b"k") + b"ECHO x\n"
    commands, error = parse_all(data)
    assert error is None
    assert commands == [[b"SET", b"k", b"v"], [b"PING"], [b"GET", b"k"], [b"ECHO", b"x"]]


def test_binary_safe_bulk():
    value = bytes(range(256)) + b"\r\n\r\n"
    commands, _ = parse_all(multibulk(b"SET", b"k", value))
    assert commands == [[b"SET", b"k", value]]


def test_empty_lines_and_empty_multibulk_are_skipped():
    commands, error = parse_all(b"\r\n\n*0\r\n*-1\r\nPING\r\n")
    assert error is None
    assert commands == [[b"PING"]]


@given(st.lists(st.lists(st.binary(max_size=40), min_size=1, max_size=6), min_size=1, max_size=8),
       st.data())
@settings(max_examples=150)
def test_any_split_of_a_pipeline_parses_the_same(commands, data):
    stream = b"".join(multibulk(*cmd) for cmd in commands)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    parser = RequestParser()
    seen = []
    previous = 0
    for cut in cuts + [len(stream)]:
        parser.feed(stream[previous:cut])
        seen.extend(parser.parse())
        previous = cut
    assert parser.error is None
    assert seen == commands
    assert parser.buffered == 0


@given(st.lists(st.binary(max_size=1100), min_size=1, max_size=6))  # (past the tabled heads)
def test_encode_command_is_what_a_client_sends(argv):
    assert encode_command(argv) == multibulk(*argv)
    parser = RequestParser()
    parser.feed(encode_command(argv))
    assert parser.parse() == [argv]


def test_encode_command_sends_other_arguments_as_their_text():
    assert encode_command([b"SET", 5, "\u00e9", bytearray(b"v"), memoryview(b"w")]) == \
        multibulk(b"SET", b"5", "\u00e9".encode(), b"v", b"w")


def test_byte_by_byte_feeding():
    stream = multibulk(b"LPUSH", b"queue", b"x" * 100) + b"PING\r\n"
    parser = RequestParser()
    seen = []
    for i in range(len(stream)):
        parser.feed(stream[i:i + 1])
        seen.extend(parser.parse())
    assert seen == [[b"LPUSH", b"queue", b"x" * 100], [b"PING"]]


@pytest.mark.parametrize("line,expected", [
    (b'SET "a b" c', [b"SET", b"a b", b"c"]),
    (b"SET 'it''s' x", None),
    (b'SET k "\\x41\\x42\\n"', [b"SET", b"k", b"AB\n"]),
    (b"SET k 'a\\'b'", [b"SET", b"k", b"a'b"]),
    (b'SET k "unterminated', None),
    (b'SET k "a"b', None),
    (b"  PING   ", [b"PING"]),
    (b'ECHO ""', [b"ECHO", b""]),
])
def test_inline_quoting_like_sdssplitargs(line, expected):
    commands, error = parse_all(line + b"\r\n")
    if expected is None:
        assert error == RedisError("ERR Protocol error: unbalanced quotes in request")
    else:
        assert error is None and commands == [expected]


@pytest.mark.parametrize("data,message", [
    (b"*x\r\n", "ERR Protocol error: invalid multibulk length"),
    (b"*2147483648\r\n", "ERR Protocol error: invalid multibulk length"),  # past INT_MAX, as Redis 7
    (b"*2\r\n$3\r\nGET\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"),
    (b"*1\r\n$-5\r\n", "ERR Protocol error: invalid bulk length"),
    (b"*1\r\n$abc\r\n", "ERR Protocol error: invalid bulk length"),
    (b"*1\r\n$600000000\r\n", "ERR Protocol error: invalid bulk length"),
    (b"*1" + b"1" * 70000, "ERR Protocol error: too big mbulk count string"),
    (b"*1\r\n$" + b"1" * 70000, "ERR Protocol error: too big bulk count string"),
    (b"A" * 70000, "ERR Protocol error: too big inline request"),
])
def test_protocol_errors_match_redis(data, message):
    commands, error = parse_all(data)
    assert commands == []
    assert error == RedisError(message)


def test_commands_before_a_protocol_error_still_run():
    commands, error = parse_all(b"PING\r\n" + multibulk(b"ECHO", b"a") + b"*x\r\n")
    assert commands == [[b"PING"], [b"ECHO", b"a"]]
    assert error is not None


def test_large_length_header_allocates_nothing_before_the_data():
    parser = RequestParser()
    parser.feed(b"*1\r\n$500000000\r\n")
    assert parser.parse() == []
    assert parser.error is None
    assert parser.buffered == len(b"*1\r\n$500000000\r\n")


def test_configured_bulk_limit():
    _, error = parse_all(b"*1\r\n$11\r\nhello world\r\n", max_bulk_len=10)
    assert error == RedisError("ERR Protocol error: invalid bulk length")


def test_a_large_bulk_in_many_chunks_is_assembled_once():
    value = b"v" * 1_000_000
    stream = multibulk(b"SET", b"k", value)
    parser = RequestParser()
    seen = []
    for i in range(0, len(stream), 4096):
        parser.feed(stream[i:i + 4096])
        seen.extend(parser.parse())
    assert seen == [[b"SET", b"k", value]]


# --- replies ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value,resp2,resp3", [
    (b"abc", b"$3\r\nabc\r\n", b"$3\r\nabc\r\n"),
    ("é", b"$2\r\n\xc3\xa9\r\n", b"$2\r\n\xc3\xa9\r\n"),
    (42, b":42\r\n", b":42\r\n"),
    (-1, b":-1\r\n", b":-1\r\n"),
    (None, b"$-1\r\n", b"_\r\n"),
    (NULL_ARRAY, b"*-1\r\n", b"_\r\n"),
    (True, b":1\r\n", b"#t\r\n"),
    (1.5, b"$3\r\n1.5\r\n", b",1.5\r\n"),
    (3.0, b"$1\r\n3\r\n", b",3\r\n"),
    (float("inf"), b"$3\r\ninf\r\n", b",inf\r\n"),
    (float("-inf"), b"$4\r\n-inf\r\n", b",-inf\r\n"),
    (Status(b"OK"), b"+OK\r\n", b"+OK\r\n"),
    (RedisError("ERR boom"), b"-ERR boom\r\n", b"-ERR boom\r\n"),
    ([b"a", 1, None], b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", b"*3\r\n$1\r\na\r\n:1\r\n_\r\n"),
    ({b"k": b"v"}, b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n", b"%1\r\n$1\r\nk\r\n$1\r\nv\r\n"),
    ({b"m"}, b"*1\r\n$1\r\nm\r\n", b"~1\r\n$1\r\nm\r\n"),
    (Push([b"message", b"c", b"x"]), b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nx\r\n",
     b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nx\r\n"),
    (Verbatim(b"a=1"), b"$3\r\na=1\r\n", b"=7\r\ntxt:a=1\r\n"),
    (Replies([1, 2]), b":1\r\n:2\r\n", b":1\r\n:2\r\n"),
    ([], b"*0\r\n", b"*0\r\n"),
])
def test_reply_encoding(value, resp2, resp3):
    assert encode(value, 2) == resp2
    assert encode(value, 3) == resp3


def test_error_text_is_always_one_line():
    assert encode(RedisError("ERR line one\nline two\r\nthree"), 2) == b"-ERR line one line two three\r\n"


def test_nested_structures():
    value = [[b"a", [1, {b"x": None}]], NULL_ARRAY]
    assert encode(value, 3) == b"*2\r\n*2\r\n$1\r\na\r\n*2\r\n:1\r\n%1\r\n$1\r\nx\r\n_\r\n_\r\n"


def test_double_formatting_follows_redis_7_0():
    assert resp.format_double(0.1) == b"0.10000000000000001"
    assert resp.format_double(-0.0) == b"-0"  # ZINCRBY z -0 new-member replies "-0"
    assert resp.format_double(3.0) == b"3"
    assert resp.format_double(1e16) == b"10000000000000000"
    assert resp.format_double(1e17) == b"1e+17"
    assert resp.format_double(1e20) == b"1e+20"


@given(st.lists(st.lists(st.binary(max_size=40), min_size=1, max_size=6), min_size=1, max_size=8),
       st.data())
@settings(max_examples=150)
@pytest.mark.parametrize("use_hiredis", [True, False], ids=["hiredis", "scanner"])
def test_feed_and_parse_matches_feed_then_parse(use_hiredis, commands, data):
    stream = b"".join(multibulk(*cmd) for cmd in commands) + data.draw(st.sampled_from(
        [b"", b"PING\r\n", b"*2\r\n$3\r\nGET", b"*x\r\n"]))
    cuts = sorted(data.draw(st.lists(st.integers(1, len(stream)), max_size=6)))
    fast, slow = RequestParser(), RequestParser()
    seen_fast, seen_slow = [], []
    previous = 0
    for cut in cuts + [len(stream)]:
        if cut == previous:
            continue
        piece = stream[previous:cut]
        with hiredis_first(use_hiredis):
            seen_fast.extend(fast.feed_and_parse(piece))
        slow.feed(piece)
        seen_slow.extend(slow.parse())
        previous = cut
    assert seen_fast == seen_slow
    assert (fast.error is None) == (slow.error is None)
    assert fast.buffered == slow.buffered
