# cython: language_level=3
"""cjson's encoder and decoder as Lua C functions, for the compiled build.

cjson is Lua code (cjson.lua) in both builds; in this one its encode and decode are replaced
by these C functions on the Lua stack (the way luabridge.pyx serves redis.call). BullMQ
encodes a job's options with cjson.encode, where the Lua encoder costs ~8x what Redis's C
does, and scripts commonly decode JSON they stored.

Each function here is cjson.lua's, step for step: the same checks in the same order, the same
tables built by the same sequence of stores (so `next` walks them in the same order), the same
stack-slot model for the nesting errors (LUAI_MAXCSTACK), the same token indexes and error
texts, and the library's settings read from the table cjson.lua keeps them in. Arguments are
checked, and errors raised, through luaL_checklstring, luaL_argerror and luaL_error, as Redis
does.
"""
from libc.math cimport floor, isinf, isnan
from libc.stdio cimport snprintf
from libc.stdint cimport int64_t, uint32_t, int32_t
from libc.stdlib cimport strtod
from libc.string cimport strlen, strncmp

from minired.scripting.luaapi cimport *
from minired.scripting.lualibs.native_buffer cimport *
from minired.scripting.lualibs.support import c_library


# --- cjson.encode --------------------------------------------------------------------------

cdef enum:
    # The encoder's upvalues (lua_upvalueindex(i) = LUA_GLOBALSINDEX - i): the library's
    # settings table, cjson.null, and the sandbox's `shown` (a read-only proxy -> the table it
    # shows) or nil.
    SETTINGS_UPVALUE = -10003
    NULL_UPVALUE = -10004
    SHOWN_UPVALUE = -10005
    # and the output's userdata, once it outgrows the inline buffer (an upvalue rather than a
    # stack slot: the stack then holds exactly what cjson.lua's slot model counts)
    OUTPUT_UPVALUE = -10006

cdef struct Settings:
    int sparse_convert
    int sparse_ratio
    int sparse_safe
    int max_depth
    int invalid_numbers  # 0 off, 1 on, 2 null
    char number_format[8]

cdef const char *_HEX = "0123456789abcdef"


cdef void _put_string(lua_State *L, Output *out, const char *s, size_t size) noexcept nogil:
    """A JSON string: control characters (iscntrl: 0-31 and 127), '"', '\\' and '/' escaped
    as cjson.lua's ESCAPE table has them."""
    cdef size_t i, start = 0
    cdef unsigned char c
    cdef char escape[6]
    _reserve(L, out, size + 2)
    _put_char(L, out, b'"')
    for i in range(size):
        c = <unsigned char>s[i]
        if c >= 32 and c != 127 and c != b'"' and c != b'\\' and c != b'/':
            continue
        _put(L, out, s + start, i - start)
        start = i + 1
        escape[0] = b'\\'
        if c == b'"' or c == b'\\' or c == b'/':
            escape[1] = c
        elif c == 8:
            escape[1] = b'b'
        elif c == 9:
            escape[1] = b't'
        elif c == 10:
            escape[1] = b'n'
        elif c == 12:
            escape[1] = b'f'
        elif c == 13:
            escape[1] = b'r'
        else:
            escape[1] = b'u'
            escape[2] = b'0'
            escape[3] = b'0'
            escape[4] = _HEX[c >> 4]
            escape[5] = _HEX[c & 15]
            _put(L, out, escape, 6)
            continue
        _put(L, out, escape, 2)
    _put(L, out, s + start, size - start)
    _put_char(L, out, b'"')


cdef void _put_number(lua_State *L, Output *out, Settings *settings, double n) noexcept nogil:
    cdef char text[64]
    cdef int size
    if isnan(n) or isinf(n):
        if settings.invalid_numbers == 0:
            mr_raise(L, "Cannot serialise number: must not be NaN or Inf")
        elif settings.invalid_numbers == 1:
            if isnan(n):
                _put(L, out, "nan", 3)  # never "-nan"
                return
        else:
            _put(L, out, "null", 4)
            return
    size = snprintf(text, sizeof(text), settings.number_format, n)
    _put(L, out, text, size)


