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
up in lupa's own extension module (luaapi.pxd), so both sides use the one Lua. Where any of
that is missing (another lupa build, the uncompiled install) `native_call` answers None and
redis.call stays on lupa's bridge, which gives the same replies.

The two functions are redis.call and redis.pcall themselves (C functions, as in Redis): they
build the reply's table (an array of plain values, a status or an error) and raise errors.
EVAL scripts are entered the same way (NativeCall.run): KEYS and ARGV built in C, the outcome
read off the stack; and a script's table result is encoded as RESP in C (_encode_reply), as
Redis's luaReplyToRedisReply does, instead of element by element in Lua.
The command's arguments go to the engine's `call_native` as a list of bytes (None for what
Redis refuses). What crosses back is one value, a list of bytes and ints (an array), or a
tuple (text, b"ok"|b"err"|b"counted_err"); a reply that needs Lua tables built from Python
comes back as (None, b"py"), and the C function fetches it through lupa from engine.unbox.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_Check, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLong, PyLong_AsDouble
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.math cimport fabs, floor, signbit
from libc.stdio cimport snprintf
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy, strlen

cdef extern from "<string.h>" nogil:
    size_t strnlen(const char *s, size_t maxlen)

import logging
import threading

import lupa.lua51

from minired.protocol.errors import SCRIPT_INTERNAL_ERROR

from minired.scripting.luaapi cimport *

# Lua 5.1's Table (lobject.h) up to the fields _as_made reads, and lua_topointer (which gives
# a table's address), looked up as luaapi.pxd looks up the rest of the API. _check_layout
# makes sure the layout is this Lua's before anything relies on it.
cdef extern from *:
    """
    typedef struct mr_Table {
        void *next; unsigned char tt; unsigned char marked;
        unsigned char flags; unsigned char lsizenode;
        void *metatable; void *array; void *node; void *lastfree; void *gclist;
        int sizearray;
    } mr_Table;
    static const void *(*mr_topointer)(lua_State *, int) = NULL;
    static void mr_find_topointer(const char *path) {
        void *module = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (module != NULL) *(void **)(&mr_topointer) = dlsym(module, "lua_topointer");
    }
    """
    ctypedef struct mr_Table:
        unsigned char flags
        void *metatable
        void *array
        const void *node
        int sizearray
    const void *(*mr_topointer)(lua_State *, int) nogil
    void mr_find_topointer(const char *path) nogil

cdef enum:
    # lua_upvalueindex(1) and (2) in Lua 5.1: LUA_GLOBALSINDEX - i
    HOLDER_UPVALUE = -10003
    UNBOX_UPVALUE = -10004
    # call_native answers arrays of at most 256 elements (engine._UNPACKED_MAX)
    MAX_ITEMS = 256
    # Short arguments kept as bytes between redis.calls (see _argument): slots, a power of
    # two, and the longest text kept.
    KEPT_ARGUMENTS = 64
    KEPT_ARGUMENT_SIZE = 64
    # KEYS and ARGV tables up to this many elements are reused from run to run
    # (_arguments_table)
    KEPT_TABLE = 32

cdef enum ItemKind:
    ITEM_NIL, ITEM_STRING, ITEM_NUMBER, ITEM_BOOLEAN

# What call_native's answer stands for (see ScriptEngine.call_native).
cdef enum Shape:
    SHAPE_VALUE    # one plain value
    SHAPE_ARRAY    # [elements]: a table of them
    SHAPE_STATUS   # (text, b"ok"): {ok = text}
    SHAPE_ERROR    # (text, b"err"): raised as {err = text} (redis.pcall returns it)
    # (text, b"counted_err"): a command's error, or its refusal, already counted in INFO:
    # {err = text, ignore_error_stats_update = true}, as Redis marks it
    SHAPE_COUNTED_ERROR
    SHAPE_DEFERRED  # (None, b"py"): the Lua value comes from engine.unbox

cdef struct Item:
    ItemKind kind
    const char *data
    Py_ssize_t size
    double number

