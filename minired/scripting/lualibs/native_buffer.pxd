# The output buffer of the C encoders (native_json.pyx, native_msgpack.pyx): bytes gathered in
# the C frame up to INLINE_OUTPUT, then in a Lua userdata that an upvalue of the calling C
# function keeps alive (`anchor`), so that a Lua error (a longjmp out of the encoder) leaves
# nothing to free. The functions are inline: each module compiles its own copy.
from libc.string cimport memcpy

from minired.scripting.luaapi cimport *

cdef enum:
    MAXCSTACK = 8000  # LUAI_MAXCSTACK: what luaL_checkstack refuses beyond
    INT_MAX = 2147483647
    INLINE_OUTPUT = 1024

cdef struct Output:
    char *data
    size_t size
    size_t capacity
    int anchor  # the upvalue that keeps a userdata buffer alive
    char inline_[INLINE_OUTPUT]


cdef inline void _output_start(lua_State *L, Output *out, int anchor) noexcept nogil:
    out.data = out.inline_
    out.size = 0
    out.capacity = INLINE_OUTPUT
    out.anchor = anchor
    if mr_type(L, anchor) != LUA_TNIL:  # left by a call that failed
        mr_pushnil(L)
        mr_replace(L, anchor)


cdef inline void _output_end(lua_State *L, Output *out) noexcept nogil:
    if out.data != out.inline_:
        out.data = out.inline_
        mr_pushnil(L)
        mr_replace(L, out.anchor)  # (the userdata is garbage from here)


cdef inline void _reserve(lua_State *L, Output *out, size_t more) noexcept nogil:
    """Room for `more` bytes: past the inline buffer, a userdata kept in an upvalue
    (out.anchor), so an error (a longjmp) leaves nothing to free."""
    cdef size_t capacity = out.capacity
    cdef char *bigger
    if out.size + more <= capacity:
        return
    while capacity < out.size + more:
        capacity *= 2
    bigger = <char *>mr_newuserdata(L, capacity)
    memcpy(bigger, out.data, out.size)
    mr_replace(L, out.anchor)
    out.data = bigger
    out.capacity = capacity


cdef inline void _put(lua_State *L, Output *out, const char *data, size_t size) noexcept nogil:
    if out.size + size > out.capacity:
        _reserve(L, out, size)
    memcpy(out.data + out.size, data, size)
    out.size += size


cdef inline void _put_char(lua_State *L, Output *out, char c) noexcept nogil:
    if out.size + 1 > out.capacity:
        _reserve(L, out, 1)
    out.data[out.size] = c
    out.size += 1