cdef int _array_length(lua_State *L, int index, Settings *settings) noexcept nogil:
    """cjson.lua's array_length: the array's size, or -1 for "encode as an object"."""
    cdef double key, largest = 0
    cdef int64_t items = 0
    mr_pushnil(L)
    while mr_next(L, index):
        if mr_type(L, -2) == LUA_TNUMBER:
            key = mr_tonumber(L, -2)
            if key != 0 and floor(key) == key and key >= 1:
                if key > largest:
                    # C stores the index in an int: past INT_MAX it becomes INT_MIN.
                    largest = -2147483648.0 if key > INT_MAX else key
                items += 1
                mr_settop(L, -2)
                continue
        mr_settop(L, -3)
        return -1
    if (settings.sparse_ratio > 0
            and largest > <int32_t>(<uint32_t>(items * settings.sparse_ratio))
            and largest > settings.sparse_safe):
        if settings.sparse_convert == 0:
            mr_raise(L, "Cannot serialise table: excessively sparse array")
        return -1
    return <int>largest


cdef void _encode_value(lua_State *L, Output *out, Settings *settings, int depth,
                        int slots) noexcept nogil:
    """Encode the value at the top of the stack (left there); `slots`: the stack slots
    cjson.lua's model counts for lua_checkstack."""
    cdef int kind = mr_type(L, -1)
    cdef size_t size
    cdef const char *text
    cdef int length, i, index
    cdef bint comma
    if kind == LUA_TSTRING:
        text = mr_tolstring(L, -1, &size)
        _put_string(L, out, text, size)
    elif kind == LUA_TNUMBER:
        _put_number(L, out, settings, mr_tonumber(L, -1))
    elif kind == LUA_TBOOLEAN:
        if mr_toboolean(L, -1):
            _put(L, out, "true", 4)
        else:
            _put(L, out, "false", 5)
    elif kind == LUA_TTABLE:
        depth += 1
        # (lua_checkstack(L, 3) refuses exactly what the model does: the stack holds `slots`)
        if depth > settings.max_depth or slots + 3 > MAXCSTACK or not mr_checkstack(L, 3):
            mr_raise(L, "Cannot serialise, excessive nesting (%d)", depth)
        index = mr_gettop(L)
        if mr_getmetatable(L, index):  # perhaps a read-only proxy: encode what it shows
            mr_settop(L, -2)
            if mr_type(L, SHOWN_UPVALUE) != LUA_TNIL:
                mr_pushvalue(L, SHOWN_UPVALUE)
                mr_pushvalue(L, index)
                mr_call(L, 1, 1)
                mr_replace(L, index)
        length = _array_length(L, index, settings)
        if length > 0:
            _put_char(L, out, b'[')
            for i in range(1, length + 1):
                if i > 1:
                    _put_char(L, out, b',')
                mr_rawgeti(L, index, i)
                _encode_value(L, out, settings, depth, slots + 1)
                mr_settop(L, -2)
            _put_char(L, out, b']')
        else:
            _put_char(L, out, b'{')
            comma = False
            mr_pushnil(L)
            while mr_next(L, index):
                if comma:
                    _put_char(L, out, b',')
                comma = True
                kind = mr_type(L, -2)
                if kind == LUA_TNUMBER:
                    _put_char(L, out, b'"')
                    _put_number(L, out, settings, mr_tonumber(L, -2))
                    _put(L, out, "\":", 2)
                elif kind == LUA_TSTRING:
                    text = mr_tolstring(L, -2, &size)
                    _put_string(L, out, text, size)
                    _put_char(L, out, b':')
                else:
                    mr_raise(L, "Cannot serialise %s: table key must be a number or string",
                             mr_typename(L, kind))
                _encode_value(L, out, settings, depth, slots + 2)
                mr_settop(L, -2)
            _put_char(L, out, b'}')
    elif kind == LUA_TNIL or mr_rawequal(L, -1, NULL_UPVALUE):
        _put(L, out, "null", 4)
    else:
        mr_raise(L, "Cannot serialise %s: type not supported", mr_typename(L, kind))


