"""Differential tests: minired's cjson/cmsgpack/bit/struct against Redis 7.0's.

Every snippet is a Lua chunk that ``return``s a value.  It runs (a) in a lupa
runtime with our libraries installed, its result converted the way Redis
converts a Lua value to a RESP2 reply, and (b) in a real redis-server through
EVAL.  Errors are compared on their inner text: Redis wraps them as
``ERR user_script:1: <text> script: <sha>, on @user_script:1.``.
"""
from __future__ import annotations

import math
import re

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from lupa import lua51

from minired.scripting.lualibs import install_libraries
from tests.support.servers import RedisServer

HYPOTHESIS = settings(max_examples=120)


# ---------------------------------------------------------------- harness --

@pytest.fixture(scope="session")
def real_redis():
    with RedisServer() as server:
        client = redis.Redis(port=server.port, protocol=2)
        yield client
        client.close()


def new_runtime() -> lua51.LuaRuntime:
    lua = lua51.LuaRuntime(register_eval=False, register_builtins=False,
                           unpack_returned_tuples=True, encoding=None)
    install_libraries(lua, lua.globals())
    return lua


@pytest.fixture(scope="session")
def runtime():
    return new_runtime()


class Failed(Exception):
    pass


def _lua_type(value) -> str:
    return lua51.lua_type(value) or "python"


def to_resp2(value):
    """Lua -> RESP2 as Redis does it (integers truncated, arrays cut at nil)."""
    if value is None or value is False:
        return None
    if value is True:
        return 1
    if isinstance(value, bytes):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or not -2**63 <= value < 2**63):
            return -2**63  # (long long) of an out-of-range double on x86-64
        return int(value)
    kind = _lua_type(value)
    if kind == "table":
        err = value[b"err"]
        if isinstance(err, bytes):
            raise Failed(err)
        ok = value[b"ok"]
        if isinstance(ok, bytes):
            return ok
        out = []
        i = 1
        while value[i] is not None:
            out.append(to_resp2(value[i]))
            i += 1
        return out
    return None  # userdata (cjson.null), functions...


_REDIS_ERR = re.compile(rb"^(?:ERR )?(.*?)(?: script: [0-9a-f]{40}, on @user_script:\d+\.)?$", re.S)
_POSITION = re.compile(rb"^user_script:\d+: ")


def inner_error(message: bytes, keep_position: bool = False) -> bytes:
    text = _REDIS_ERR.match(message).group(1)
    return text if keep_position else _POSITION.sub(b"", text)


def run_local(lua, code: str):
    chunk = lua.compile(code.encode(), name=b"=user_script")
    ok, value = lua.execute("local f = ... ; local ok, v = pcall(f) ; return ok, v", chunk)
    if not ok:
        return ("err", value if isinstance(value, bytes) else repr(value).encode())
    try:
        return ("ok", to_resp2(value))
    except Failed as exc:
        return ("err", exc.args[0])


def run_redis(client, code: str):
    try:
        return ("ok", client.eval(code, 0))
    except redis.ResponseError as exc:
        return ("err", str(exc).encode())


def both(client, lua, code: str, keep_position: bool = False):
    ours, theirs = run_local(lua, code), run_redis(client, code)
    if ours[0] == "err":
        ours = ("err", inner_error(ours[1], keep_position))
    if theirs[0] == "err":
        theirs = ("err", inner_error(theirs[1], keep_position))
    return ours, theirs


def same(client, lua, code: str, keep_position: bool = False):
    ours, theirs = both(client, lua, code, keep_position)
    assert ours == theirs, code
    return ours


def lua_string(data: bytes) -> str:
    """A Lua literal for arbitrary bytes."""
    return '"' + "".join(f"\\{b}" for b in data) + '"'


def lua_number(x: float) -> str:
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "(0/0)"
    if math.isinf(x):
        return "(1/0)" if x > 0 else "(-1/0)"
    return repr(x)


