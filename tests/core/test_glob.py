"""The glob matcher's two ways of matching (one regular expression for short patterns, part by
part for long ones) must agree everywhere; test_glob_diff.py compares both with Redis."""
from hypothesis import given, settings
from hypothesis import strategies as st

from minired.data import glob

_PATTERN_BYTES = [b"a", b"b", b"A", b"*", b"*", b"?", b"[", b"]", b"^", b"-", b"\\", b"\xff",
                  b"\x00", b"ab", b"[a-b]", b"[^a]"]
_patterns = st.lists(st.sampled_from(_PATTERN_BYTES), max_size=12).map(b"".join)
_subjects = st.lists(st.sampled_from([b"a", b"b", b"A", b"-", b"]", b"\\", b"[", b"\xff",
                                      b"\x00", b"ab"]), max_size=10).map(b"".join)


@settings(max_examples=200)
@given(pattern=_patterns, subjects=st.lists(_subjects, min_size=1, max_size=6))
def test_regex_and_part_matching_agree(pattern, subjects):
    by_regex = glob._compile(pattern, nocase=False)
    limit = glob._REGEX_UP_TO
    glob._REGEX_UP_TO = -1
    try:
        by_parts = glob._compile(pattern, nocase=False)
    finally:
        glob._REGEX_UP_TO = limit
    for subject in subjects:
        assert by_regex(subject) == by_parts(subject), (pattern, subject)


def test_long_pattern_costs_little_to_prepare():
    # A megabyte of literal pattern and a long run of classes are read without a regex.
    assert not glob.glob_match(b"x" * 1_000_000, b"x" * 10)
    assert glob.glob_match(b"x" * 100_000 + b"*", b"x" * 100_001)
    assert not glob.glob_match(b"[ab]" * 50_000, b"ab")
    assert glob.glob_match(b"[ab]" * 500 + b"*", b"ab" * 300)
