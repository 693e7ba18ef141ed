"""BITOP, BITFIELD and BITFIELD_RO compared with real Redis."""
import random

from hypothesis import given, settings
from hypothesis import strategies as st

# --- BITOP -----------------------------------------------------------------------------------


def test_bitop_operations(diff):
    diff.check("SET", "a", b"\xff\x0f\x00\xaa")
    diff.check("SET", "b", b"\x0f\xf0")
    diff.check("SET", "c", "12345")
    for operation in ("AND", "or", "Xor", "and", "OR", "XOR"):
        for sources in (["a"], ["a", "b"], ["b", "a"], ["a", "b", "c"], ["a", "missing"],
                        ["missing", "a"], ["a", "a"], ["c", "missing", "b"]):
            diff.check("BITOP", operation, "dest", *sources)
            diff.check("GET", "dest")
    for source in ("a", "b", "c", "missing"):
        diff.check("BITOP", "NOT", "dest", source)
        diff.check("GET", "dest")
    diff.check("BITOP", "not", "a", "a")  # in place
    diff.check("GET", "a")


def test_bitop_errors_and_destination(diff):
    diff.check("SET", "a", "abc")
    diff.check("RPUSH", "l", "x")
    diff.check("BITOP", "NOT", "dest", "a", "a")
    diff.check("BITOP", "NOT", "dest", "missing", "l")
    diff.check("BITOP", "NAND", "dest", "a")
    diff.check("BITOP", "", "dest", "a")
    diff.check("BITOP", "AND", "dest")
    diff.check("BITOP", "AND")
    diff.check("BITOP", "AND", "dest", "a", "l")
    diff.check("BITOP", "OR", "dest", "l", "missing")
    diff.check("EXISTS", "dest")
    diff.check("BITOP", "NOT", "l", "a")  # a destination of another type is replaced
    diff.check("TYPE", "l")
    diff.check("SET", "dest", "old", "EX", "100")
    diff.check("BITOP", "AND", "dest", "a", "a")
    diff.check("TTL", "dest")
    diff.check("HSET", "h", "f", "v")
    diff.check("BITOP", "XOR", "h", "missing", "missing2")  # nothing to store: deleted
    diff.check("EXISTS", "h")
    diff.check("SET", "empty", "")
    diff.check("SET", "dest", "x")
    diff.check("BITOP", "OR", "dest", "empty")
    diff.check("EXISTS", "dest")


def test_bitop_long_strings(diff):
    rng = random.Random(7)
    values = [bytes(rng.getrandbits(8) for _ in range(size)) for size in (5000, 12000, 1, 0)]
    for i, value in enumerate(values):
        diff.check("SET", f"k{i}", value)
    for operation in ("AND", "OR", "XOR"):
        diff.check("BITOP", operation, "dest", "k0", "k1", "k2", "k3")
        diff.check("GET", "dest")
    diff.check("BITOP", "NOT", "dest", "k1")
    diff.check("GET", "dest")


def test_bitop_key_positions(diff):
    theirs, ours = diff.both("COMMAND", "INFO", "bitop")
    assert ours[0][:6] == theirs[0][:6]
    diff.check("COMMAND", "GETKEYS", "BITOP", "AND", "d", "a", "b")


# --- BITFIELD --------------------------------------------------------------------------------

def test_bitfield_types(diff):
    diff.check("SET", "k", b"\x85\x10\xff\x7f\x00\x01\x80\xfe\xaa\x55")
    for kind in ("i1", "u1", "i8", "u8", "i13", "u17", "i63", "u63", "i64", "i32", "u31",
                 "u64", "i65", "i0", "u0", "I8", "U8", "x8", "i", "u", "", "u-1", "i08", "i 8",
                 "i+8", "i8 ", "8", "i9223372036854775808"):
        for offset in ("0", "3", "7", "#1", "#0", "70", "79", "80", "1000"):
            diff.check("BITFIELD", "k", "GET", kind, offset)
            diff.check("BITFIELD_RO", "k", "GET", kind, offset)
    diff.check("BITFIELD", "k", "GET", "u8", "0", "GET", "i16", "#2", "GET", "i64", "5",
               "GET", "u63", "1", "GET", "i1", "0")


def test_bitfield_offsets(diff):
    diff.check("SET", "k", "hello")
    limit = str(512 * 1024 * 1024 * 8)
    for offset in ("-1", "#-1", "x", "", "#", "##1", "# 1", "1.5", "01", "+1", "#01", limit,
                   str(int(limit) - 1), "#536870912", "#536870911", "9223372036854775807",
                   "9223372036854775808", "#9223372036854775807",
                   "#2305843009213693952",  # times 8 wraps around to 0 in C
                   "#1152921504606846976",  # times 8 wraps around to a negative offset
                   "#4611686018427387904", "#-2305843009213693952"):
        diff.check("BITFIELD", "k", "GET", "u8", offset)
        diff.check("BITFIELD", "k", "GET", "i64", offset)
        diff.check("BITFIELD", "k", "SET", "i8", offset, "x")  # the offset is checked first
        diff.check("BITFIELD_RO", "missing", "GET", "u2", offset)
    diff.check("EXISTS", "missing")