# What the state's closures hold (a userdata, freed with the state): the NativeCall, and the
# buffer script results are encoded in (kept here so that a Lua error raised while the
# encoded reply is pushed, out of memory, cannot leak it).
cdef struct Holder:
    PyObject *call
    char *buffer
    size_t capacity

log = logging.getLogger("minired")

_INTERNAL_ERROR = (SCRIPT_INTERNAL_ERROR.encode(), b"err")
# Inside this range %.17g prints an integral value as %lld does.
cdef double _BIG_INT = 1e17


# What the protected entry (_run_protected) reads and answers.
cdef struct RunCall:
    PyObject *arguments  # a list of bytes: the script's keys and arguments
    PyObject *key
    PyObject *null
    double numkeys
    int run_native, cached, hold  # registry references (see _set_entry)
    bint missing         # set when key names no cached script
    PyObject *outcome    # set on success: a new reference to the outcome tuple
    # KEYS and ARGV of the last run, kept for the next (see _arguments_table): their registry
    # references (NO_REF until made); NULL when this run builds tables of its own.
    int *kept


cdef class NativeCall:
    """The Python end of one Lua state's native bridge.

    redis.call: the engine method the C functions call, and the last reply, kept alive until
    the next call because its bytes are pushed after the GIL is let go (a failing push
    unwinds the C stack).

    The script entry: `run` calls the sandbox's run_native (registered by `set_entry` with the
    table of scripts by sha) on the state's main thread straight from C, as lupa's call
    would, without its generic argument and result conversion, its traceback lookup, and a
    release of the GIL that the script's redis.call would have to take back every time.

    The arguments last read (see _argument): where each Lua string's text was, and its bytes."""
    cdef object target
    cdef object held
    cdef lua_State *state
    cdef int run_native, cached, hold
    cdef const char *kept_text[KEPT_ARGUMENTS]
    cdef PyObject *kept_bytes[KEPT_ARGUMENTS]
    # The KEYS and ARGV tables runs reuse (RunCall.kept), and how many runs are under way
    # (more than one: a script run by a script, which gets tables of its own).
    cdef int kept_tables[2]
    cdef int running

    def __init__(self, target):
        self.target = target
        self.held = None
        self.state = NULL
        self.run_native = self.cached = self.hold = NO_REF
        self.kept_tables[0] = self.kept_tables[1] = NO_REF
        self.running = 0

    def __dealloc__(self):
        cdef int slot
        for slot in range(KEPT_ARGUMENTS):
            Py_XDECREF(self.kept_bytes[slot])
            self.kept_bytes[slot] = NULL

    def run(self, bytes key, bytes null, int numkeys, list arguments):
        """The outcome of run_eval(<the script cached as key>, null, numkeys, *arguments) (run
        through the sandbox's run_native, with KEYS and ARGV built here), or
        None where this cannot run it (no entry yet, an argument not bytes, key not cached):
        then lupa's call must. An outcome holding a table is kept by the sandbox's hold
        function and answered as (True, None, b"pending")."""
        cdef RunCall run
        cdef lua_State *L = self.state
        cdef int top, status
        cdef size_t size
        cdef const char *message
        if L == NULL or self.run_native == NO_REF:
            return None
        for argument in arguments:
            if type(argument) is not bytes:
                return None
        run.arguments = <PyObject *>arguments
        run.key = <PyObject *>key
        run.null = <PyObject *>null
        run.numkeys = numkeys
        run.run_native, run.cached, run.hold = self.run_native, self.cached, self.hold
        run.outcome = NULL
        run.missing = False
        run.kept = self.kept_tables if self.running == 0 and _dummy_node != NULL else NULL
        top = mr_gettop(L)
        self.running += 1
        status = mr_cpcall(L, _run_protected, &run)
        self.running -= 1
        if status == 0 and run.outcome != NULL:
            outcome = <object>run.outcome
            Py_XDECREF(run.outcome)  # the reference _run_protected made, now held by outcome
            mr_settop(L, top)
            return outcome
        if status == 0 and run.missing:
            return None
        if status == 0:  # the script ran; its outcome could not be read (logged)
            mr_settop(L, top)
            raise lupa.lua51.LuaError("internal error reading a script's outcome")
        message = mr_tolstring(L, -1, &size) if mr_type(L, -1) == LUA_TSTRING else NULL
        text = message[:size].decode("utf-8", "replace") if message != NULL else "error"
        mr_settop(L, top)
        raise lupa.lua51.LuaError(text)