cdef int _setting(lua_State *L, const char *name) noexcept nogil:
    cdef double value
    mr_getfield(L, SETTINGS_UPVALUE, name)
    value = mr_tonumber(L, -1)
    mr_settop(L, -2)
    return <int>value


cdef int _encode(lua_State *L) noexcept nogil:
    cdef Settings settings
    cdef Output out
    cdef int precision
    if mr_gettop(L) != 1:
        mr_argerror(L, 1, "expected 1 argument")
    settings.sparse_convert = _setting(L, "encode_sparse_convert")
    settings.sparse_ratio = _setting(L, "encode_sparse_ratio")
    settings.sparse_safe = _setting(L, "encode_sparse_safe")
    settings.max_depth = _setting(L, "encode_max_depth")
    settings.invalid_numbers = _setting(L, "encode_invalid_numbers")
    precision = _setting(L, "encode_number_precision")  # 1..14
    snprintf(settings.number_format, sizeof(settings.number_format), "%%.%dg", precision)
    _output_start(L, &out, OUTPUT_UPVALUE)
    _encode_value(L, &out, &settings, 0, 1)
    mr_pushlstring(L, out.data, out.size)
    _output_end(L, &out)
    return 1


cdef int _encoder(lua_State *L) noexcept nogil:
    """encoder(settings, null, shown): cjson.encode for that settings table."""
    mr_settop(L, 4)
    mr_pushcclosure(L, _encode, 4)
    return 1


# --- cjson.decode --------------------------------------------------------------------------

cdef enum:
    # The decoder's upvalues: the settings table, cjson.null and its output anchor.
    DECODE_NULL_UPVALUE = -10004
    DECODE_OUTPUT_UPVALUE = -10005

cdef enum TokenType:
    T_OBJ_BEGIN, T_OBJ_END, T_ARR_BEGIN, T_ARR_END, T_STRING, T_NUMBER, T_BOOLEAN, T_NULL,
    T_COLON, T_COMMA, T_END, T_ERROR



cdef const char *_token_name(TokenType type) noexcept nogil:
    if type == T_OBJ_BEGIN:
        return "T_OBJ_BEGIN"
    if type == T_OBJ_END:
        return "T_OBJ_END"
    if type == T_ARR_BEGIN:
        return "T_ARR_BEGIN"
    if type == T_ARR_END:
        return "T_ARR_END"
    if type == T_STRING:
        return "T_STRING"
    if type == T_NUMBER:
        return "T_NUMBER"
    if type == T_BOOLEAN:
        return "T_BOOLEAN"
    if type == T_NULL:
        return "T_NULL"
    if type == T_COLON:
        return "T_COLON"
    if type == T_COMMA:
        return "T_COMMA"
    if type == T_END:
        return "T_END"
    return "T_ERROR"


cdef struct Token:
    TokenType type
    size_t index  # 0-based, where the token starts (T_ERROR: where the scan stopped)
    double number
    bint boolean
    const char *error

cdef struct Parser:
    const char *s  # NUL-terminated at `size` (a Lua string, cut at its first NUL)
    size_t size
    size_t pos  # 0-based
    int depth
    int max_depth
    bint invalid_numbers  # decode_invalid_numbers
    Output out


cdef inline bint _is_digit(char c) noexcept nogil:
    return b'0' <= c <= b'9'


cdef inline int _lower(char c) noexcept nogil:
    return c + 32 if b'A' <= c <= b'Z' else c


cdef bint _word_at(const char *p, const char *word) noexcept nogil:
    """Case-insensitively, does `word` start at p? (p is NUL-terminated)"""
    cdef int i = 0
    while word[i]:
        if _lower(p[i]) != word[i]:
            return False
        i += 1
    return True


