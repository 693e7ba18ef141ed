# C types for the compiled build of commands/server.py (setup.py): TIME's handler takes
# the client typed, so it reads the client's fields as struct members, and splits the clock's
# microseconds in C integers.
cimport cython
from minired.engine.client cimport Client
from minired.engine.args cimport int_text, parse_int