cdef inline char *_decimal(char *end, long long value) noexcept nogil:
    """Write value in decimal just before end; where its text starts."""
    cdef bint negative = value < 0
    cdef unsigned long long rest = <unsigned long long>value
    if negative:
        rest = 0ULL - rest  # (as unsigned, so that the lowest value negates too)
    while True:
        end -= 1
        end[0] = <char>(48 + rest % 10)
        rest //= 10
        if rest == 0:
            break
    if negative:
        end -= 1
        end[0] = 45  # '-'
    return end


cdef object _format_integer(long long value):
    cdef char buffer[24]
    cdef char *start = _decimal(buffer + 24, value)
    return PyBytes_FromStringAndSize(start, buffer + 24 - start)


cdef object _format_number(double value):
    """A Lua number as redis.call's argument: "%.17g", as Redis 7.0 formats it."""
    cdef char buffer[64]
    cdef int length
    if value == floor(value) and fabs(value) < _BIG_INT and not (value == 0 and signbit(value)):
        return _format_integer(<long long>value)  # the same digits, without printf's parsing
    else:
        length = snprintf(buffer, sizeof(buffer), "%.17g", value)
    return PyBytes_FromStringAndSize(buffer, length)


cdef object _argument(NativeCall call, const char *text, size_t size):
    """A Lua string argument as bytes. Lua interns its strings, so a script's command names,
    field names and keys come back at the same address call after call: a short one seen
    there lately is answered with the same bytes object, whose hash the command table and the
    keyspace then need not compute again. (The text is compared too: an address can be
    reused by another string once the first is collected.)"""
    cdef size_t slot
    cdef PyObject *kept
    if size > KEPT_ARGUMENT_SIZE:
        return PyBytes_FromStringAndSize(text, size)
    slot = (<size_t>text >> 4) & (KEPT_ARGUMENTS - 1)
    kept = call.kept_bytes[slot]
    if (kept != NULL and call.kept_text[slot] == text
            and <size_t>PyBytes_GET_SIZE(<object>kept) == size
            and memcmp(PyBytes_AS_STRING(<object>kept), text, size) == 0):
        return <object>kept
    value = PyBytes_FromStringAndSize(text, size)
    Py_INCREF(value)
    Py_XDECREF(kept)
    call.kept_bytes[slot] = <PyObject *>value
    call.kept_text[slot] = text
    return value


cdef list _arguments(NativeCall call, lua_State *L, int count):
    cdef list args = PyList_New(count)
    cdef int index, kind
    cdef size_t size
    cdef const char *data
    for index in range(count):
        kind = mr_type(L, index + 1)
        if kind == LUA_TSTRING:
            data = mr_tolstring(L, index + 1, &size)
            arg = _argument(call, data, size)
        elif kind == LUA_TNUMBER:
            arg = _format_number(mr_tonumber(L, index + 1))
        else:
            arg = None  # refused by the engine with Redis's message
        Py_INCREF(arg)
        PyList_SET_ITEM(args, index, arg)
    return args


