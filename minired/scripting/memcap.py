"""Lua's memory cap, kept from hanging the server.

lupa runs a script with the GIL let go and takes it back for each Python function the script
calls; it pushes that function's result onto the Lua stack *while it still holds the GIL*. If
the push runs into the memory cap, Lua's error unwinds straight out of lupa's GIL-holding frame,
the GIL's state is lost, and the next thread to want it (the server's own) waits forever. So
every Python function a script can reach lifts the cap as it starts, and a Lua wrapper puts it
back once the result is on the stack: an allocation over the cap then fails in Lua, where
unwinding is harmless, and the script gets the usual "not enough memory" error.

(The native bridge's redis.call, luabridge.pyx, needs none of this: it pushes replies after
letting the GIL go.)
"""
from __future__ import annotations

from typing import Any, Callable

# settle(...) returns its arguments unchanged once the cap is back: a result handed through it
# is already on the stack.
_WRAPPER_LUA = b"""
local restore = ...
local function settle(...)
  restore()
  return ...
end
return function(fn)
  return function(...) return settle(fn(...)) end
end
"""

NO_LIMIT = 0  # lupa's set_max_memory: no cap


class CapGuard:
    """Wraps Python functions for one Lua runtime whose cap is `cap` (as lupa counts it)."""

    __slots__ = ("cap", "_set_cap", "_wrap")

    def __init__(self, lua: Any, cap: int) -> None:
        self.cap = cap
        self._set_cap = lua.set_max_memory
        self._wrap = lua.execute(_WRAPPER_LUA, self.restore)

    def restore(self) -> None:
        """Puts the cap back (a Lua callback: it returns nothing, so nothing is pushed)."""
        self._set_cap(self.cap)

    def guard(self, fn: Callable[..., Any]) -> Any:
        """A Lua function calling `fn` with the cap lifted until its result is pushed."""
        lift = self._set_cap

        def lifted(*args: Any) -> Any:
            lift(NO_LIMIT)
            return fn(*args)

        lifted.__name__ = getattr(fn, "__name__", "lifted")
        return self._wrap(lifted)