def lua_literal(v) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return lua_number(v)
    if isinstance(v, bytes):
        return lua_string(v)
    if isinstance(v, list):
        return "{" + ",".join(lua_literal(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ",".join(f"[{lua_literal(k)}]={lua_literal(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def hexed(expr: str) -> str:
    """Lua code returning the hex dump of the string `expr` evaluates to."""
    return f"return (string.gsub({expr}, '.', function(c) return string.format('%02x', c:byte()) end))"


# ---------------------------------------------------------------- cjson --

@pytest.mark.parametrize("literal", [
    "{1,2,3}", "{}", "{a=1}", "{{},{{}}}", "'x/y\"z\\\\'", "'\\0\\1\\31\\127\\128\\255'",
    "'\\b\\f\\n\\r\\t'", "123", "-0.0", "0.1", "1/3", "1e300", "-1e-300", "2^53", "2^63",
    "123456789012345678", "3.14159265358979", "true", "false", "nil", "cjson.null",
    "{1,nil,3}", "{[1]=1,[2]=2,[4]=4}", "{[1]=1,[20]=2}", "{[1.5]=1}", "{[0]=1}", "{[-1]=1}",
    "{[2^31]=1}", "{[1]=1,[2^31]=2}", "{[3]=1}", "{true}", "{a={b={c={}}}}",
    "{1,'two',{three=3}}", "{[1]=cjson.null}",
])
def test_encode_matches_redis(real_redis, runtime, literal):
    same(real_redis, runtime, f"return cjson.encode({literal})")


@pytest.mark.parametrize("literal", [
    "function() end", "1/0", "-1/0", "0/0", "{[true]=1}", "{[{}]=1}", "{f=function() end}",
    "{[1]=1,[12]=2}", "{[1/0]=1}", "coroutine.create(function() end)",
])
def test_encode_errors_match_redis(real_redis, runtime, literal):
    kind, _ = same(real_redis, runtime, f"return cjson.encode({literal})")
    assert kind == "err"


def test_encode_argument_count_and_depth(real_redis, runtime):
    for code in [
        "return cjson.encode()",
        "return cjson.encode(1, 2)",
        "local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return cjson.encode(t)",
        "local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end return #cjson.encode(t)",
        "local t = {} t[1] = t return cjson.encode(t)",
    ]:
        same(real_redis, runtime, code)


@pytest.mark.parametrize("nest", [
    "c[1] = {} c = c[1]", "c.a = {} c = c.a", "c.a = {1, {}} c = c.a[2]"])
def test_encode_stack_limit(real_redis, runtime, nest):
    """Past encode_max_depth, nesting ends where the C encoder's lua_checkstack fails: arrays
    hold one stack slot per level, objects two."""
    try:
        for depth in (3996, 3997, 3998, 3999, 7996, 7997, 7998):
            same(real_redis, runtime,
                 f"cjson.encode_max_depth(100000) local t = {{}} local c = t "
                 f"for i = 1, {depth} do {nest} end return #cjson.encode(t)")
    finally:  # (the runtime and the server are shared: back to the default)
        same(real_redis, runtime, "return cjson.encode_max_depth(1000)")


@pytest.mark.parametrize("text", [
    '[1,2,3]', '{"a":1}', '"\\u00e9\\ud83d\\ude00\\/\\b"', '"\\u0000"', ' [ true , false , null ] ',
    '1e400', '-1e400', '0x10', '-0x1p3', '+1', '012', 'inf', '-Infinity', 'nan', '1.', '-.5',
    '12345678901234567890', '[1,2', '{"a" 1}', '{"a":1,}', '[1,]', '{1:2}', '"abc', '"\\x"',
    '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', 'tru', '', ' ', '[1]x', '1\\0garbage',
    '\\0[', '[\\0', '-', '{"a":{"b":[1,{"c":"d"}]}}', '[[[[[[]]]]]]', '0x', 'nul', '1e5e',
    '{"k":1,"k":2}', '"\\u12"', '-infinity', 'NaN(123)', '[1,2,3]   ', '"a\\u00"',
])
def test_decode_matches_redis(real_redis, runtime, text):
    lua_text = text.replace("\\0", "\0").encode()
    same(real_redis, runtime, f"return cjson.encode({{cjson.decode({lua_string(lua_text)})}})")


@pytest.mark.parametrize("open_, close", [("[", "]"), ('{"a":', "}"), ('[{"a":', "}]")])
def test_decode_stack_limit(real_redis, runtime, open_, close):
    """Past decode_max_depth, nesting ends where the C parser's lua_checkstack fails: arrays
    hold two stack slots a level, objects three."""
    try:
        for depth in (2666, 2667, 3998, 3999, 4000, 7998, 7999, 8000):
            same(real_redis, runtime,
                 f"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, "
                 f"string.rep('{open_}', {depth}) .. '1' .. string.rep('{close}', {depth})) "
                 f"return {{tostring(ok), type(e) == 'string' and e or type(e)}}")
    finally:  # (the runtime and the server are shared: back to the default)
        same(real_redis, runtime, "return cjson.decode_max_depth(1000)")


def test_decode_values_and_errors(real_redis, runtime):
    for code in [
        "return cjson.decode('[1,2,3]')",
        "return cjson.decode('12345678901234567890')",
        "return cjson.decode('-9223372036854775809')",
        "return tostring(cjson.decode('null') == cjson.null)",
        "return type(cjson.null)",
        "return cjson.decode(123)",
        "return cjson.decode({})",
        "return cjson.decode()",
        "return cjson.decode('a', 'b')",
        "return cjson.decode('\\0\\0')",
        "return cjson.decode(string.rep('[', 1001))",
        "return cjson.decode(string.rep('[', 1000))",
        "return #cjson.encode(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))",
        "return cjson.decode(string.rep('{\"a\":', 1001))",
    ]:
        same(real_redis, runtime, code)


def test_config_functions(real_redis, runtime):
    # Config lives in the runtime (and in Redis, in the server's Lua state),
    # so every snippet works on a fresh cjson.new() instance.
    for code in [
        "return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision()}",
        "return {cjson.encode_sparse_array()}",
        "return tostring(cjson.encode_keep_buffer())",
        "return tostring(cjson.encode_invalid_numbers())",
        "return tostring(cjson.decode_invalid_numbers())",
        "local c = cjson.new() c.encode_number_precision(3) return c.encode(1/3)",
        "local c = cjson.new() c.encode_invalid_numbers(true) return c.encode({1/0, -1/0, 0/0})",
        "local c = cjson.new() return c.encode_invalid_numbers('null') .. c.encode({1/0, 0/0})",
        "local c = cjson.new() c.decode_invalid_numbers(false) return c.decode('0x10')",
        "local c = cjson.new() c.decode_invalid_numbers(false) return c.decode('[inf]')",
        "local c = cjson.new() c.encode_sparse_array(true) return c.encode({[1]=1,[20]=2})",
        "local c = cjson.new() c.encode_sparse_array(false, 0) return c.encode({[1]=1,[20]=2})",
        "local c = cjson.new() return {c.encode_sparse_array('on', 5, 7)}",
        "local c = cjson.new() c.encode_max_depth(2) return c.encode({{{}}})",
        "local c = cjson.new() c.decode_max_depth(2) return c.decode('[[[]]]')",
        "local c = cjson.new() return c.encode_number_precision(15)",
        "local c = cjson.new() return c.encode_number_precision('x')",
        "local c = cjson.new() return c.encode_max_depth(0)",
        "local c = cjson.new() return c.encode_sparse_array(true, -1)",
        "local c = cjson.new() return c.encode_sparse_array(1)",
        "local c = cjson.new() return c.encode_keep_buffer('maybe')",
        "local c = cjson.new() return c.encode_max_depth(1, 2)",
        "return {cjson._NAME, cjson._VERSION}",
    ]:
        same(real_redis, runtime, code)


def test_error_positions_match_redis(real_redis, runtime):
    """Non-tail calls: Redis prefixes the caller's line; pcall from C does not."""
    for code in [
        "local x = cjson.decode('[') return x",
        "\n\nlocal x = cjson.encode(function() end)\nreturn x",
        "local ok, e = pcall(cjson.decode, '[') return e",
        "local ok, e = pcall(function() local x = cjson.decode('{') return x end) return e",
        "local ok, e = pcall(bit.tobit, 'x') return e",
        "local ok, e = pcall(function() local x = bit.band(1, {}) return x end) return e",
        "local f = bit.tobit local x = f('x') return x",
        "local x = struct.pack('i', 'x') return x",
        "local x = cmsgpack.unpack('\\196') return x",
        "local ok, e = pcall(function() local x = cmsgpack.pack() return x end) return e",
    ]:
        same(real_redis, runtime, code, keep_position=True)


json_scalars = st.one_of(
    st.integers(min_value=-2**53, max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.binary(max_size=20),
    st.booleans(),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=5),
        st.dictionaries(st.binary(min_size=1, max_size=6), inner, max_size=4),
    ),
    max_leaves=12,
)


@HYPOTHESIS
@given(value=json_values)
def test_encode_generated_values_match_redis(real_redis, runtime, value):
    same(real_redis, runtime, f"return cjson.encode({lua_literal(value)})")


def expected_after_json(v):
    """What decode(encode(v)) holds: numbers through %.14g, {} for empty tables."""
    if isinstance(v, bool) or isinstance(v, bytes):
        return v
    if isinstance(v, (int, float)):
        return float("%.14g" % v)
    if not v:
        return "empty"
    if isinstance(v, list):
        return [expected_after_json(x) for x in v]
    return {k: expected_after_json(x) for k, x in v.items()}


def from_lua(v):
    if lua51.lua_type(v) != "table":
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
    items = dict(v.items())
    if not items:
        return "empty"
    if sorted(items) == list(range(1, len(items) + 1)):
        return [from_lua(items[i]) for i in range(1, len(items) + 1)]
    return {k: from_lua(x) for k, x in items.items()}


@HYPOTHESIS
@given(value=json_values)
def test_json_round_trip(runtime, value):
    decoded = runtime.execute(f"return cjson.decode(cjson.encode({lua_literal(value)}))")
    assert from_lua(decoded) == expected_after_json(value)


@HYPOTHESIS
@given(text=st.text(alphabet='[]{}",:0123456789.eE+-xtruefalsn \\u/', max_size=16))
def test_decode_generated_text_matches_redis(real_redis, runtime, text):
    # Mostly malformed JSON: this exercises the tokenizer's error texts.
    same(real_redis, runtime,
         f"return cjson.encode({{cjson.decode({lua_string(text.encode())})}})")


# ------------------------------------------------------------- cmsgpack --

@pytest.mark.parametrize("args", [
    "0", "1", "127", "128", "255", "256", "65535", "65536", "2^32-1", "2^32", "2^53", "2^63",
    "-2^63", "-1", "-32", "-33", "-128", "-129", "-32768", "-32769", "-2^31", "-2^31-1",
    "-2^53", "-0.0", "0.5", "1.1", "1/3", "1e39", "-1e-45", "1e-320", "1/0", "-1/0", "0/0",
    "''", "string.rep('a', 31)", "string.rep('a', 32)", "string.rep('a', 255)",
    "string.rep('a', 256)", "string.rep('a', 65536)", "true", "false", "nil", "{}",
    "{1,2,3}", "{a=1}", "{1,nil,3}", "{[2]=2}", "{[1.5]=1}", "{[-1]=1}", "{[2^31]=1}",
    "{x={y={1,2,{z=true}}}}", "function() end", "cjson.null", "1, 2, 'three'",
    "{n=0/0}", "{[{1}]=2}",
])
def test_pack_bytes_match_redis(real_redis, runtime, args):
    same(real_redis, runtime, hexed(f"cmsgpack.pack({args})"))


def test_pack_nesting_and_large_containers(real_redis, runtime):
    for code in [
        hexed("(function() local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end "
              "return cmsgpack.pack(t) end)()"),
        "local t = {} for i = 1, 70000 do t[i] = i % 7 end local s = cmsgpack.pack(t) "
        "return {#s, s:sub(1, 5)}",
        "local t = {} for i = 1, 20 do t['k' .. i] = i end local s = cmsgpack.pack(t) "
        "return {#s, s:sub(1, 3)}",
        "local t = setmetatable({1, 2}, {__index = function() return 9 end}) "
        "return #cmsgpack.pack(t)",
        "return cmsgpack.pack()",
    ]:
        same(real_redis, runtime, code)


@pytest.mark.parametrize("data", [
    b"\x93\x01\x02\x03", b"\x81\xa1a\x01", b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\xcf\x80\x00\x00\x00\x00\x00\x00\x01", b"\xd3\x80\x00\x00\x00\x00\x00\x00\x00",
    b"\xcb\x40\x09\x21\xfb\x54\x44\x2d\x18", b"\xca\x3f\xc0\x00\x00", b"\xc0", b"\xc2", b"\xc3",
    b"\xd9\x03abc", b"\xda\x00\x01z", b"\xdb\x00\x00\x00\x01z", b"\xdc\x00\x01\x05",
    b"\xdd\x00\x00\x00\x01\x05", b"\xde\x00\x01\x01\x02", b"\xdf\x00\x00\x00\x01\x01\x02",
    b"\xd0\x80", b"\xd1\x80\x00", b"\xd2\x80\x00\x00\x00", b"\xcc\xff", b"\xcd\xff\xff",
    b"\xce\xff\xff\xff\xff", b"\xe0", b"\x01\x02\x03", b"\x93\x01", b"\xc4\x01a", b"\xc1",
    b"\xd9", b"\xa5ab", b"\x81\xc0\x01", b"\x92\xc0\x01", b"", b"\xcb\x7f\xf8\x00\x00\x00\x00\x00\x01",
])
def test_unpack_matches_redis(real_redis, runtime, data):
    s = lua_string(data)
    same(real_redis, runtime,
         f"local r = {{cmsgpack.unpack({s})}} for i = 1, select('#', cmsgpack.unpack({s})) do "
         f"if type(r[i]) == 'table' then r[i] = cjson.encode(r[i]) "
         f"elseif type(r[i]) == 'number' then r[i] = string.format('%.17g', r[i]) end end return r")


def test_unpack_one_and_limit(real_redis, runtime):
    stream = lua_string(b"\x01\xa2hi\x93\x01\x02\x03\xc3")
    for call in [
        f"cmsgpack.unpack_one({stream})", f"cmsgpack.unpack_one({stream}, 1)",
        f"cmsgpack.unpack_one({stream}, 9)", f"cmsgpack.unpack_one({stream}, 10)",
        f"cmsgpack.unpack_limit({stream}, 2)", f"cmsgpack.unpack_limit({stream}, 2, 4)",
        f"cmsgpack.unpack_limit({stream}, 0)", f"cmsgpack.unpack_limit({stream}, 10, 1)",
        f"cmsgpack.unpack_one({stream}, -1)", f"cmsgpack.unpack_one({stream}, 99)",
        f"cmsgpack.unpack_limit({stream}, -1)", f"cmsgpack.unpack_limit({stream})",
        f"cmsgpack.unpack_one({stream}, 'x')", "cmsgpack.unpack({})", "cmsgpack.unpack(5)",
    ]:
        same(real_redis, runtime,
             f"local r = {{{call}}} for i, v in ipairs(r) do "
             f"if type(v) == 'table' then r[i] = cjson.encode(v) end end return r")


def test_unpack_too_many_values(real_redis, runtime):
    for count in (7998, 7999, 8000):
        for call in (f"cmsgpack.unpack(string.rep('\\1', {count}))",
                     f"cmsgpack.unpack(string.rep('\\1', {count}), 1, 2)",
                     f"cmsgpack.unpack_limit(string.rep('\\1', {count}), {count})",
                     f"cmsgpack.unpack_limit(string.rep('\\1', {count}), {count + 1}, 2)"):
            same(real_redis, runtime, f"return select('#', {call})")


def test_unpack_nesting_limit(real_redis, runtime):
    """Arrays nest two stack slots a level, maps one or two (key, then value)."""
    for depth in (3998, 3999, 4000, 7998, 7999, 8000):
        for prefix, last in (("\\145", "\\1"), ("\\129\\1", "\\2"),
                             ("\\129\\161a", "\\2")):
            same(real_redis, runtime,
                 f"local ok, e = pcall(cmsgpack.unpack, string.rep('{prefix}', {depth}) .. "
                 f"'{last}') return {{tostring(ok), type(e) == 'string' and e or type(e)}}")


pack_values = st.recursive(
    st.one_of(st.integers(min_value=-2**63, max_value=2**63), st.floats(), st.binary(max_size=40),
              st.booleans()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.binary(min_size=1, max_size=4), st.integers(-3, 3)),
                        inner, max_size=4),
    ),
    max_leaves=10,
)