cdef bint _is_invalid_number(const char *p) noexcept nogil:
    """json_is_invalid_number(): not strict JSON, though strtod may accept it."""
    if p[0] == b'+':
        return True
    if p[0] == b'-':
        p += 1
    if p[0] == b'0':
        return p[1] == b'x' or p[1] == b'X' or _is_digit(p[1])
    if p[0] == 0 or <unsigned char>p[0] <= b'9':
        return False
    return _word_at(p, "inf") or _word_at(p, "nan")


cdef int _hex4(const char *p) noexcept nogil:
    """The four hex digits at p as a number, or -1."""
    cdef int value = 0, i, digit
    cdef char c
    for i in range(4):
        c = p[i]
        if _is_digit(c):
            digit = c - c'0'
        elif b'a' <= _lower(c) <= b'f':
            digit = _lower(c) - c'a' + 10
        else:
            return -1
        value = value * 16 + digit
    return value


cdef void _put_utf8(lua_State *L, Output *out, int cp) noexcept nogil:
    cdef char text[4]
    cdef int size
    if cp <= 0x7F:
        text[0] = <char>cp
        size = 1
    elif cp <= 0x7FF:
        text[0] = <char>(0xC0 | (cp >> 6))
        text[1] = <char>(0x80 | (cp & 0x3F))
        size = 2
    elif cp <= 0xFFFF:
        text[0] = <char>(0xE0 | (cp >> 12))
        text[1] = <char>(0x80 | ((cp >> 6) & 0x3F))
        text[2] = <char>(0x80 | (cp & 0x3F))
        size = 3
    else:
        text[0] = <char>(0xF0 | (cp >> 18))
        text[1] = <char>(0x80 | ((cp >> 12) & 0x3F))
        text[2] = <char>(0x80 | ((cp >> 6) & 0x3F))
        text[3] = <char>(0x80 | (cp & 0x3F))
        size = 4
    _put(L, out, text, size)


cdef int _unicode_escape(lua_State *L, Parser *st, size_t at) noexcept nogil:
    """json_append_unicode_escape() for the backslash at `at`: the escape's length, or 0."""
    cdef const char *p = st.s + at
    cdef int cp = _hex4(p + 2), low
    cdef int size = 6
    if cp < 0:
        return 0
    if 0xD800 <= cp <= 0xDFFF:
        if cp >= 0xDC00:  # a low surrogate first
            return 0
        if p[6] != b'\\' or p[7] != b'u':
            return 0
        low = _hex4(p + 8)
        if low < 0xDC00 or low > 0xDFFF:
            return 0
        cp = ((cp - 0xD800) << 10) + (low - 0xDC00) + 0x10000
        size = 12
    _put_utf8(L, &st.out, cp)
    return size


cdef void _string_token(lua_State *L, Parser *st, Token *token) noexcept nogil:
    """A string token (pushed on the stack), or T_ERROR."""
    cdef size_t start = st.pos, pos = st.pos + 1, run
    cdef const char *s = st.s
    cdef bint escaped = False
    cdef char c, plain
    cdef int size
    token.index = start
    while True:
        run = pos
        while pos < st.size and s[pos] != b'"' and s[pos] != b'\\':
            pos += 1
        if pos >= st.size:
            token.type = T_ERROR
            token.error = "unexpected end of string"
            token.index = st.size
            return
        if s[pos] == b'"':
            if not escaped:
                mr_pushlstring(L, s + run, pos - run)
            else:
                _put(L, &st.out, s + run, pos - run)
                mr_pushlstring(L, st.out.data, st.out.size)
            st.pos = pos + 1
            token.type = T_STRING
            return
        if not escaped:
            escaped = True
            st.out.size = 0
        _put(L, &st.out, s + run, pos - run)
        c = s[pos + 1]
        if c == b'u':
            size = _unicode_escape(L, st, pos)
            if size == 0:
                token.type = T_ERROR
                token.error = "invalid unicode escape code"
                token.index = pos
                return
            pos += size
            continue
        if c == b'"' or c == b'\\' or c == b'/':
            plain = c
        elif c == b'b':
            plain = 8
        elif c == b't':
            plain = 9
        elif c == b'n':
            plain = 10
        elif c == b'f':
            plain = 12
        elif c == b'r':
            plain = 13
        else:
            token.type = T_ERROR
            token.error = "invalid escape code"
            token.index = pos
            return
        _put_char(L, &st.out, plain)
        pos += 2


