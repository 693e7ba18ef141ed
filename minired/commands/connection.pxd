# C types for the compiled build of commands/connection.py (setup.py): PING's handler
# takes the client typed, so it reads the client's fields as struct members.
from minired.client cimport Client
from minired.commands.args cimport parse_int

# Command handlers (cpdef, so registered without a decorator: see commands/table.py's command).
cpdef object ping(Client c, list argv)