@HYPOTHESIS
@given(value=pack_values)
def test_pack_generated_values_match_redis(real_redis, runtime, value):
    same(real_redis, runtime, hexed(f"cmsgpack.pack({lua_literal(value)})"))


def lua_shape(v):
    """A Lua value as comparable Python data (NaN made equal to itself)."""
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if lua51.lua_type(v) == "table":
        return {lua_shape(k): lua_shape(x) for k, x in v.items()}
    return v


@HYPOTHESIS
@given(value=pack_values)
def test_msgpack_round_trip(runtime, value):
    original, decoded = runtime.execute(
        f"local v = {lua_literal(value)} return v, cmsgpack.unpack(cmsgpack.pack(v))")
    assert lua_shape(decoded) == lua_shape(original)


@HYPOTHESIS
@given(data=st.binary(max_size=12))
def test_unpack_generated_bytes_match_redis(real_redis, runtime, data):
    same(real_redis, runtime,
         f"local ok, r = pcall(function() return {{cmsgpack.unpack({lua_string(data)})}} end) "
         "if not ok then return {err = r} end "
         "for i = 1, #r do r[i] = type(r[i]) == 'table' and 'table' or tostring(r[i]) end return r")


# ------------------------------------------------------------------ bit --

EDGE_NUMBERS = ["0", "1", "-1", "0.5", "1.5", "2.5", "-2.5", "2^31", "2^31-1", "-2^31", "2^32",
                "2^32+7", "-2^32-7", "2^51", "2^52+3.5", "2^53", "2^60+5", "1e20", "-1e300",
                "1/0", "-1/0", "0/0", "'0x10'", "' 12 '", "4294967295"]


