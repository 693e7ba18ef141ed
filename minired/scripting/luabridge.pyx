# cython: language_level=3
"""redis.call's way from Lua into Python as a Lua C function, for the compiled build.

lupa calls a Python callable from Lua generically: it builds the argument tuple one
concatenation per argument, a keyword dict, and converts the results with its full type
dispatch - about 6,000 instructions per redis.call before the command runs, the largest
share of a queue job. This C function reads the arguments straight off the Lua stack (numbers
formatted as Redis formats them), calls the engine once with a tuple of bytes, and pushes the
reply's plain values back.

lupa links Lua statically and exports its C API, and its Lua has `package.loadlib`: Lua itself
loads this module's `luaopen_minired_bridge` and hands it the state, and the Lua API is looked
up in lupa's own extension module, so both sides use the one Lua. Where any of that is missing
(another lupa build, the uncompiled install) `native_call` answers None and redis.call stays
on lupa's bridge, which gives the same replies.

The two functions are redis.call and redis.pcall themselves (C functions, as in Redis): they
build the reply's table (an array of plain values, a status or an error) and raise errors.
What crosses back from the engine's `call_native` is one value, or a tuple of bytes, ints,
floats, booleans and None; a reply that needs Lua tables built from Python comes back as
(None, b"py"), and the C function fetches it through lupa from engine.unbox.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_AsLongLong, PyLong_AsDouble
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.math cimport fabs, floor, signbit
from libc.stdio cimport snprintf

import logging
import threading

cdef extern from *:
    """
    #include <dlfcn.h>
    typedef struct lua_State lua_State;
    typedef int (*mr_lua_CFunction)(lua_State *);
    static int (*mr_gettop)(lua_State *);
    static int (*mr_type)(lua_State *, int);
    static const char *(*mr_tolstring)(lua_State *, int, size_t *);
    static double (*mr_tonumber)(lua_State *, int);
    static int (*mr_checkstack)(lua_State *, int);
    static void (*mr_pushlstring)(lua_State *, const char *, size_t);
    static void (*mr_pushnumber)(lua_State *, double);
    static void (*mr_pushboolean)(lua_State *, int);
    static void (*mr_pushnil)(lua_State *);
    static void *(*mr_touserdata)(lua_State *, int);
    static void *(*mr_newuserdata)(lua_State *, size_t);
    static void (*mr_pushcclosure)(lua_State *, mr_lua_CFunction, int);
    static void (*mr_createtable)(lua_State *, int, int);
    static int (*mr_setmetatable)(lua_State *, int);
    static void (*mr_setfield)(lua_State *, int, const char *);
    static void (*mr_rawseti)(lua_State *, int, int);
    static void (*mr_pushvalue)(lua_State *, int);
    static void (*mr_call)(lua_State *, int, int);
    static int (*mr_error)(lua_State *);

    /* NULL when every function was found in the module at `path` (already loaded), else
       the name of what is missing. */
    static const char *mr_find_lua_api(const char *path) {
        void *module = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (module == NULL) return "the lupa module";
    #define MR_FIND(var, name) \
        if ((*(void **)(&var) = dlsym(module, name)) == NULL) return name;
        MR_FIND(mr_gettop, "lua_gettop")
        MR_FIND(mr_type, "lua_type")
        MR_FIND(mr_tolstring, "lua_tolstring")
        MR_FIND(mr_tonumber, "lua_tonumber")
        MR_FIND(mr_checkstack, "lua_checkstack")
        MR_FIND(mr_pushlstring, "lua_pushlstring")
        MR_FIND(mr_pushnumber, "lua_pushnumber")
        MR_FIND(mr_pushboolean, "lua_pushboolean")
        MR_FIND(mr_pushnil, "lua_pushnil")
        MR_FIND(mr_touserdata, "lua_touserdata")
        MR_FIND(mr_newuserdata, "lua_newuserdata")
        MR_FIND(mr_pushcclosure, "lua_pushcclosure")
        MR_FIND(mr_createtable, "lua_createtable")
        MR_FIND(mr_setmetatable, "lua_setmetatable")
        MR_FIND(mr_setfield, "lua_setfield")
        MR_FIND(mr_rawseti, "lua_rawseti")
        MR_FIND(mr_pushvalue, "lua_pushvalue")
        MR_FIND(mr_call, "lua_call")
        MR_FIND(mr_error, "lua_error")
    #undef MR_FIND
        return NULL;
    }
    """
    ctypedef struct lua_State
    ctypedef int (*lua_CFunction "mr_lua_CFunction")(lua_State *) noexcept nogil
    int mr_gettop(lua_State *) nogil
    int mr_type(lua_State *, int) nogil
    const char *mr_tolstring(lua_State *, int, size_t *) nogil
    double mr_tonumber(lua_State *, int) nogil
    int mr_checkstack(lua_State *, int) nogil
    void mr_pushlstring(lua_State *, const char *, size_t) nogil
    void mr_pushnumber(lua_State *, double) nogil
    void mr_pushboolean(lua_State *, int) nogil
    void mr_pushnil(lua_State *) nogil
    void *mr_touserdata(lua_State *, int) nogil
    void *mr_newuserdata(lua_State *, size_t) nogil
    void mr_pushcclosure(lua_State *, lua_CFunction, int) nogil
    void mr_createtable(lua_State *, int, int) nogil
    int mr_setmetatable(lua_State *, int) nogil
    void mr_setfield(lua_State *, int, const char *) nogil
    void mr_rawseti(lua_State *, int, int) nogil
    void mr_pushvalue(lua_State *, int) nogil
    void mr_call(lua_State *, int, int) nogil
    int mr_error(lua_State *) nogil
    const char *mr_find_lua_api(const char *) nogil

cdef enum:
    LUA_TNUMBER = 3
    LUA_TSTRING = 4
    # lua_upvalueindex(1) and (2) in Lua 5.1: LUA_GLOBALSINDEX - i
    HOLDER_UPVALUE = -10003
    UNBOX_UPVALUE = -10004
    # call_native returns at most (True, count, *256 elements)
    MAX_ITEMS = 260

cdef enum ItemKind:
    ITEM_NIL, ITEM_STRING, ITEM_NUMBER, ITEM_BOOLEAN

# What call_native's answer stands for (see ScriptEngine.call_native).
cdef enum Shape:
    SHAPE_VALUE    # one plain value
    SHAPE_ARRAY    # (True, count, *elements): a table of the elements
    SHAPE_STATUS   # (text, b"ok"): {ok = text}
    SHAPE_ERROR    # (text, b"err"): raised as {err = text} (redis.pcall returns it)
    SHAPE_DEFERRED  # (None, b"py"): the Lua value comes from engine.unbox

cdef struct Item:
    ItemKind kind
    const char *data
    Py_ssize_t size
    double number

# What the state's closure holds (a userdata, freed with the state): the NativeCall.
cdef struct Holder:
    PyObject *call

log = logging.getLogger("minired")

_INTERNAL_ERROR = (b"ERR internal error", b"err")
# Inside this range %.17g prints an integral value as %lld does.
cdef double _BIG_INT = 1e17


cdef class NativeCall:
    """The Python end of one Lua state's C redis.call: the engine method it calls, and the
    last reply, kept alive until the next call because its bytes are pushed after the GIL
    is let go (a failing push unwinds the C stack)."""
    cdef object target
    cdef object held

    def __init__(self, target):
        self.target = target
        self.held = None


cdef object _format_number(double value):
    """A Lua number as redis.call's argument: "%.17g", as Redis 7.0 formats it."""
    cdef char buffer[64]
    cdef int length
    if value == floor(value) and fabs(value) < _BIG_INT and not (value == 0 and signbit(value)):
        length = snprintf(buffer, sizeof(buffer), "%lld", <long long>value)  # the same, faster
    else:
        length = snprintf(buffer, sizeof(buffer), "%.17g", value)
    return PyBytes_FromStringAndSize(buffer, length)


