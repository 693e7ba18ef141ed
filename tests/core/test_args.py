"""The argument parsers every command shares, on bytes alone: parse_int must take exactly the
texts Redis's string2ll takes (its digit loop and its int()-based path for long texts alike),
and int_text must print what b"%d" prints. Differential tests through commands cover the
same rules against real Redis; these reach every length and edge without a server."""
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minired.engine.args import int_text, parse_int
from minired.protocol import errors
from minired.protocol.errors import RedisError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_CANONICAL = re.compile(rb"0|-?[1-9][0-9]*")


def string2ll(raw: bytes) -> int | None:
    """Redis's rule, written plainly: canonical decimal digits within the int64 range."""
    if len(raw) > 20 or not _CANONICAL.fullmatch(raw):
        return None
    value = int(raw)
    return value if INT64_MIN <= value <= INT64_MAX else None


_TEXTS = st.one_of(
    st.integers(min_value=INT64_MIN - 10, max_value=INT64_MAX + 10).map(lambda n: b"%d" % n),
    st.integers(min_value=-10**19, max_value=10**19).map(lambda n: b"%d" % n),
    st.text("0123456789-+ .e_x", max_size=22).map(str.encode),
    st.binary(max_size=21),
)


@given(_TEXTS)
def test_parse_int_takes_what_string2ll_takes(raw):
    expected = string2ll(raw)
    if expected is None:
        with pytest.raises(RedisError, match="not an integer"):
            parse_int(raw)
    else:
        assert parse_int(raw) == expected


@pytest.mark.parametrize("raw, value", [
    (b"0", 0), (b"7", 7), (b"-7", -7), (b"123456789012345678", 123456789012345678),
    (b"-12345678901234567", -12345678901234567), (b"1234567890123456789", 1234567890123456789),
    (b"9223372036854775807", INT64_MAX), (b"-9223372036854775808", INT64_MIN),
])
def test_parse_int_edges(raw, value):
    assert parse_int(raw) == value


@pytest.mark.parametrize("raw", [b"", b"-", b"-0", b"00", b"01", b"-01", b"+1", b" 1", b"1 ", b"1_0",
                                 b"9223372036854775808", b"-9223372036854775809", b"\x001",
                                 b"1" * 21])
def test_parse_int_refuses(raw):
    with pytest.raises(RedisError):
        parse_int(raw)


def test_parse_int_names_the_callers_error():
    with pytest.raises(RedisError, match=errors.HASH_NOT_INTEGER):
        parse_int(b"x", errors.HASH_NOT_INTEGER)


@given(st.integers(min_value=INT64_MIN, max_value=INT64_MAX))
def test_int_text_prints_as_percent_d(value):
    assert int_text(value) == b"%d" % value
    assert type(int_text(value)) is bytes
