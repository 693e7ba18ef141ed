# C types for the compiled build of sandbox.py (setup.py): the sandbox is an extension type, so
# the script engine enters every EVALSHA through run_cached as a C method. Keep the field list
# equal to Sandbox.__slots__.
cdef class Sandbox:
    cdef public object mode, max_memory, lua, api, run_eval, run_function, _run_load
    cdef public object table_from, native, _native, cap_guard, live_memory, code_memory

    cpdef object run_cached(self, bytes sha, bytes null, object numkeys, list arguments)