def test_bitfield_set_incrby_and_overflow(diff):
    values = ["0", "1", "-1", "127", "128", "-128", "-129", "255", "256", "1000", "-1000",
              "9223372036854775807", "-9223372036854775808", "4611686018427387904"]
    for mode in ([], ["OVERFLOW", "WRAP"], ["OVERFLOW", "SAT"], ["OVERFLOW", "FAIL"],
                 ["overflow", "sat"]):
        for kind in ("u8", "i8", "u1", "i1", "u63", "i64", "i63", "u5", "i7"):
            diff.check("DEL", "k")
            for value in values:
                diff.check("BITFIELD", "k", *mode, "SET", kind, "3", value, "GET", kind, "3")
                diff.check("BITFIELD", "k", *mode, "INCRBY", kind, "3", value)
                diff.check("BITFIELD", "k", *mode, "INCRBY", kind, "#1", value, "GET", kind, "#1")
            diff.check("GET", "k")


def test_bitfield_several_operations(diff):
    diff.check("BITFIELD", "k", "SET", "u8", "0", "200", "GET", "u8", "0", "INCRBY", "u8", "0",
               "100", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "100", "OVERFLOW", "FAIL",
               "INCRBY", "u8", "0", "1", "GET", "u4", "0", "OVERFLOW", "WRAP", "INCRBY", "u8",
               "0", "1", "SET", "i16", "#3", "-2", "GET", "u16", "48", "GET", "i4", "#100")
    diff.check("GET", "k")
    # Modes apply to the operations that follow them, and can change several times.
    diff.check("BITFIELD", "k", "OVERFLOW", "FAIL", "OVERFLOW", "SAT", "INCRBY", "i4", "0", "9",
               "OVERFLOW", "FAIL", "INCRBY", "i4", "0", "1", "OVERFLOW", "WRAP", "INCRBY",
               "i4", "0", "1")
    diff.check("BITFIELD", "k", "OVERFLOW", "SAT")
    diff.check("GET", "k")


def test_bitfield_parse_errors(diff):
    diff.check("SET", "k", "abc")
    bad = [["GET", "u8"], ["GET"], ["SET", "u8", "0"], ["INCRBY", "u8", "0"], ["FOO", "u8", "0"],
           ["OVERFLOW"], ["OVERFLOW", "NOPE", "GET", "u8", "0"], ["SET", "u8", "0", "x"],
           ["INCRBY", "i8", "0", "9223372036854775808"], ["SET", "u8", "0", "1.5"],
           ["GET", "u8", "0", "SET", "u8", "0"], ["GET", "u8", "0", "GET", "u65", "0"],
           ["SET", "u8", "0", "1", "GET", "u8", "-1"], ["GETX", "u8", "0"],
           ["SET", "u8", "0", ""], ["OVERFLOW", "WRAP", "OVERFLOW"]]
    for ops in bad:
        diff.check("BITFIELD", "k", *ops)
        diff.check("BITFIELD_RO", "k", *ops)
        diff.check("BITFIELD", "missing", *ops)
    diff.check("GET", "k")
    diff.check("EXISTS", "missing")


