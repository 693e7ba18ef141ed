# cython: language_level=3
"""cmsgpack's encoder and decoders as Lua C functions, for the compiled build.

cmsgpack is Lua code (cmsgpack.lua) in both builds; in this one its pack, unpack, unpack_one
and unpack_limit are replaced by these C functions on the Lua stack (the way luabridge.pyx
serves redis.call). BullMQ unpacks a job's options with cmsgpack.unpack several times per job,
where the Lua decoder costs ~6x what Redis's C does.

Each function here is cmsgpack.lua's, step for step: the same checks in the same order, the
same tables built by the same sequence of stores (so `next` walks them in the same order), the
same stack-slot model for the stack overflow errors (LUAI_MAXCSTACK), the same error texts.
Where cmsgpack.lua imitates the C API (luaL_checklstring, luaL_optinteger, luaL_argerror,
luaL_error's "user_script:N:" prefix, a store's "table index is nil"), this calls the C API
itself, as Redis does; so a tail call (`return cmsgpack.unpack(bad)`) keeps the prefix here.
"""
from libc.math cimport floor
from libc.stdint cimport int64_t, uint64_t, uint32_t
from libc.string cimport memcpy

from minired.scripting.luaapi cimport *
from minired.scripting.lualibs.native_buffer cimport *
from minired.scripting.lualibs.support import c_library


# --- cmsgpack.unpack, unpack_one, unpack_limit ---------------------------------------------

cdef enum Failure:
    DECODED = 0
    MISSING_BYTES = 1
    BAD_FORMAT = 2

cdef struct Cursor:
    const unsigned char *s
    size_t pos  # the next byte's offset (0-based)
    size_t len


cdef inline uint64_t _big_endian(const unsigned char *p, int count) noexcept nogil:
    cdef uint64_t n = 0
    cdef int i
    for i in range(count):
        n = (n << 8) | p[i]
    return n


cdef inline bint _grow(lua_State *L) noexcept nogil:
    """Room for the next push. The slot model has already refused what Redis refuses, and
    never counts fewer slots than are in use, so this only grows the stack."""
    if not mr_checkstack(L, 1):
        mr_raise(L, "stack overflow (%s)", "cmsgpack")
    return True


cdef Failure _decode_array(lua_State *L, Cursor *c, size_t count, int slots) noexcept nogil:
    cdef size_t i
    cdef Failure failure
    mr_createtable(L, 0, 0)
    if slots + 2 > MAXCSTACK:
        mr_raise(L, "stack overflow (%s)", "in function mp_decode_to_lua_array")
    for i in range(1, count + 1):
        failure = _decode_value(L, c, slots + 2)
        if failure != DECODED:
            return failure
        mr_rawseti(L, -2, <int>i)
    return DECODED


cdef Failure _decode_map(lua_State *L, Cursor *c, size_t count, int slots) noexcept nogil:
    cdef size_t i
    cdef Failure failure
    mr_createtable(L, 0, 0)
    for i in range(count):
        failure = _decode_value(L, c, slots + 1)
        if failure != DECODED:
            return failure
        failure = _decode_value(L, c, slots + 2)
        if failure != DECODED:
            return failure
        mr_settable(L, -3)  # raises "table index is nil" / "is NaN" as Lua's own store does
    return DECODED


cdef inline Failure _push_string(lua_State *L, Cursor *c, size_t header,
                                 size_t size) noexcept nogil:
    if c.len - c.pos < header + size:
        return MISSING_BYTES
    mr_pushlstring(L, <const char *>(c.s + c.pos + header), size)
    c.pos += header + size
    return DECODED