@pytest.mark.parametrize("x", EDGE_NUMBERS)
def test_bit_unary_ops_match_redis(real_redis, runtime, x):
    same(real_redis, runtime,
         f"return {{bit.tobit({x}), bit.bnot({x}), bit.bswap({x}), bit.tohex({x}), "
         f"bit.tohex({x}, -3), bit.tohex({x}, 12), bit.tohex(1, {x})}}")


@pytest.mark.parametrize("x", EDGE_NUMBERS[:12])
@pytest.mark.parametrize("n", ["0", "1", "4", "31", "32", "33", "-1", "-31", "0.5"])
def test_bit_shift_ops_match_redis(real_redis, runtime, x, n):
    same(real_redis, runtime,
         f"return {{bit.lshift({x}, {n}), bit.rshift({x}, {n}), bit.arshift({x}, {n}), "
         f"bit.rol({x}, {n}), bit.ror({x}, {n})}}")


def test_bit_variadic_and_errors(real_redis, runtime):
    for code in [
        "return {bit.band(0xff, 0x0f, 0x3c), bit.bor(1, 2, 4, 8), bit.bxor(5, 3), bit.band(7)}",
        "return bit.band()", "return bit.band(1, 'x', {})", "return bit.tobit('abc')",
        "return bit.tobit()", "return bit.lshift(1)", "return bit.tohex(1, nil)",
        "return bit.tohex({})", "return bit.bor(1, nil)",
    ]:
        same(real_redis, runtime, code)