cdef bint _item(object value, Item *item) except -1:
    """Fill item from value; False when value is not a plain value."""
    kind = type(value)
    if isinstance(value, bytes):  # (a status reply's text is a bytes subclass)
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
    cdef int count = 0
    shape[0] = SHAPE_VALUE
    if type(result) is list:
        if len(<list>result) > MAX_ITEMS:
            raise ValueError("reply too long for the native bridge")
        for value in <list>result:
            if not _item(value, &items[count]):
                raise TypeError(f"cannot pass {type(value).__name__} to Lua")
            count += 1
        shape[0] = SHAPE_ARRAY
        call.held = result  # keeps the pushed strings alive
        return count
    if type(result) is tuple:
        if len(<tuple>result) != 2 or type((<tuple>result)[1]) is not bytes:
            raise ValueError("unexpected reply tuple")
        kind = (<tuple>result)[1]
        shape[0] = (SHAPE_STATUS if kind == b"ok" else SHAPE_ERROR if kind == b"err"
                    else SHAPE_COUNTED_ERROR if kind == b"counted_err"
                    else SHAPE_DEFERRED if kind == b"py" else SHAPE_VALUE)
        if shape[0] == SHAPE_VALUE:
            raise ValueError(f"unknown reply kind {kind!r}")
        if shape[0] == SHAPE_DEFERRED:
            return 0
        result = (<tuple>result)[0]
    if not _item(result, &items[0]):
        raise TypeError(f"cannot pass {type(result).__name__} to Lua")
    call.held = result  # keeps the pushed string alive
    return 1


cdef int _call_python(lua_State *L, PyObject *owner, Item *items, Shape *shape) noexcept:
    """With the GIL: run the command and describe its reply; the count of items."""
    cdef NativeCall call = <NativeCall>owner
    try:
        call.held = None
        result = call.target(_arguments(call, L, mr_gettop(L)))
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
    # The arguments are read: dropped, as Redis drops them, so that the reply has the room a
    # call with thousands of arguments (unpack of a big table) left none for.
    mr_settop(L, 0)
    if shape == SHAPE_DEFERRED:
        mr_pushvalue(L, UNBOX_UPVALUE)
        mr_call(L, 0, 1)
        return 1
    mr_checkstack(L, 4)  # (an empty frame always has LUA_MINSTACK slots)
    if shape == SHAPE_VALUE:
        _push(L, &items[0])
        return 1
    if shape == SHAPE_ARRAY:
        mr_createtable(L, count, 0)
        for index in range(count):
            _push(L, &items[index])
            mr_rawseti(L, -2, index + 1)
        return 1
    mr_createtable(L, 0, 2 if shape == SHAPE_COUNTED_ERROR else 1)
    _push(L, &items[0])
    if shape == SHAPE_STATUS:
        mr_setfield(L, -2, "ok")
        return 1
    mr_setfield(L, -2, "err")
    if shape == SHAPE_COUNTED_ERROR:
        mr_pushboolean(L, 1)
        mr_setfield(L, -2, "ignore_error_stats_update")
    if raise_errors:
        mr_error(L)
    return 1


cdef int _redis_call(lua_State *L) noexcept nogil:
    return _reply(L, True)


cdef int _redis_pcall(lua_State *L) noexcept nogil:
    return _reply(L, False)


cdef object _from_lua(lua_State *L, int index):
    """A value of an outcome as lupa converts it (no tables reach here: _run_protected hands
    an outcome holding one to the sandbox's hold)."""
    cdef int kind = mr_type(L, index)
    cdef size_t size
    cdef const char *data
    cdef double number
    if kind == LUA_TSTRING:
        data = mr_tolstring(L, index, &size)
        return PyBytes_FromStringAndSize(data, size)
    if kind == LUA_TNUMBER:
        number = mr_tonumber(L, index)
        if number == floor(number) and fabs(number) < 9.2e18:
            return <long long>number
        return number
    if kind == LUA_TBOOLEAN:
        return bool(mr_toboolean(L, index))
    if kind == LUA_TNIL:
        return None
    raise TypeError("an outcome value that is not a string, number, boolean or nil")


cdef inline void _fill_arguments(lua_State *L, RunCall *run, Py_ssize_t first,
                                 Py_ssize_t last) noexcept:
    """Set the table on top of the stack's [1..] to the run's arguments first..last-1."""
    cdef Py_ssize_t index
    cdef PyObject *argument
    for index in range(first, last):
        argument = PyList_GET_ITEM(<object>run.arguments, index)
        mr_pushlstring(L, PyBytes_AS_STRING(<object>argument), PyBytes_GET_SIZE(<object>argument))
        mr_rawseti(L, -2, <int>(index - first + 1))