cdef tuple _arguments(lua_State *L, int count):
    cdef tuple args = PyTuple_New(count)
    cdef int index, kind
    cdef size_t size
    cdef const char *data
    for index in range(count):
        kind = mr_type(L, index + 1)
        if kind == LUA_TSTRING:
            data = mr_tolstring(L, index + 1, &size)
            arg = PyBytes_FromStringAndSize(data, size)
        elif kind == LUA_TNUMBER:
            arg = _format_number(mr_tonumber(L, index + 1))
        else:
            arg = None  # refused by the engine with Redis's message
        Py_INCREF(arg)
        PyTuple_SET_ITEM(args, index, arg)
    return args


cdef bint _item(object value, Item *item) except -1:
    """Fill item from value; False when value is not a plain value."""
    kind = type(value)
    if kind is bytes:
        item.kind = ITEM_STRING
        item.data = <bytes>value
        item.size = len(<bytes>value)
    elif kind is int:
        item.kind = ITEM_NUMBER
        try:
            item.number = <double>PyLong_AsLongLong(value)
        except OverflowError:
            item.number = PyLong_AsDouble(value)
    elif kind is float:
        item.kind = ITEM_NUMBER
        item.number = <double>value
    elif kind is bool:
        item.kind = ITEM_BOOLEAN
        item.number = 1.0 if value else 0.0
    elif value is None:
        item.kind = ITEM_NIL
    else:
        return False
    return True