cdef void _number_token(Parser *st, Token *token) noexcept nogil:
    cdef char *end
    cdef double value = strtod(st.s + st.pos, &end)
    token.index = st.pos
    if end == st.s + st.pos:
        token.type = T_ERROR
        token.error = "invalid number"
        return
    token.type = T_NUMBER
    token.number = value
    st.pos = end - st.s


cdef void _next_token(lua_State *L, Parser *st, Token *token) noexcept nogil:
    cdef const char *s = st.s
    cdef size_t pos = st.pos
    cdef char c
    while pos < st.size and (s[pos] == b' ' or s[pos] == b'\t' or s[pos] == b'\n'
                             or s[pos] == b'\r'):
        pos += 1
    st.pos = pos
    token.index = pos
    if pos >= st.size:
        token.type = T_END
        return
    c = s[pos]
    if c == b'{' or c == b'}' or c == b'[' or c == b']' or c == b',' or c == b':':
        token.type = (T_OBJ_BEGIN if c == b'{' else T_OBJ_END if c == b'}' else
                      T_ARR_BEGIN if c == b'[' else T_ARR_END if c == b']' else
                      T_COMMA if c == b',' else T_COLON)
        st.pos = pos + 1
        return
    if c == b'"':
        _string_token(L, st, token)
        return
    if c == b'-' or _is_digit(c):
        if not st.invalid_numbers and _is_invalid_number(s + pos):
            token.type = T_ERROR
            token.error = "invalid number"
            return
        _number_token(st, token)
        return
    if strncmp(s + pos, "true", 4) == 0:
        token.type = T_BOOLEAN
        token.boolean = True
        st.pos = pos + 4
    elif strncmp(s + pos, "false", 5) == 0:
        token.type = T_BOOLEAN
        token.boolean = False
        st.pos = pos + 5
    elif strncmp(s + pos, "null", 4) == 0:
        token.type = T_NULL
        st.pos = pos + 4
    elif ((c == b'i' or c == b'I' or c == b'n' or c == b'N' or c == b'+')
          and st.invalid_numbers and _is_invalid_number(s + pos)):
        _number_token(st, token)
    else:
        token.type = T_ERROR
        token.error = "invalid token"


cdef void _parse_error(lua_State *L, const char *expected, Token *token) noexcept nogil:
    mr_raise(L, "Expected %s but found %s at character %d", expected,
             token.error if token.type == T_ERROR else _token_name(token.type),
             <int>(token.index + 1))


cdef void _descend(lua_State *L, Parser *st, int slots, int need) noexcept nogil:
    """json_decode_descend(): the depth limit, and the C stack check for `need` slots (the
    stack holds exactly `slots`: lua_checkstack refuses what the model does)."""
    st.depth += 1
    if st.depth > st.max_depth or slots + need > MAXCSTACK or not mr_checkstack(L, need):
        mr_raise(L, "Found too many nested data structures (%d) at character %d",
                 st.depth, <int>st.pos)