cdef void _arguments_table(lua_State *L, RunCall *run, int table, Py_ssize_t first,
                           Py_ssize_t last) noexcept:
    """Push KEYS (table 0) or ARGV (table 1) holding the run's arguments first..last-1.

    Each run used to get two new tables, built at their size (lua_createtable(n, 0)): over
    half of the garbage an EVALSHA of a small script leaves (~180 of ~310 bytes), which the
    collections every GARBAGE_BOUND of it (sandbox.py's settle_garbage, each a walk of the
    whole heap) pay for. So the last run's table is refilled instead, where no script can
    tell it from a new one: no script keeps a reference past its run (the globals and the
    libraries are read-only), and the table is reused only while it is still laid out as
    lua_createtable(n, 0) makes one (_as_made: n array slots, no hash part, no metatable),
    so that a script that changed it (a key added or removed, even put back) gets a new one
    and `#` of a table with holes answers as on a new table. Not kept: tables of more than
    KEPT_TABLE elements (a large one would stay in the heap every collection walks), those
    of a script run from inside a script, and any where the layout cannot be read
    (_check_layout)."""
    cdef int n = <int>(last - first)
    if run.kept == NULL or n > KEPT_TABLE:
        mr_createtable(L, n, 0)
        _fill_arguments(L, run, first, last)
        return
    if run.kept[table] != NO_REF:
        mr_rawgeti(L, LUA_REGISTRYINDEX, run.kept[table])
        if _as_made(<mr_Table *>mr_topointer(L, -1), n):
            _fill_arguments(L, run, first, last)
            return
        mr_settop(L, -2)
    # A new table, kept in the registry for the next run.
    mr_createtable(L, n, 0)
    _fill_arguments(L, run, first, last)
    mr_pushvalue(L, -1)
    if run.kept[table] == NO_REF:
        run.kept[table] = mr_ref(L, LUA_REGISTRYINDEX)
    else:
        mr_rawseti(L, LUA_REGISTRYINDEX, run.kept[table])


cdef inline bint _as_made(mr_Table *t, int n) noexcept nogil:
    """Whether t is laid out as lua_createtable(n, 0) makes a table (its elements aside):
    then after 1..n are set, nothing else of it differs from a new one's. (The metamethod
    cache, for a table used as a metatable, is reset to a new table's: none of its keys
    names a metamethod.)"""
    if t.sizearray != n or t.node != _dummy_node or t.metatable != NULL:
        return False
    t.flags = 0xFF
    return True


# The hash part of every table that has none (Lua 5.1's dummynode), once _check_layout has
# read it; NULL while reuse is off.
cdef const void *_dummy_node = NULL


cdef void _check_layout(lua_State *L) noexcept nogil:
    """Read the node of an empty table, with checks that this Lua lays its tables out as
    mr_Table says (lupa's Lua 5.1): else _dummy_node stays NULL and KEYS and ARGV are new
    tables every run."""
    global _dummy_node
    cdef mr_Table *sized
    cdef mr_Table *empty
    cdef mr_Table *hashed
    if _dummy_node != NULL or mr_topointer == NULL or not mr_checkstack(L, 4):
        return
    mr_createtable(L, 3, 0)
    mr_createtable(L, 0, 0)
    mr_createtable(L, 0, 1)
    sized = <mr_Table *>mr_topointer(L, -3)
    empty = <mr_Table *>mr_topointer(L, -2)
    hashed = <mr_Table *>mr_topointer(L, -1)
    if (sized.sizearray == 3 and empty.sizearray == 0 and hashed.sizearray == 0
            and sized.node == empty.node and hashed.node != empty.node and sized.node != NULL
            and sized.metatable == NULL and sized.flags == 0xFF and sized.array != NULL
            and empty.array == NULL):
        _dummy_node = empty.node
    mr_settop(L, -4)


