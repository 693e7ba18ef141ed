# C types for the compiled build of commands/scripting.py (setup.py): EVAL's and
# EVALSHA's handlers take the client typed, so they read its fields as struct members.
from minired.client cimport Client

# (not typed as the engine's extension type: cimporting it would load the scripting engine, and
# lupa, at start-up instead of at the first script)
cdef object _engine(object server)

# Command handlers (cpdef, so registered without a decorator: see commands/table.py's command).
cpdef object evalsha(Client c, list argv)
cpdef object eval_(Client c, list argv)
