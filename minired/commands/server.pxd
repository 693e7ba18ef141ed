# C types for the compiled build of commands/server.py (setup.py): TIME's handler takes
# the client typed, so it reads the client's fields as struct members, and splits the clock's
# microseconds in C integers.
cimport cython
from minired.client cimport Client
from minired.commands.args cimport int_text, parse_int

# Command handlers (cpdef, so registered without a decorator: see commands/table.py's command).
@cython.locals(now=cython.longlong, seconds=cython.longlong, micros=cython.longlong)
cpdef object time_(Client c, list argv)
