# C types for the compiled build of dispatch.py (setup.py): with the client typed, the checks
# every command passes through read the client's fields directly (see client.pxd).
from minired.client cimport Client

cpdef object execute(Client c, list argv)
cpdef object call(Client c, object spec, list argv)