cdef Failure _decode_value(lua_State *L, Cursor *c, int slots) noexcept nogil:
    """Push the value at the cursor; `slots`: the stack slots in use before it (the model
    cmsgpack.lua's decode_value keeps)."""
    cdef size_t left = c.len - c.pos
    cdef const unsigned char *p = c.s + c.pos
    cdef unsigned char b
    cdef size_t size
    cdef float single
    cdef double double_
    cdef uint64_t bits
    if left == 0:
        return MISSING_BYTES
    if slots + 1 > MAXCSTACK:
        mr_raise(L, "stack overflow (%s)",
                 "too many return values at once; use unpack_one or unpack_limit instead.")
    _grow(L)
    b = p[0]
    if b < 0x80:
        mr_pushnumber(L, b)
        c.pos += 1
        return DECODED
    if b >= 0xe0:
        mr_pushnumber(L, <double>b - 256)
        c.pos += 1
        return DECODED
    if 0xa0 <= b <= 0xbf:
        return _push_string(L, c, 1, b - 0xa0)
    if 0x90 <= b <= 0x9f:
        c.pos += 1
        return _decode_array(L, c, b - 0x90, slots)
    if b <= 0x8f:
        c.pos += 1
        return _decode_map(L, c, b - 0x80, slots)
    if b == 0xc0:
        mr_pushnil(L)
    elif b == 0xc2 or b == 0xc3:
        mr_pushboolean(L, b == 0xc3)
    elif b == 0xcc or b == 0xd0:
        if left < 2:
            return MISSING_BYTES
        mr_pushnumber(L, p[1] if b == 0xcc else <double>(<signed char>p[1]))
        c.pos += 2
        return DECODED
    elif b == 0xcd or b == 0xd1:
        if left < 3:
            return MISSING_BYTES
        bits = _big_endian(p + 1, 2)
        mr_pushnumber(L, <double>bits if b == 0xcd else <double>(<short>bits))
        c.pos += 3
        return DECODED
    elif b == 0xce or b == 0xd2:
        if left < 5:
            return MISSING_BYTES
        bits = _big_endian(p + 1, 4)
        mr_pushnumber(L, <double>bits if b == 0xce else <double>(<int>bits))
        c.pos += 5
        return DECODED
    elif b == 0xcf or b == 0xd3:  # uint64 too goes through a signed integer, as in C
        if left < 9:
            return MISSING_BYTES
        mr_pushnumber(L, <double>(<int64_t>_big_endian(p + 1, 8)))
        c.pos += 9
        return DECODED
    elif b == 0xca:
        if left < 5:
            return MISSING_BYTES
        bits = _big_endian(p + 1, 4)
        memcpy(&single, &bits, 4)  # (the low four bytes: little-endian)
        mr_pushnumber(L, single)
        c.pos += 5
        return DECODED
    elif b == 0xcb:
        if left < 9:
            return MISSING_BYTES
        bits = _big_endian(p + 1, 8)
        memcpy(&double_, &bits, 8)
        mr_pushnumber(L, double_)
        c.pos += 9
        return DECODED
    elif b == 0xd9:
        if left < 2:
            return MISSING_BYTES
        return _push_string(L, c, 2, p[1])
    elif b == 0xda:
        if left < 3:
            return MISSING_BYTES
        return _push_string(L, c, 3, _big_endian(p + 1, 2))
    elif b == 0xdb:
        if left < 5:
            return MISSING_BYTES
        return _push_string(L, c, 5, _big_endian(p + 1, 4))
    elif b == 0xdc or b == 0xde:
        if left < 3:
            return MISSING_BYTES
        c.pos += 3
        size = _big_endian(p + 1, 2)
        return _decode_array(L, c, size, slots) if b == 0xdc else _decode_map(L, c, size, slots)
    elif b == 0xdd or b == 0xdf:
        if left < 5:
            return MISSING_BYTES
        c.pos += 5
        size = _big_endian(p + 1, 4)
        return _decode_array(L, c, size, slots) if b == 0xdd else _decode_map(L, c, size, slots)
    else:
        return BAD_FORMAT  # bin, ext and the never-used 0xc1
    c.pos += 1
    return DECODED


cdef int _unpack_full(lua_State *L, const char *s, size_t size, ptrdiff_t limit,
                      ptrdiff_t offset, int base_slots) noexcept nogil:
    """cmsgpack.lua's unpack_full: push the values (after the next offset unless decoding
    all) and return how many were pushed."""
    cdef Cursor c
    cdef int count = 0
    cdef Failure failure
    cdef bint decode_all
    if offset < 0 or limit < 0:
        mr_raise(L, "Invalid request to unpack with offset of %d and limit of %d.",
                 <int>offset, <int>size)
    elif <size_t>offset > size:
        mr_raise(L, "Start offset %d greater than input length %d.", <int>offset, <int>size)
    decode_all = limit == 0 and offset == 0
    if decode_all:
        limit = INT_MAX
    c.s = <const unsigned char *>s
    c.pos = <size_t>offset
    c.len = size
    while c.pos < size and count < limit:
        failure = _decode_value(L, &c, base_slots + count)
        if failure == MISSING_BYTES:
            mr_raise(L, "Missing bytes in input.")
        elif failure == BAD_FORMAT:
            mr_raise(L, "Bad data format in input.")
        count += 1
    if decode_all:
        return count
    # The next offset (or -1 when all input was consumed) comes first.
    if base_slots + count + 1 > MAXCSTACK:
        mr_raise(L, "stack overflow (%s)", "in function mp_unpack_full")
    _grow(L)
    mr_pushnumber(L, -1 if c.pos >= size else <double>c.pos)
    mr_insert(L, -(count + 1))
    return count + 1


cdef int _unpack(lua_State *L) noexcept nogil:
    cdef int nargs = mr_gettop(L)
    cdef size_t size
    cdef const char *s = mr_checklstring(L, 1, &size)
    # (Redis's mp_unpack leaves any extra arguments on the stack below the results)
    return _unpack_full(L, s, size, 0, 0, nargs)