cdef int _run_protected(lua_State *L) noexcept:
    """lua_cpcall's function, with the GIL held: push run_native, the cached script and the
    arguments, call it, and convert the outcome. A Lua error (out of memory) unwinds to
    lua_cpcall; until the call returns nothing but borrowed references is held here."""
    cdef RunCall *run = <RunCall *>mr_touserdata(L, 1)
    cdef Py_ssize_t count = PyList_GET_SIZE(<object>run.arguments)
    cdef Py_ssize_t index, keys, first, last
    cdef int table, kind
    cdef int base, results, position
    if not mr_checkstack(L, 8):  # (each argument goes into its table as it is pushed)
        run.missing = True
        return 0
    base = mr_gettop(L)
    mr_rawgeti(L, LUA_REGISTRYINDEX, run.run_native)
    mr_rawgeti(L, LUA_REGISTRYINDEX, run.cached)
    mr_pushlstring(L, PyBytes_AS_STRING(<object>run.key), PyBytes_GET_SIZE(<object>run.key))
    mr_rawget(L, -2)
    mr_remove(L, -2)
    if mr_type(L, -1) == LUA_TNIL:
        run.missing = True
        return 0
    mr_pushlstring(L, PyBytes_AS_STRING(<object>run.null), PyBytes_GET_SIZE(<object>run.null))
    # KEYS and ARGV as the two tables run_native takes.
    keys = <Py_ssize_t>run.numkeys
    for table in range(2):
        first = 0 if table == 0 else keys
        last = keys if table == 0 else count
        _arguments_table(L, run, table, first, last)
    mr_call(L, 4, LUA_MULTRET)  # run_native(fn, null, KEYS, ARGV)
    results = mr_gettop(L) - base
    for position in range(base + 1, base + 1 + results):
        kind = mr_type(L, position)
        # Tables, and the values only lupa converts (a script may return a function or a
        # coroutine: Redis answers nil), go the general way.
        if not (kind == LUA_TSTRING or kind == LUA_TNUMBER or kind == LUA_TNIL
                or kind == LUA_TBOOLEAN):
            mr_rawgeti(L, LUA_REGISTRYINDEX, run.hold)
            mr_insert(L, base + 1)
            mr_call(L, results, 0)
            mr_pushboolean(L, 1)
            mr_pushnil(L)
            mr_pushlstring(L, "pending", 7)
            results = 3
            break
    try:
        outcome = PyTuple_New(results)
        for index in range(results):
            value = _from_lua(L, base + 1 + <int>index)
            Py_INCREF(value)
            PyTuple_SET_ITEM(outcome, index, value)
        Py_INCREF(outcome)
        run.outcome = <PyObject *>outcome
    except BaseException:
        log.exception("internal error reading a script's outcome")
    return 0


# A script's table result as RESP, as Redis's luaReplyToRedisReply writes it, where plain
# RESP2/RESP3-common frames carry it: arrays (up to the first nil), strings, numbers (cast to
# long long), booleans of a RESP2 script, and status tables below the top. Anything else (an
# error, double, big number, verbatim, map or set table, a RESP3 boolean, nesting deeper than
# MAX_ENCODED_DEPTH, far from Redis's stack limit) leaves the whole result to sandbox.lua's
# encode_value, which writes every shape and limit.
cdef enum:
    MAX_ENCODED_DEPTH = 32
    # The encoder's upvalues: the holder, then the names of the fields that give a table a
    # reply shape of its own, "ok" last.
    SHAPE_FIELDS = 7
    FIELD_UPVALUE = -10004  # lua_upvalueindex(2)
    # A buffer grown past this is let go after the reply, not kept for the next one.
    KEPT_BUFFER = 1 << 20

cdef extern from *:
    """
    static const char *mr_shape_fields[] = {
        "err", "double", "big_number", "verbatim_string", "map", "set", "ok"};
    """
    const char *mr_shape_fields[]


cdef struct Encoding:
    Holder *holder
    size_t used
    const char *null  # the client's null frame
    size_t null_size
    bint resp2        # the script's protocol (booleans are RESP2 integers)