cdef int _fill(NativeCall call, object result, Item *items, Shape *shape) except -1:
    """Describe result in items (the array elements, or the one value) and shape."""
    cdef int count = 0, first = 0
    shape[0] = SHAPE_VALUE
    if type(result) is tuple:
        if len(<tuple>result) == 2 and type((<tuple>result)[1]) is bytes:
            kind = (<tuple>result)[1]
            shape[0] = (SHAPE_STATUS if kind == b"ok" else SHAPE_ERROR if kind == b"err"
                        else SHAPE_DEFERRED if kind == b"py" else SHAPE_VALUE)
            if shape[0] == SHAPE_VALUE:
                raise ValueError(f"unknown reply kind {kind!r}")
            if shape[0] == SHAPE_DEFERRED:
                return 0
            result = (<tuple>result)[0]
        elif len(<tuple>result) >= 2 and (<tuple>result)[0] is True:
            shape[0] = SHAPE_ARRAY
            first = 2
        else:
            raise ValueError("unexpected reply tuple")
    if shape[0] == SHAPE_ARRAY:
        if len(<tuple>result) - first > MAX_ITEMS:
            raise ValueError("reply too long for the native bridge")
        for index in range(first, len(<tuple>result)):
            value = (<tuple>result)[index]
            if not _item(value, &items[count]):
                raise TypeError(f"cannot pass {type(value).__name__} to Lua")
            count += 1
    else:
        if not _item(result, &items[0]):
            raise TypeError(f"cannot pass {type(result).__name__} to Lua")
        count = 1
    call.held = result  # keeps the pushed strings alive
    return count


cdef int _call_python(lua_State *L, PyObject *owner, Item *items, Shape *shape) noexcept:
    """With the GIL: run the command and describe its reply; the count of items."""
    cdef NativeCall call = <NativeCall>owner
    try:
        call.held = None
        result = call.target(_arguments(L, mr_gettop(L)))
        return _fill(call, result, items, shape)
    except BaseException:  # nothing may cross into Lua
        log.exception("internal error in redis.call")
        try:
            return _fill(call, _INTERNAL_ERROR, items, shape)
        except BaseException:
            shape[0] = SHAPE_VALUE
            items[0].kind = ITEM_NIL
            return 1


cdef inline void _push(lua_State *L, Item *item) noexcept nogil:
    if item.kind == ITEM_STRING:
        mr_pushlstring(L, item.data, item.size)
    elif item.kind == ITEM_NUMBER:
        mr_pushnumber(L, item.number)
    elif item.kind == ITEM_BOOLEAN:
        mr_pushboolean(L, item.number != 0.0)
    else:
        mr_pushnil(L)