@HYPOTHESIS
@given(a=st.one_of(st.integers(-2**40, 2**40), st.floats(-1e16, 1e16)),
       b=st.integers(-64, 64))
def test_bit_generated_match_redis(real_redis, runtime, a, b):
    x, n = lua_number(a), lua_number(b)
    same(real_redis, runtime,
         f"return {{bit.tobit({x}), bit.band({x}, {n}), bit.bor({x}, {n}), bit.bxor({x}, {n}), "
         f"bit.lshift({x}, {n}), bit.rshift({x}, {n}), bit.arshift({x}, {n}), bit.rol({x}, {n}), "
         f"bit.ror({x}, {n}), bit.tohex({x}, {n}), bit.bswap({x})}}")


# --------------------------------------------------------------- struct --

@pytest.mark.parametrize("call", [
    "struct.pack('>i', -2)", "struct.pack('<I', 2^32-1)", "struct.pack('b', -1)",
    "struct.pack('B', 255)", "struct.pack('h', -300)", "struct.pack('>H', 65535)",
    "struct.pack('l', -2^53)", "struct.pack('>L', 2^63)", "struct.pack('L', 2^64)",
    "struct.pack('l', -2^64)", "struct.pack('L', 0/0)", "struct.pack('L', -1.7)",
    "struct.pack('i3', -1)", "struct.pack('>i16', -1)", "struct.pack('<I12', 2^40+3)",
    "struct.pack('T', 12)", "struct.pack('d', -0.0)", "struct.pack('>d', 1/3)",
    "struct.pack('f', 1/3)", "struct.pack('>f', 1e40)", "struct.pack('f', -0.0)",
    "struct.pack('d', 0/0)", "struct.pack('c5', 'hello world')", "struct.pack('c0', 'abc')",
    "struct.pack('s', 'abc')", "struct.pack('xbx', 1)", "struct.pack('!4 b i', 1, 2)",
    "struct.pack('!2 bhbd', 1, 2, 3, 4)", "struct.pack('!bd', 1, 2)", "struct.pack('!3 bi', 1, 2)",
    "struct.pack('<i>i', 1, 1)", "struct.pack('i', '12')", "struct.pack('c', 5)",
    "struct.pack('!8 b i3 h', 1, 2, 3)", "struct.pack(5)",
])
def test_struct_pack_matches_redis(real_redis, runtime, call):
    same(real_redis, runtime, hexed(call))