cdef int _unpack_one(lua_State *L) noexcept nogil:
    cdef ptrdiff_t offset = mr_optinteger(L, 2, 0)
    cdef size_t size
    cdef const char *s = mr_checklstring(L, 1, &size)
    mr_settop(L, 1)
    return _unpack_full(L, s, size, 1, offset, 1)


cdef int _unpack_limit(lua_State *L) noexcept nogil:
    cdef ptrdiff_t limit = mr_checkinteger(L, 2)
    cdef ptrdiff_t offset = mr_optinteger(L, 3, 0)
    cdef size_t size
    cdef const char *s = mr_checklstring(L, 1, &size)
    mr_settop(L, 1)
    return _unpack_full(L, s, size, limit, offset, 1)


# --- cmsgpack.pack -------------------------------------------------------------------------

cdef enum:
    # The packer's upvalues: the sandbox's `shown` (or nil) and its output anchor.
    PACK_SHOWN_UPVALUE = -10003
    PACK_OUTPUT_UPVALUE = -10004
    MAX_NESTING = 16  # a table this deep is packed as nil


cdef inline void _put_big_endian(lua_State *L, Output *out, unsigned char first, uint64_t value,
                                 int count) noexcept nogil:
    cdef unsigned char bytes_[9]
    cdef int i
    bytes_[0] = first
    for i in range(count, 0, -1):
        bytes_[i] = value & 0xff
        value >>= 8
    _put(L, out, <char *>bytes_, count + 1)


cdef void _pack_integer(lua_State *L, Output *out, int64_t n) noexcept nogil:
    if n >= 0:
        if n <= 127:
            _put_char(L, out, <char>n)
        elif n <= 0xff:
            _put_big_endian(L, out, 0xcc, <uint64_t>n, 1)
        elif n <= 0xffff:
            _put_big_endian(L, out, 0xcd, <uint64_t>n, 2)
        elif (n >> 32) == 0:
            _put_big_endian(L, out, 0xce, <uint64_t>n, 4)
        else:
            _put_big_endian(L, out, 0xcf, <uint64_t>n, 8)
    elif n >= -32:
        _put_char(L, out, <char>n)
    elif n >= -128:
        _put_big_endian(L, out, 0xd0, <uint64_t>n, 1)
    elif n >= -32768:
        _put_big_endian(L, out, 0xd1, <uint64_t>n, 2)
    elif n >= -2147483648:
        _put_big_endian(L, out, 0xd2, <uint64_t>n, 4)
    else:
        _put_big_endian(L, out, 0xd3, <uint64_t>n, 8)


cdef void _pack_number(lua_State *L, Output *out, double n) noexcept nogil:
    cdef float single
    cdef uint32_t bits32
    cdef uint64_t bits64
    # IS_INT64_EQUIVALENT: finite and integral within int64's range
    if n == floor(n) and n >= -9223372036854775808.0 and n < 9223372036854775808.0:
        _pack_integer(L, out, <int64_t>n)
        return
    single = <float>n
    if <double>single == n:  # float32 whenever the value survives the round trip
        memcpy(&bits32, &single, 4)
        _put_big_endian(L, out, 0xca, bits32, 4)
    else:
        memcpy(&bits64, &n, 8)
        _put_big_endian(L, out, 0xcb, bits64, 8)


cdef void _pack_string(lua_State *L, Output *out, const char *s, size_t size) noexcept nogil:
    if size < 32:
        _put_char(L, out, <char>(0xa0 + size))
    elif size <= 0xff:
        _put_big_endian(L, out, 0xd9, size, 1)
    elif size <= 0xffff:
        _put_big_endian(L, out, 0xda, size, 2)
    else:
        _put_big_endian(L, out, 0xdb, size, 4)
    _put(L, out, s, size)


cdef bint _is_array(lua_State *L, int index) noexcept nogil:
    """table_is_an_array(): its keys are exactly 1..N (positive C ints)."""
    cdef double key, largest = 0
    cdef double count = 0
    mr_pushnil(L)
    while mr_next(L, index):
        mr_settop(L, -2)
        if mr_type(L, -1) != LUA_TNUMBER:
            mr_settop(L, -2)
            return False
        key = mr_tonumber(L, -1)
        if key <= 0 or key != floor(key) or key > INT_MAX:
            mr_settop(L, -2)
            return False
        if key > largest:
            largest = key
        count += 1
    return largest == count


cdef void _pack_header(lua_State *L, Output *out, size_t count, unsigned char fix,
                       unsigned char sixteen) noexcept nogil:
    if count <= 15:
        _put_char(L, out, <char>(fix + count))
    elif count <= 0xffff:
        _put_big_endian(L, out, sixteen, count, 2)
    else:
        _put_big_endian(L, out, sixteen + 1, count, 4)