cdef bint _put(Encoding *out, const char *data, size_t size) noexcept nogil:
    cdef Holder *holder = out.holder
    cdef size_t capacity
    cdef char *grown
    if out.used + size > holder.capacity:
        capacity = holder.capacity if holder.capacity else 4096
        while capacity < out.used + size:
            capacity *= 2
        grown = <char *>realloc(holder.buffer, capacity)
        if grown == NULL:
            return False
        holder.buffer = grown
        holder.capacity = capacity
    memcpy(holder.buffer + out.used, data, size)
    out.used += size
    return True


cdef bint _put_header(Encoding *out, char kind, long long value) noexcept nogil:
    """kind, value in decimal, CRLF: an array's or a bulk string's length, or an integer."""
    cdef char text[24]
    cdef char *start
    text[22] = 13
    text[23] = 10
    start = _decimal(text + 22, value) - 1
    start[0] = kind
    return _put(out, start, text + 24 - start)


cdef bint _put_status(Encoding *out, const char *text, size_t size) noexcept nogil:
    """+text CRLF, the text's CR and LF turned into spaces (Redis's sdsmapchars); the text
    ends at a NUL byte, as Redis reads it (sdsnew(lua_tostring))."""
    cdef size_t start = out.used, i
    size = strnlen(text, size)
    if not (_put(out, "+", 1) and _put(out, text, size) and _put(out, "\r\n", 2)):
        return False
    for i in range(start + 1, start + 1 + size):
        if out.holder.buffer[i] == 13 or out.holder.buffer[i] == 10:
            out.holder.buffer[i] = 32
    return True


cdef bint _encode_table(lua_State *L, Encoding *out, int depth) noexcept nogil:
    """Append the table on top of the stack (left there); False where the general path must
    encode the result."""
    cdef int table = mr_gettop(L), field, kind, count = 0, index
    cdef size_t size
    cdef const char *data
    cdef bint done
    if not mr_checkstack(L, 2):
        return False
    for field in range(SHAPE_FIELDS):
        mr_pushvalue(L, FIELD_UPVALUE - field)
        mr_rawget(L, table)
        kind = mr_type(L, -1)
        if kind != LUA_TNIL:
            # Only a status below the top is a plain frame (finish_reply answers one at the top).
            done = (field == SHAPE_FIELDS - 1 and kind == LUA_TSTRING and depth > 0)
            if done:
                data = mr_tolstring(L, -1, &size)
                done = _put_status(out, data, size)
            mr_settop(L, table)
            return done
        mr_settop(L, table)
    while True:
        mr_rawgeti(L, table, count + 1)
        kind = mr_type(L, -1)
        mr_settop(L, table)
        if kind == LUA_TNIL:
            break
        count += 1
    if not _put_header(out, 42, count):  # '*'
        return False
    for index in range(1, count + 1):
        mr_rawgeti(L, table, index)
        kind = mr_type(L, -1)
        if kind == LUA_TSTRING:
            data = mr_tolstring(L, -1, &size)
            done = (_put_header(out, 36, <long long>size) and _put(out, data, size)  # '$'
                    and _put(out, "\r\n", 2))
        elif kind == LUA_TNUMBER:
            done = _put_header(out, 58, <long long>mr_tonumber(L, -1))  # ':'
        elif kind == LUA_TTABLE:
            done = depth < MAX_ENCODED_DEPTH and _encode_table(L, out, depth + 1)
        elif kind == LUA_TBOOLEAN:
            if not out.resp2:
                done = False
            elif mr_toboolean(L, -1):
                done = _put(out, ":1\r\n", 4)
            else:
                done = _put(out, out.null, out.null_size)
        else:  # a function, a coroutine, userdata: no reply Redis knows
            done = _put(out, out.null, out.null_size)
        mr_settop(L, table)
        if not done:
            return False
    return True