@pytest.mark.parametrize("call", [
    "struct.pack('i', 'x')", "struct.pack('i')", "struct.pack('c5', 'ab')", "struct.pack('z', 1)",
    "struct.pack('!3', 1)", "struct.pack('i33', 1)", "struct.pack('c99999999999', 'a')",
    "struct.pack('s', {})", "struct.pack()", "struct.size('s')", "struct.size('c0')",
    "struct.size('#')", "struct.unpack('i', 'ab')", "struct.unpack('s', 'abc')",
    "struct.unpack('c0', 'abc')", "struct.unpack('i', 'abcd', -5)", "struct.unpack()",
])
def test_struct_errors_match_redis(real_redis, runtime, call):
    kind, _ = same(real_redis, runtime, f"return {call}")
    assert kind == "err"


@pytest.mark.parametrize("fmt_data", [
    ("'>i'", "'\\255\\255\\255\\254'"), ("'<I'", "'\\255\\255\\255\\255'"),
    ("'bBhH'", "'\\255\\255\\1\\128\\1\\128'"), ("'>l'", "'\\128\\0\\0\\0\\0\\0\\0\\1'"),
    ("'<L'", "'\\255\\255\\255\\255\\255\\255\\255\\255'"), ("'i3'", "'\\255\\255\\255'"),
    ("'>i12'", "string.rep('\\255', 12)"), ("'<i16'", "'\\1' .. string.rep('\\0', 7) .. '\\128' .. string.rep('\\0', 7)"),
    ("'<i10'", "string.rep('\\0', 9) .. '\\128'"), ("'>I9'", "'\\1' .. string.rep('\\255', 8)"),
    ("'d'", "struct.pack('d', 1/3)"), ("'>f'", "struct.pack('>f', 0.1)"),
    ("'c3 c2'", "'abcde'"), ("'b c0'", "'\\3abcdef'"), ("'s s'", "'ab\\0cd\\0'"),
    ("'x b'", "'\\1\\2'"), ("'!4 b i'", "struct.pack('!4 b i', 1, 2)"), ("'T'", "string.rep('\\1', 8)"),
    ("'c1 c0'", "'2abc'"), ("'c0'", "'1abc'"),
])
def test_struct_unpack_matches_redis(real_redis, runtime, fmt_data):
    fmt, data = fmt_data
    same(real_redis, runtime,
         f"local r = {{struct.unpack({fmt}, {data})}} for i = 1, #r do "
         f"if type(r[i]) == 'number' then r[i] = string.format('%.17g', r[i]) end end return r")


