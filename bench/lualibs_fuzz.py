"""Differential fuzzing of cmsgpack's and cjson's encoders and decoders: generated inputs
through EVAL on a real redis-server and on minired, replies and error texts compared.

    python bench/lualibs_fuzz.py [--seed N] [--count 3000] [--pure]

The compiled build runs these functions in C (minired/scripting/lualibs/native_*.pyx), the
uncompiled one in Lua (cmsgpack.lua, cjson.lua); both must answer as Redis does. Each round:

- generated Lua values through cmsgpack.pack;
- a generated Lua value, packed by Redis's own cmsgpack.pack, then cut short, a byte changed or
  several packed values joined (or a few random bytes), through cmsgpack.unpack, unpack_one and
  unpack_limit at generated offsets and limits;
- another generated Lua value (nested arrays and maps, holes, NaN/Inf, every kind of key,
  cjson.null, escapes) through cjson.encode under generated settings (sparse arrays, depth,
  precision, invalid numbers), the Lua state flushed first so settings never carry over;
- a generated JSON text (Redis's encoding of a generated value, cut or with a piece changed,
  or pieces of JSON and near-JSON joined at random) through cjson.decode, strict or not about
  numbers, its result shown with its keys in `next` order.

tests/scripting/test_lualibs.py is the short version in the suite. Exit status 1 on any
mismatch; a run is reproducible from its printed seed.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

import redis

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests.support.servers import MiniredProcess, RedisServer

STRING_PIECES = ["a", "\\1", "\\127", "/", '\\"', "\\\\", "\\n", "\\r", "\\t", "\\b", "\\f",
                 "\\0", "\\200", "\\255", "é", "x y"]
NUMBERS = ["0", "1", "-1", "0.5", "1e20", "-3.25", "2^40", "2^53", "2^63", "-2^63", "2^64",
           "1/0", "-1/0", "0/0", "1e-310", "123456.789", "-0.0", "127", "128", "255", "256",
           "65535", "65536", "2^31", "-2^31-1", "0.1", "1/3"]
INVALID_NUMBER_MODES = ["true", "false", '"null"']


def lua_value(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randrange(10 if depth < 4 else 5)
    if kind == 0:
        return rng.choice(NUMBERS)
    if kind == 1:
        return '"' + "".join(rng.choice(STRING_PIECES) for _ in range(rng.randrange(0, 6))) + '"'
    if kind == 2:
        return rng.choice(["true", "false", "cjson.null", "nil"])
    if kind == 3:
        return str(rng.randrange(-200, 70000))
    if kind == 4:
        return f'string.rep("x", {rng.choice([0, 1, 31, 32, 33, 255, 256, 65536])})'
    if kind in (5, 6):
        items = [lua_value(rng, depth + 1) for _ in range(rng.randrange(0, 6 if rng.random() < .9 else 20))]
        return "{" + ", ".join(items) + "}"
    items = []
    for _ in range(rng.randrange(0, 6)):
        # (no table for a key: its place in the table follows its address, see SHOW)
        key = rng.choice([f'"k{rng.randrange(5)}"', str(rng.randrange(1, 30)), "1.5", "-1", "0",
                          "2^31", "2^70", "1/0", "true", '""'])
        items.append(f"[{key}] = {lua_value(rng, depth + 1)}")
    return "{" + ", ".join(items) + "}"


def encode_settings(rng: random.Random) -> str:
    calls = []
    for _ in range(rng.randrange(0, 3)):
        calls.append(rng.choice([
            f"cjson.encode_sparse_array({rng.choice(['true', 'false'])}, {rng.randrange(0, 4)}, "
            f"{rng.randrange(0, 12)})",
            f"cjson.encode_max_depth({rng.randrange(1, 6)})",
            f"cjson.encode_number_precision({rng.randrange(1, 15)})",
            f"cjson.encode_invalid_numbers({rng.choice(INVALID_NUMBER_MODES)})",
        ]))
    return " ".join(calls)


JSON_PIECES = ["{", "}", "[", "]", ",", ":", '"a"', '"', "\\", "\\u", "\\ud83d", "\\ude00",
               "1", "-", "0", ".", "e", "x", "true", "null", "fals", " ", "\n", "nan", "inf",
               "+", "1e999", "\0", '"\\n"', "0x1p3", "é"]
# Shows a decoded value whole: numbers to 17 digits, a table's entries in its own `next` order,
# which the decoders' sequence of stores decides - except in a table with a table for a key,
# whose place in the hash part follows the key's address, different in every process (Redis's
# own runs differ too): its entries are sorted.
SHOW = ("local function show(v, d) d = d or 0 if d > 40 then return '...' end "
        "if type(v) == 'table' then local out, sort = {}, false for k, x in pairs(v) do "
        "sort = sort or type(k) == 'table' "
        "out[#out + 1] = show(k, d + 1) .. '=' .. show(x, d + 1) end "
        "if sort then table.sort(out) end "
        "return '{' .. table.concat(out, ',') .. '}' "
        "elseif type(v) == 'number' then return string.format('%.17g', v) "
        "elseif type(v) == 'string' then return string.format('%q', v) "
        "else return tostring(v) end end ")
UNPACK_SCRIPTS = [SHOW + script for script in [
    "local r = {pcall(cmsgpack.unpack, ARGV[1])} return show(r)",
    "local r = {pcall(cmsgpack.unpack_one, ARGV[1], tonumber(ARGV[2]))} return show(r)",
    "local r = {pcall(cmsgpack.unpack_limit, ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[2]))} "
    "return show(r)",
    # cmsgpack.pack walks tables in `next` order: not comparable where a key is a table.
    "local t = {cmsgpack.unpack(ARGV[1])} if show(t):find('{{', 1, true) "
    "or show(t):find(',{', 1, true) then return 'a table for a key' end "
    "return cmsgpack.pack(unpack(t))",
]]
DECODE_SCRIPT = SHOW + "local ok, v = pcall(cjson.decode, ARGV[1]) return ok and show(v) or v"


def json_text(rng: random.Random, real: redis.Redis) -> bytes:
    if rng.random() < 0.4:
        return "".join(rng.choice(JSON_PIECES) for _ in range(rng.randrange(1, 14))).encode()
    kind, text = run(real, f"return cjson.encode({lua_value(rng)})", [])
    if kind != "reply":
        return b"[]"
    if rng.random() < 0.3:
        text = text[:rng.randrange(0, len(text) + 1)]
    if rng.random() < 0.3 and text:
        i = rng.randrange(len(text))
        text = text[:i] + rng.choice(JSON_PIECES).encode() + text[i + 1:]
    return text


def run(client: redis.Redis, script: str, args: list) -> tuple:
    try:
        return ("reply", client.eval(script, 0, *args))
    except redis.ResponseError as exc:
        return ("error", str(exc).split(" script: ")[0])


def packed_blob(rng: random.Random, real: redis.Redis) -> bytes:
    if rng.random() < 0.15:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12)))
    values = ", ".join(lua_value(rng) for _ in range(rng.randrange(1, 4)))
    kind, blob = run(real, f"return cmsgpack.pack({values})", [])
    if kind != "reply":
        return b""
    if rng.random() < 0.4:
        blob = blob[:rng.randrange(0, len(blob) + 1)]
    if rng.random() < 0.25 and blob:
        i = rng.randrange(len(blob))
        blob = blob[:i] + bytes([rng.randrange(256)]) + blob[i + 1:]
    return blob


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--count", type=int, default=3000, help="rounds")
    parser.add_argument("--pure", action="store_true",
                        help="run minired uncompiled (MINIRED_PURE_PYTHON=1)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"seed {seed}" + (" (pure)" if args.pure else ""), flush=True)
    rng = random.Random(seed)
    if args.pure:
        os.environ["MINIRED_PURE_PYTHON"] = "1"
    mismatches = cases = 0
    started = time.monotonic()
    with RedisServer() as real_server, MiniredProcess() as mini_server:
        real = redis.Redis(port=real_server.port)
        mini = redis.Redis(port=mini_server.port)
        for _ in range(args.count):
            blob = packed_blob(rng, real)
            jobs = [(script, [blob, str(rng.randrange(-2, len(blob) + 3)),
                              str(rng.randrange(-1, 4))]) for script in UNPACK_SCRIPTS]
            jobs.append((f"{encode_settings(rng)} return {{pcall(cjson.encode, {lua_value(rng)})}}", []))
            values = ", ".join(lua_value(rng) for _ in range(rng.randrange(1, 4)))
            jobs.append((f"return {{pcall(cmsgpack.pack, {values})}}", []))
            strict = "cjson.decode_invalid_numbers(false) " if rng.random() < 0.3 else ""
            depth = f"cjson.decode_max_depth({rng.randrange(1, 5)}) " if rng.random() < 0.1 else ""
            jobs.append((strict + depth + DECODE_SCRIPT, [json_text(rng, real)]))
            for script, script_args in jobs:
                for client in (real, mini):
                    client.script_flush()
                cases += 1
                expected, got = run(real, script, script_args), run(mini, script, script_args)
                if expected != got:
                    mismatches += 1
                    if mismatches <= 10:
                        print(f"MISMATCH {script[:200]}\n  args:    {script_args!r:.200}\n"
                              f"  redis:   {expected!r:.300}\n  minired: {got!r:.300}", flush=True)
            if not mini.ping():
                print("minired stopped answering")
                return 1
    print(f"seed {seed}: {cases} cases in {time.monotonic() - started:.0f} s, "
          f"{mismatches} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
