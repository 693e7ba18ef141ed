# Lua's C API as the native bridge (luabridge.pyx) reaches it: lupa links Lua statically, so
# each function is looked up in lupa's own extension module (mr_find_lua_api, through
# lua_api_ready) and called through a pointer, and both sides use the one Lua. The constants
# are Lua 5.1's (lua.h).
cdef extern from *:
    """
    #include <dlfcn.h>
    #include <stddef.h>
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
    static int (*mr_toboolean)(lua_State *, int);
    static void (*mr_rawgeti)(lua_State *, int, int);
    static int (*mr_ref)(lua_State *, int);
    static int (*mr_cpcall)(lua_State *, mr_lua_CFunction, void *);
    static void (*mr_settop)(lua_State *, int);
    static void (*mr_rawget)(lua_State *, int);
    static void (*mr_remove)(lua_State *, int);
    static void (*mr_insert)(lua_State *, int);
    static void (*mr_settable)(lua_State *, int);
    static const char *(*mr_checklstring)(lua_State *, int, size_t *);
    static ptrdiff_t (*mr_checkinteger)(lua_State *, int);
    static ptrdiff_t (*mr_optinteger)(lua_State *, int, ptrdiff_t);
    static int (*mr_raise)(lua_State *, const char *, ...);
    static int (*mr_next)(lua_State *, int);
    static int (*mr_getmetatable)(lua_State *, int);
    static int (*mr_rawequal)(lua_State *, int, int);
    static void (*mr_replace)(lua_State *, int);
    static void (*mr_getfield)(lua_State *, int, const char *);
    static const char *(*mr_typename)(lua_State *, int);
    static int (*mr_argerror)(lua_State *, int, const char *);
    static size_t (*mr_objlen)(lua_State *, int);
    static void (*mr_gettable)(lua_State *, int);

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
        MR_FIND(mr_toboolean, "lua_toboolean")
        MR_FIND(mr_rawgeti, "lua_rawgeti")
        MR_FIND(mr_ref, "luaL_ref")
        MR_FIND(mr_cpcall, "lua_cpcall")
        MR_FIND(mr_settop, "lua_settop")
        MR_FIND(mr_rawget, "lua_rawget")
        MR_FIND(mr_remove, "lua_remove")
        MR_FIND(mr_insert, "lua_insert")
        MR_FIND(mr_settable, "lua_settable")
        MR_FIND(mr_checklstring, "luaL_checklstring")
        MR_FIND(mr_checkinteger, "luaL_checkinteger")
        MR_FIND(mr_optinteger, "luaL_optinteger")
        MR_FIND(mr_raise, "luaL_error")
        MR_FIND(mr_next, "lua_next")
        MR_FIND(mr_getmetatable, "lua_getmetatable")
        MR_FIND(mr_rawequal, "lua_rawequal")
        MR_FIND(mr_replace, "lua_replace")
        MR_FIND(mr_getfield, "lua_getfield")
        MR_FIND(mr_typename, "lua_typename")
        MR_FIND(mr_argerror, "luaL_argerror")
        MR_FIND(mr_objlen, "lua_objlen")
        MR_FIND(mr_gettable, "lua_gettable")
    #undef MR_FIND
        return NULL;
    }
    /* Every module that cimports this file has its own copy of the pointers above, which it
       fills once: 1 once found, -1 where they cannot be (then it never tries again). */
    static int mr_lua_api_state = 0;
    static int mr_lua_api_ready(const char *path) {
        if (mr_lua_api_state == 0) mr_lua_api_state = mr_find_lua_api(path) == NULL ? 1 : -1;
        return mr_lua_api_state == 1;
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
    int mr_toboolean(lua_State *, int) nogil
    void mr_rawgeti(lua_State *, int, int) nogil
    int mr_ref(lua_State *, int) nogil
    # The protected entry runs with the GIL held (no Python thread switch mid-script setup).
    ctypedef int (*lua_CFunction_gil "mr_lua_CFunction")(lua_State *) noexcept
    int mr_cpcall(lua_State *, lua_CFunction_gil, void *) nogil
    void mr_settop(lua_State *, int) nogil
    void mr_rawget(lua_State *, int) nogil
    void mr_remove(lua_State *, int) nogil
    void mr_insert(lua_State *, int) nogil
    void mr_settable(lua_State *, int) nogil
    # luaL_checklstring, luaL_checkinteger, luaL_optinteger (a lua_Integer is a ptrdiff_t)
    const char *mr_checklstring(lua_State *, int, size_t *) nogil
    ptrdiff_t mr_checkinteger(lua_State *, int) nogil
    ptrdiff_t mr_optinteger(lua_State *, int, ptrdiff_t) nogil
    # luaL_error: the message after the position of the Lua line that called the C function
    int mr_raise(lua_State *, const char *, ...) nogil
    int mr_next(lua_State *, int) nogil
    int mr_getmetatable(lua_State *, int) nogil
    int mr_rawequal(lua_State *, int, int) nogil
    void mr_replace(lua_State *, int) nogil
    void mr_getfield(lua_State *, int, const char *) nogil
    const char *mr_typename(lua_State *, int) nogil
    int mr_argerror(lua_State *, int, const char *) nogil
    size_t mr_objlen(lua_State *, int) nogil
    void mr_gettable(lua_State *, int) nogil
    bint mr_lua_api_ready(const char *) nogil

cdef enum:
    LUA_TNIL = 0
    LUA_TBOOLEAN = 1
    LUA_TNUMBER = 3
    LUA_TSTRING = 4
    LUA_TTABLE = 5
    LUA_TLIGHTUSERDATA = 2
    LUA_REGISTRYINDEX = -10000
    LUA_MULTRET = -1
    NO_REF = -2


cdef inline bint lua_api_ready() except -1:
    """Whether this module reaches lupa's Lua C API: its pointers filled from lupa's own
    extension module, the first time it asks."""
    import lupa.lua51
    return mr_lua_api_ready(lupa.lua51.__file__.encode())