def test_struct_unpack_init_and_size(real_redis, runtime):
    for code in [
        "return {struct.unpack('b', '\\1\\2\\3', 2)}",
        "return {struct.unpack('b', '\\1\\2\\3', 3)}",
        "return {struct.unpack('b', '\\1\\2\\3', 4)}",
        "return {struct.size('bhilTfdx'), struct.size('!bd'), struct.size('!4 b i3 c7'), struct.size('z')}",
    ]:
        same(real_redis, runtime, code)


@HYPOTHESIS
@given(fmt=st.sampled_from(["b", "B", "h", "H", "i", "I", "l", "L", "i3", "I5", ">i", ">I6", "<i7"]),
       value=st.one_of(st.integers(-2**64, 2**64), st.floats(allow_nan=False)))
def test_struct_generated_integers_match_redis(real_redis, runtime, fmt, value):
    same(real_redis, runtime,
         f"local s = struct.pack('{fmt}', {lua_number(value)}) "
         f"return {{s, string.format('%.17g', (struct.unpack('{fmt}', s)))}}")


@HYPOTHESIS
@given(value=st.floats(width=64))
def test_struct_generated_floats_match_redis(real_redis, runtime, value):
    same(real_redis, runtime,
         f"return {{struct.pack('<d>f', {lua_number(value)}, {lua_number(value)}), "
         f"string.format('%.17g', (struct.unpack('f', struct.pack('f', {lua_number(value)}))))}}")


