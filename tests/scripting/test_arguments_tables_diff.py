"""KEYS and ARGV are new tables in every run, as far as any script can tell, against Redis 7.0.

The native bridge refills the previous run's KEYS and ARGV instead of making new ones
(luabridge.pyx, _arguments_table) while they are still laid out as new tables are. Each case
here changes them in one run (an element added, removed, a hole, a metatable, a hash key, a
run that fails half way), then other runs, with as many, fewer or more arguments, show
everything a script can see of them: their length, every pair, their metatable. Each case runs
on both bridges (conftest.py); every reply must be Redis's.
"""
from __future__ import annotations

import pytest

# Everything of KEYS and ARGV a script can look at: `#`, each pair (in key order), whether a
# metatable is set, and an index read through it.
_INSPECT = """
local function show(t)
  local pairs_seen = {}
  for k, v in pairs(t) do pairs_seen[#pairs_seen + 1] = tostring(k) .. '=' .. tostring(v) end
  table.sort(pairs_seen)
  return {#t, table.concat(pairs_seen, ','), tostring(getmetatable(t) ~= nil), tostring(t[99])}
end
return {show(KEYS), show(ARGV)}
"""

_CHANGES = {
    "append": "KEYS[#KEYS + 1] = 'extra'; ARGV[#ARGV + 1] = 'extra'",
    "last removed": "table.remove(KEYS); table.remove(ARGV)",
    "hole": "KEYS[1] = nil; ARGV[2] = nil",
    "all removed": "for i = #KEYS, 1, -1 do KEYS[i] = nil end; for i = #ARGV, 1, -1 do ARGV[i] = nil end",
    "removed and put back": "local k = KEYS[2]; KEYS[2] = nil; KEYS[2] = k",
    "hash key": "KEYS.x = 1; ARGV.y = 2",
    "far index": "rawset(KEYS, 10, 'far'); ARGV[100] = 'far'",
    "index metatable": "setmetatable(KEYS, {__index = function() return 'meta' end})",
    "newindex metatable": "setmetatable(ARGV, {__newindex = function() error('no') end})",
    "values changed": "KEYS[1] = 'changed'; ARGV[1] = 42",
    "sorted": "table.sort(ARGV, function(a, b) return a > b end)",
    "changed then failed": "KEYS[1] = nil; ARGV.z = 1; error('boom')",
    "changed then redis error": "KEYS[3] = 'new'; return redis.call('NOSUCHCOMMAND')",
}


@pytest.mark.parametrize("change", list(_CHANGES))
def test_a_run_never_sees_what_the_last_one_did_to_keys_and_argv(diff, bridge, change):
    diff.check("EVAL", f"{_CHANGES[change]}; return 1", 2, "k1", "k2", "a1", "a2", "a3")
    for keys, argv in (((b"k1", b"k2"), (b"a1", b"a2", b"a3")),  # the same shape
                       ((b"x",), (b"b1",)),                        # fewer
                       ((b"x", b"y", b"z"), (b"b1", b"b2", b"b3", b"b4")),  # more
                       ((), ()),
                       ((b"k1", b"k2"), (b"a1", b"a2", b"a3"))):
        diff.check("EVAL", _INSPECT, len(keys), *keys, *argv)
        # The same script by its digest (EVALSHA, the cached entry) and changed again.
        diff.check("EVAL", f"{_CHANGES[change]}; return 1", len(keys), *keys, *argv)
        diff.check("EVAL", _INSPECT, len(keys), *keys, *argv)


def test_many_arguments_and_a_change_in_between(diff, bridge):
    # Over the number of elements whose tables are reused, and back under it.
    many = [b"v%d" % i for i in range(40)]
    diff.check("EVAL", _INSPECT, 20, *many)
    diff.check("EVAL", "KEYS[21] = 'x'; return 1", 20, *many)
    diff.check("EVAL", _INSPECT, 3, *many[:5])
    diff.check("EVAL", _INSPECT, 20, *many)