cdef int _encode_reply(lua_State *L) noexcept nogil:
    """encode(table, null, script_resp): the table's reply as a RESP string, or nothing where
    the general path must convert it (see _encode_table)."""
    cdef Holder *holder = <Holder *>mr_touserdata(L, HOLDER_UPVALUE)
    cdef Encoding out
    cdef bint encoded
    if holder == NULL or mr_type(L, 1) != LUA_TTABLE or mr_type(L, 2) != LUA_TSTRING:
        return 0
    out.holder = holder
    out.used = 0
    out.null = mr_tolstring(L, 2, &out.null_size)
    out.resp2 = mr_tonumber(L, 3) == 2
    mr_settop(L, 3)
    mr_pushvalue(L, 1)
    encoded = _encode_table(L, &out, 0)
    if encoded:
        mr_pushlstring(L, holder.buffer, out.used)  # (may raise: out of memory)
    if holder.capacity > KEPT_BUFFER:
        free(holder.buffer)
        holder.buffer = NULL
        holder.capacity = 0
    return 1 if encoded else 0


cdef int _set_entry(lua_State *L) noexcept nogil:
    """Called once (through lupa) with the sandbox's run_native, its table of EVAL scripts by
    sha, and the function that keeps an outcome holding tables: NativeCall.run's entry."""
    cdef Holder *holder = <Holder *>mr_touserdata(L, HOLDER_UPVALUE)
    cdef int run_native, cached, hold
    mr_settop(L, 3)
    _check_layout(L)
    hold = mr_ref(L, LUA_REGISTRYINDEX)  # (each takes the value on top)
    cached = mr_ref(L, LUA_REGISTRYINDEX)
    run_native = mr_ref(L, LUA_REGISTRYINDEX)
    if holder != NULL and holder.call != NULL:
        with gil:
            (<NativeCall>holder.call).state = L
            (<NativeCall>holder.call).run_native = run_native
            (<NativeCall>holder.call).cached = cached
            (<NativeCall>holder.call).hold = hold
    return 0


cdef int _release(lua_State *L) noexcept nogil:
    """__gc of the holder: the state is closing."""
    cdef Holder *holder = <Holder *>mr_touserdata(L, 1)
    if holder == NULL:
        return 0
    free(holder.buffer)
    holder.buffer = NULL
    holder.capacity = 0
    if holder.call != NULL:
        with gil:
            (<NativeCall>holder.call).state = NULL  # run() must not touch a closed state
            Py_XDECREF(holder.call)
        holder.call = NULL
    return 0


# The NativeCall the next luaopen_minired_bridge takes (set under _opening).
cdef PyObject *_pending = NULL
_opening = threading.Lock()


cdef public int luaopen_minired_bridge(lua_State *L) noexcept nogil:
    """Called through package.loadlib with engine.unbox (as lupa wraps it): redis.call and
    redis.pcall for the pending NativeCall, two C closures over it and unbox, the function
    that registers the script entry, and the encoder of script results."""
    global _pending
    cdef Holder *holder = <Holder *>mr_newuserdata(L, sizeof(Holder))
    cdef int field
    holder.call = NULL
    holder.buffer = NULL
    holder.capacity = 0
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
    mr_pushvalue(L, -3)
    mr_pushcclosure(L, _set_entry, 1)
    # (13 slots at most: a C function is given LUA_MINSTACK, 20)
    mr_pushvalue(L, -4)
    for field in range(SHAPE_FIELDS):
        mr_pushlstring(L, mr_shape_fields[field], strlen(mr_shape_fields[field]))
    mr_pushcclosure(L, _encode_reply, 1 + SHAPE_FIELDS)
    return 4


def native_call(lua, target, unbox):
    """(redis.call, redis.pcall, set_entry, encode, NativeCall) for the lupa runtime lua: Lua
    C functions calling target(args tuple), with unbox() for deferred replies, the native
    script entry and result encoder; None where the native bridge cannot work here (then
    lupa's is used)."""
    global _pending
    if not lua_api_ready():
        return None
    if mr_topointer == NULL:
        mr_find_topointer(lupa.lua51.__file__.encode())
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
    return (*functions, call)