# -------------------------------------------------------------- sandbox --

def test_library_tables_hold_only_lua_values(runtime):
    code = """
    local bad = {}
    for _, lib in ipairs({'cjson', 'cmsgpack', 'bit', 'struct'}) do
      for k, v in pairs(_G[lib]) do
        local t = type(v)
        if not (t == 'function' or t == 'string' or (lib == 'cjson' and k == 'null')) then
          bad[#bad + 1] = lib .. '.' .. k .. ':' .. t
        end
      end
    end
    return bad
    """
    assert run_local(runtime, code) == ("ok", [])


@pytest.mark.parametrize("probe", [
    "return cjson.encode.__globals__",
    "return cjson.encode.__call",
    "return getmetatable(cjson.encode)",
    "return tostring(cjson.null)",  # (its metatable, which prints it, is hidden by the sandbox)
    "return getmetatable(cjson.decode('[1]'))",
    "return getmetatable(cmsgpack.unpack('\\129\\161a\\1'))",
    "return getmetatable(bit.tobit(1))",
    "return (bit.tohex(1)).__class__",
    "return type(getmetatable(struct.pack('d', 1)).__index.format)",
    "local ok, e = pcall(bit.tobit, {}) return type(e)",
])
def test_escape_attempts_find_nothing_python(real_redis, runtime, probe):
    raw_ok, raw = runtime.execute(
        "local f = ... ; return pcall(f)", runtime.compile(probe.encode(), name=b"=user_script"))
    assert isinstance(raw, (bytes, int, float, bool, type(None))) or lua51.lua_type(raw) is not None
    same(real_redis, runtime, probe)


def test_library_internals_never_return_python_objects(runtime):
    # Every value the libraries hand back must be a plain Lua value.
    code = """
    local seen = {}
    local function check(v)
      local t = type(v)
      if t == 'userdata' and v ~= cjson.null then seen[#seen + 1] = 'userdata' end
      if t == 'table' then for k, x in pairs(v) do check(k) check(x) end end
    end
    check({cjson.decode('[1,{"a":null},"x"]')})
    check({cmsgpack.unpack(cmsgpack.pack({1, {a = 1.5}}, 'x', 2^40, -1.25))})
    check({struct.unpack('dfi', struct.pack('dfi', 1.5, 2.5, 3))})
    check({bit.tobit(1), bit.tohex(1), bit.band(1, 2)})
    for _, f in ipairs({function() cjson.decode('[') end, function() cmsgpack.unpack('\\196') end,
                        function() struct.pack('z') end, function() bit.tobit({}) end}) do
      local ok, err = pcall(f)
      if type(err) ~= 'string' then seen[#seen + 1] = 'error:' .. type(err) end
    end
    return seen
    """
    assert run_local(runtime, code) == ("ok", [])


def test_python_helper_failure_stays_a_lua_string():
    """A Python helper that fails must surface as a Lua error string."""
    from minired.scripting.lualibs.support import lua_safe

    lua = lua51.LuaRuntime(register_eval=False, register_builtins=False,
                           unpack_returned_tuples=True, encoding=None)
    guarded = lua_safe(lambda: 1 / 0)
    assert lua.execute("local f = ... ; local ok, r = pcall(f) ; return ok, r", guarded) == (True, None)


def test_scripts_replacing_globals_do_not_affect_libraries():
    lua = new_runtime()
    lua.execute("string.format = nil; string.gsub = nil; type = nil; pairs = nil; next = nil; "
                "tonumber = nil; math.floor = nil; table.concat = nil; error = nil; pcall = nil")
    assert lua.execute("return cjson.encode({a = {1, 2.5}})") == b'{"a":[1,2.5]}'
    assert lua.execute("return cmsgpack.pack(1.5)") == b"\xca\x3f\xc0\x00\x00"
