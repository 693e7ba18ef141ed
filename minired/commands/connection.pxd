# C types for the compiled build of commands/connection.py (setup.py): PING's handler
# takes the client typed, so it reads the client's fields as struct members.
from minired.engine.client cimport Client
from minired.engine.args cimport parse_int