def test_bitfield_ro(diff):
    diff.check("SET", "k", "\x01\x02")
    diff.check("BITFIELD_RO", "k", "GET", "u8", "0", "GET", "u8", "8", "GET", "i16", "0")
    diff.check("BITFIELD_RO", "k", "SET", "u8", "0", "1")
    diff.check("BITFIELD_RO", "k", "INCRBY", "u8", "0", "1")
    diff.check("BITFIELD_RO", "k", "GET", "u8", "0", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1")
    diff.check("BITFIELD_RO", "k", "OVERFLOW", "SAT", "GET", "u8", "0")
    diff.check("BITFIELD_RO", "k")
    diff.check("BITFIELD_RO", "missing", "SET", "u8", "0", "1")
    diff.check("EXISTS", "missing")
    diff.check("GET", "k")
    theirs, ours = diff.both("COMMAND", "INFO", "bitfield", "bitfield_ro")
    assert [x[:6] for x in ours] == [x[:6] for x in theirs]


def test_bitfield_missing_keys_and_types(diff):
    diff.check("BITFIELD", "missing")
    diff.check("BITFIELD", "missing", "GET", "i8", "0", "GET", "u63", "#1000")
    diff.check("BITFIELD", "missing", "OVERFLOW", "FAIL")
    diff.check("EXISTS", "missing")
    diff.check("RPUSH", "l", "1")
    diff.check("BITFIELD", "l")
    diff.check("BITFIELD", "l", "GET", "u8", "0")
    diff.check("BITFIELD", "l", "SET", "u8", "0", "1")
    diff.check("BITFIELD_RO", "l")
    diff.check("BITFIELD_RO", "l", "SET", "u8", "0", "1")
    diff.check("BITFIELD", "l", "GET", "u8", "x")  # arguments first, type after
    # A write that fails under OVERFLOW FAIL still creates the (zeroed) string.
    diff.check("BITFIELD", "created", "OVERFLOW", "FAIL", "INCRBY", "u8", "12", "300")
    diff.check("GET", "created")
    diff.check("SET", "n", "123")
    diff.check("BITFIELD", "n", "GET", "u8", "0", "INCRBY", "u8", "0", "1", "GET", "u8", "16")
    diff.check("GET", "n")


def test_bitfield_grows_and_keeps_ttl(diff):
    diff.check("SET", "k", "abc", "EX", "100")
    diff.check("BITFIELD", "k", "SET", "u8", "40", "1")
    diff.check("GET", "k")
    diff.check("TTL", "k")
    diff.check("BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "u8", "100", "300")
    diff.check("GET", "k")
    diff.check("BITFIELD", "k", "SET", "i64", "#2", "-1", "SET", "u3", "1000", "5")
    diff.check("STRLEN", "k")
    diff.check("BITFIELD", "k", "GET", "u3", "1000", "GET", "i64", "#2")
    diff.check("BITFIELD", "big", "SET", "u8", "800000", "255")
    diff.check("STRLEN", "big")
    diff.check("TTL", "k")


def test_bitfield_and_watch(diff):
    """WATCH hears of a BITFIELD only when an operation wrote a different value or the string
    grew through a successful write."""
    diff.check("SET", "k", "\x05")
    cases = [["SET", "u8", "0", "5"], ["OVERFLOW", "FAIL", "INCRBY", "u8", "0", "300"],
             ["GET", "u8", "0"], ["SET", "u8", "16", "0"], ["INCRBY", "u8", "0", "0"],
             ["OVERFLOW", "FAIL", "SET", "u8", "24", "300"], ["SET", "u8", "0", "6"],
             ["OVERFLOW", "SAT", "INCRBY", "u8", "0", "1000", "INCRBY", "u8", "0", "1000"]]
    for ops in cases:
        diff.check("WATCH", "k")
        diff.check("BITFIELD", "k", *ops)
        diff.check("MULTI")
        diff.check("PING")
        diff.check("EXEC")
        diff.check("GET", "k")
    for key in ("fresh", "fresh2"):
        diff.check("WATCH", key)
        diff.check("BITFIELD", key, "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "300")
        diff.check("MULTI")
        diff.check("PING")
        diff.check("EXEC")
        diff.check("GET", key)


# --- generated sequences -----------------------------------------------------------------------

KEYS = ["b1", "b2"]
TYPES = ["u1", "i1", "u3", "i5", "u8", "i8", "u16", "i16", "u31", "i33", "u63", "i64", "u64",
         "i0"]
OFFSETS = ["0", "1", "5", "7", "8", "13", "31", "60", "#0", "#1", "#3", "-1"]
VALUES = ["0", "1", "-1", "2", "7", "-8", "100", "-100", "255", "256", "65535", "-32769",
          "4611686018427387903", "9223372036854775807", "-9223372036854775808", "x"]

key = st.sampled_from(KEYS)
kind = st.sampled_from(TYPES)
offset = st.sampled_from(OFFSETS)
value = st.sampled_from(VALUES)
operation = st.one_of(
    st.builds(lambda t, o: ["GET", t, o], kind, offset),
    st.builds(lambda t, o, v: ["SET", t, o, v], kind, offset, value),
    st.builds(lambda t, o, v: ["INCRBY", t, o, v], kind, offset, value),
    st.builds(lambda m: ["OVERFLOW", m], st.sampled_from(["WRAP", "SAT", "FAIL", "sat"])),
)
bitfield_command = st.builds(
    lambda name, k, ops: [name, k, *sum(ops, [])],
    st.sampled_from(["BITFIELD", "BITFIELD", "BITFIELD_RO"]), key,
    st.lists(operation, max_size=5))


@settings(max_examples=200)
@given(initial=st.lists(st.binary(max_size=12), min_size=2, max_size=2),
       sequence=st.lists(bitfield_command, min_size=1, max_size=8))
def test_generated_bitfield_sequences_match_redis(diff, initial, sequence):
    diff.both("DEL", *KEYS)
    for k, data in zip(KEYS, initial):
        if data:
            diff.both("SET", k, data)
    for command in sequence:
        diff.check(*command)
    for k in KEYS:
        diff.check("GET", k)


@settings(max_examples=100)
@given(values=st.lists(st.one_of(st.none(), st.binary(max_size=40)), min_size=1, max_size=4),
       name=st.sampled_from(["AND", "OR", "XOR", "NOT"]))
def test_generated_bitops_match_redis(diff, values, name):
    keys = [f"src{i}" for i in range(len(values))]
    diff.both("DEL", "dest", *keys)
    for k, data in zip(keys, values):
        if data is not None:
            diff.both("SET", k, data)
    diff.check("BITOP", name, "dest", *keys)
    diff.check("GET", "dest")