cdef void _pack_value(lua_State *L, Output *out, int level) noexcept nogil:
    """Pack the value at the top of the stack (left there)."""
    cdef int kind = mr_type(L, -1)
    cdef size_t size, count, i
    cdef const char *text
    cdef int index
    if kind == LUA_TTABLE and level == MAX_NESTING:
        kind = LUA_TNIL
    if kind == LUA_TSTRING:
        text = mr_tolstring(L, -1, &size)
        _pack_string(L, out, text, size)
    elif kind == LUA_TBOOLEAN:
        _put_char(L, out, <char>(0xc3 if mr_toboolean(L, -1) else 0xc2))
    elif kind == LUA_TNUMBER:
        _pack_number(L, out, mr_tonumber(L, -1))
    elif kind == LUA_TTABLE:
        if not mr_checkstack(L, 3):
            mr_raise(L, "stack overflow (%s)", "cmsgpack")
        index = mr_gettop(L)
        # A read-only proxy is packed as the table it shows (cmsgpack.lua's next and #: the
        # proxy's own length is 0, but no proxy is an array).
        if mr_getmetatable(L, index):
            mr_settop(L, -2)
            if mr_type(L, PACK_SHOWN_UPVALUE) != LUA_TNIL:
                mr_pushvalue(L, PACK_SHOWN_UPVALUE)
                mr_pushvalue(L, index)
                mr_call(L, 1, 1)
                if _is_array(L, mr_gettop(L)):
                    mr_settop(L, -2)
                    _pack_array(L, out, index, level)
                    return
                mr_replace(L, index)
                _pack_map(L, out, index, level)
                return
        if _is_array(L, index):
            _pack_array(L, out, index, level)
        else:
            _pack_map(L, out, index, level)
    else:
        _put_char(L, out, <char>0xc0)


cdef void _pack_array(lua_State *L, Output *out, int index, int level) noexcept nogil:
    cdef size_t length = mr_objlen(L, index), i
    _pack_header(L, out, length, 0x90, 0xdc)
    for i in range(1, length + 1):
        mr_pushnumber(L, <double>i)
        mr_gettable(L, index)  # (with metamethods, as cmsgpack.lua's t[i])
        _pack_value(L, out, level + 1)
        mr_settop(L, -2)


cdef void _pack_map(lua_State *L, Output *out, int index, int level) noexcept nogil:
    cdef size_t count = 0
    mr_pushnil(L)
    while mr_next(L, index):
        mr_settop(L, -2)
        count += 1
    _pack_header(L, out, count, 0x80, 0xde)
    mr_pushnil(L)
    while mr_next(L, index):
        mr_pushvalue(L, -2)
        _pack_value(L, out, level + 1)  # the key
        mr_settop(L, -2)
        _pack_value(L, out, level + 1)
        mr_settop(L, -2)


cdef int _pack(lua_State *L) noexcept nogil:
    cdef int nargs = mr_gettop(L), i
    cdef Output out
    if nargs == 0:
        mr_argerror(L, 0, "MessagePack pack needs input.")
    if nargs * 2 > MAXCSTACK:
        mr_argerror(L, 0, "Too many arguments for MessagePack pack.")
    _output_start(L, &out, PACK_OUTPUT_UPVALUE)
    for i in range(1, nargs + 1):
        mr_pushvalue(L, i)
        _pack_value(L, &out, 0)
        mr_settop(L, -2)
    mr_pushlstring(L, out.data, out.size)
    _output_end(L, &out)
    return 1


cdef int _packer(lua_State *L) noexcept nogil:
    """packer(shown): cmsgpack.pack, reading read-only proxies through `shown`."""
    mr_settop(L, 2)
    mr_pushcclosure(L, _pack, 2)
    return 1


cdef public int luaopen_minired_cmsgpack(lua_State *L) noexcept nogil:
    """Called through package.loadlib: {packer = ..., unpack = ..., unpack_one = ...,
    unpack_limit = ...}."""
    mr_createtable(L, 0, 4)
    mr_pushcclosure(L, _packer, 0)
    mr_setfield(L, -2, "packer")
    mr_pushcclosure(L, _unpack, 0)
    mr_setfield(L, -2, "unpack")
    mr_pushcclosure(L, _unpack_one, 0)
    mr_setfield(L, -2, "unpack_one")
    mr_pushcclosure(L, _unpack_limit, 0)
    mr_setfield(L, -2, "unpack_limit")
    return 1


def library(lua):
    """The Lua table luaopen_minired_cmsgpack returns (packer, unpack, unpack_one and
    unpack_limit, the C functions cmsgpack.lua takes in place of its own), made in the lupa
    runtime `lua`, or None where lupa's C API cannot be reached."""
    return c_library(lua, __file__, b"luaopen_minired_cmsgpack") if lua_api_ready() else None
