# C types for the compiled build of scripting/commands.py (setup.py): EVAL's and
# EVALSHA's handlers take the client typed, so they read its fields as struct members.
from minired.engine.client cimport Client

# (not typed as the engine's extension type: cimporting it would load the scripting engine, and
# lupa, at start-up instead of at the first script)
cdef object _engine(object server)