cdef int _reply(lua_State *L, bint raise_errors) noexcept nogil:
    """redis.call (raise_errors) and redis.pcall: the command's reply as the Lua value Redis
    gives scripts (luaRedisGenericCommand and its reply-to-Lua conversion)."""
    cdef Holder *holder = <Holder *>mr_touserdata(L, HOLDER_UPVALUE)
    cdef Item items[MAX_ITEMS]
    cdef Shape shape
    cdef int count, index
    if holder == NULL or holder.call == NULL:
        return 0
    with gil:
        count = _call_python(L, holder.call, items, &shape)
    # From here on the GIL is let go and nothing of Python's is held, so a Lua error raised
    # here (out of memory, or the command's error) unwinds past this frame harmlessly.
    if shape == SHAPE_DEFERRED:
        mr_pushvalue(L, UNBOX_UPVALUE)
        mr_call(L, 0, 1)
        return 1
    if not mr_checkstack(L, 4):
        return 0
    if shape == SHAPE_VALUE:
        _push(L, &items[0])
        return 1
    if shape == SHAPE_ARRAY:
        mr_createtable(L, count, 0)
        for index in range(count):
            _push(L, &items[index])
            mr_rawseti(L, -2, index + 1)
        return 1
    mr_createtable(L, 0, 1)
    _push(L, &items[0])
    if shape == SHAPE_STATUS:
        mr_setfield(L, -2, "ok")
        return 1
    mr_setfield(L, -2, "err")
    if raise_errors:
        mr_error(L)
    return 1


cdef int _redis_call(lua_State *L) noexcept nogil:
    return _reply(L, True)


cdef int _redis_pcall(lua_State *L) noexcept nogil:
    return _reply(L, False)


cdef int _release(lua_State *L) noexcept nogil:
    """__gc of the holder: the state is closing."""
    cdef Holder *holder = <Holder *>mr_touserdata(L, 1)
    if holder != NULL and holder.call != NULL:
        with gil:
            Py_XDECREF(holder.call)
        holder.call = NULL
    return 0


# The NativeCall the next luaopen_minired_bridge takes (set under _opening).
cdef PyObject *_pending = NULL
_opening = threading.Lock()


cdef public int luaopen_minired_bridge(lua_State *L) noexcept nogil:
    """Called through package.loadlib with engine.unbox (as lupa wraps it): redis.call and
    redis.pcall for the pending NativeCall, two C closures over it and unbox."""
    global _pending
    cdef Holder *holder = <Holder *>mr_newuserdata(L, sizeof(Holder))
    holder.call = NULL
    mr_createtable(L, 0, 1)
    mr_pushcclosure(L, _release, 0)
    mr_setfield(L, -2, "__gc")
    mr_setmetatable(L, -2)
    with gil:
        holder.call = _pending  # the reference moves into the holder
        _pending = NULL
    mr_pushvalue(L, -1)
    mr_pushvalue(L, 1)
    mr_pushcclosure(L, _redis_call, 2)
    mr_pushvalue(L, -2)
    mr_pushvalue(L, 1)
    mr_pushcclosure(L, _redis_pcall, 2)
    return 2


cdef bint _api_found = False


def native_call(lua, target, unbox):
    """(redis.call, redis.pcall) as Lua C functions calling target(args tuple) in the lupa
    runtime lua, and unbox() for deferred replies; None where the native bridge cannot work
    here (then lupa's own bridge is used)."""
    global _pending, _api_found
    import lupa.lua51
    if not _api_found:
        if mr_find_lua_api(lupa.lua51.__file__.encode()) != NULL:
            return None
        _api_found = True
    loadlib = lua.eval("package and package.loadlib")
    if loadlib is None:
        return None
    opener = loadlib(__file__.encode(), b"luaopen_minired_bridge")
    if lupa.lua51.lua_type(opener) != "function":
        return None
    call = NativeCall(target)
    with _opening:
        Py_INCREF(call)
        _pending = <PyObject *>call
        try:
            functions = opener(unbox)
        finally:
            Py_XDECREF(_pending)  # still there only if the opener failed
            _pending = NULL
    return functions