cdef void _parse_object(lua_State *L, Parser *st, int slots) noexcept nogil:
    cdef Token token
    _descend(L, st, slots, 3)
    mr_createtable(L, 0, 0)
    _next_token(L, st, &token)
    if token.type == T_OBJ_END:
        st.depth -= 1
        return
    while True:
        if token.type != T_STRING:
            _parse_error(L, "object key string", &token)
        _next_token(L, st, &token)
        if token.type != T_COLON:
            _parse_error(L, "colon", &token)
        _next_token(L, st, &token)
        _parse_value(L, st, slots + 2, &token)
        mr_settable(L, -3)
        _next_token(L, st, &token)
        if token.type == T_OBJ_END:
            st.depth -= 1
            return
        if token.type != T_COMMA:
            _parse_error(L, "comma or object end", &token)
        _next_token(L, st, &token)


cdef void _parse_array(lua_State *L, Parser *st, int slots) noexcept nogil:
    cdef Token token
    cdef int i = 1
    _descend(L, st, slots, 2)
    mr_createtable(L, 0, 0)
    _next_token(L, st, &token)
    if token.type == T_ARR_END:
        st.depth -= 1
        return
    while True:
        _parse_value(L, st, slots + 1, &token)
        mr_rawseti(L, -2, i)
        _next_token(L, st, &token)
        if token.type == T_ARR_END:
            st.depth -= 1
            return
        if token.type != T_COMMA:
            _parse_error(L, "comma or array end", &token)
        _next_token(L, st, &token)
        i += 1


cdef void _parse_value(lua_State *L, Parser *st, int slots, Token *token) noexcept nogil:
    """Push the value `token` starts (a string token is on the stack already)."""
    if token.type == T_STRING:
        return
    if token.type == T_NUMBER:
        mr_pushnumber(L, token.number)
    elif token.type == T_BOOLEAN:
        mr_pushboolean(L, token.boolean)
    elif token.type == T_OBJ_BEGIN:
        _parse_object(L, st, slots)
    elif token.type == T_ARR_BEGIN:
        _parse_array(L, st, slots)
    elif token.type == T_NULL:
        mr_pushvalue(L, DECODE_NULL_UPVALUE)
    else:
        _parse_error(L, "value", token)


cdef int _decode(lua_State *L) noexcept nogil:
    cdef Parser st
    cdef Token token
    cdef size_t size
    cdef const char *text
    if mr_gettop(L) != 1:
        mr_argerror(L, 1, "expected 1 argument")
    text = mr_checklstring(L, 1, &size)
    if size >= 2 and (text[0] == 0 or text[1] == 0):
        mr_raise(L, "JSON parser does not support UTF-16 or UTF-32")
    st.s = text
    st.size = strlen(text)  # the C parser sees a C string: the first NUL ends the document
    st.pos = 0
    st.depth = 0
    st.max_depth = _setting(L, "decode_max_depth")
    st.invalid_numbers = _setting(L, "decode_invalid_numbers") != 0
    _output_start(L, &st.out, DECODE_OUTPUT_UPVALUE)
    _next_token(L, &st, &token)
    _parse_value(L, &st, 1, &token)
    _next_token(L, &st, &token)
    if token.type != T_END:
        _parse_error(L, "the end", &token)
    _output_end(L, &st.out)
    return 1


cdef int _decoder(lua_State *L) noexcept nogil:
    """decoder(settings, null): cjson.decode for that settings table."""
    mr_settop(L, 3)
    mr_pushcclosure(L, _decode, 3)
    return 1


cdef public int luaopen_minired_cjson(lua_State *L) noexcept nogil:
    """Called through package.loadlib: {encoder = ..., decoder = ...}."""
    mr_createtable(L, 0, 2)
    mr_pushcclosure(L, _encoder, 0)
    mr_setfield(L, -2, "encoder")
    mr_pushcclosure(L, _decoder, 0)
    mr_setfield(L, -2, "decoder")
    return 1


def library(lua):
    """The Lua table luaopen_minired_cjson returns (encoder and decoder, the C functions
    cjson.lua takes in place of its own), made in the lupa runtime `lua`, or None where lupa's
    C API cannot be reached."""
    return c_library(lua, __file__, b"luaopen_minired_cjson") if lua_api_ready() else None
