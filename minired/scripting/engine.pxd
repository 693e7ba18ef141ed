# C types for the compiled build of engine.py (setup.py): the running script and the engine
# are extension types, so each redis.call reads the run's state and the script client as
# struct members and calls dispatch.call as a C function. Keep each field list equal to the
# class's __slots__.
from minired.engine cimport dispatch
from minired.data.keyspace cimport Clock
from minired.engine.client cimport Client
from minired.engine.args cimport parse_int
from minired.scripting.sandbox cimport Sandbox
from minired.engine.table cimport CommandSpec
from minired.engine.server cimport Server
cimport cython

cdef class Script:
    cdef public object sha, body, function, flags

cdef class Run:
    cdef public Client caller
    cdef public object name, eval_mode, read_only, allow_oom, started, dirty, timed_out
    cdef public object abort, command, sandbox, propagate, stale

cdef class ScriptEngine:
    # (typed: redis.call reads the server's fault injector and configuration)
    cdef public Server server
    cdef public object prng, _eval_sandbox, functions, busy, deferred
    cdef public object gc_countdown, cluster
    cdef public dict debugging
    cdef public object debugger, debug_session
    cdef public dict scripts, _specs
    cdef public Run current
    cdef public Client client
    cdef public Clock clock

    @cython.locals(script=Script)
    cpdef object eval(self, Client c, list argv, bint by_sha, bint read_only)
    # Run by every redis.call: the spec and its arity as C values.
    @cython.locals(run=Run, spec=CommandSpec, arity=cython.Py_ssize_t, write=cython.bint,
                   argv=list)
    cpdef object call_native(self, object args)
    @cython.locals(clock=Clock)
    cpdef object execute(self, Run run, Sandbox sandbox, object runner, object function,
                         object numkeys, object arguments, object sha=*)

# Read per EVALSHA: typed, so the lookup is a C call, not a method lookup.
cdef dict _SMALL_COUNTS
cdef Py_ssize_t _UNPACKED_MAX
# Run on every array a redis.call returns.
cpdef bint _all_plain(object items)
