# The monotonic clock commands are timed and placed by, read in C (declarations only: no
# monotonic.py). On Linux, time.perf_counter_ns() is clock_gettime(CLOCK_MONOTONIC); the
# keyspace's Clock reads it twice per command, nested ones included, so the compiled build
# reads it here directly rather than through a Python call (keyspace._C_CLOCK says when).
# The same for the wall clock (time.time_ns() is clock_gettime(CLOCK_REALTIME)), which every
# script's start (its fixed instant) and every new deadline read.
from posix.time cimport CLOCK_MONOTONIC, CLOCK_REALTIME, clock_gettime, timespec


cdef inline long long monotonic_ns() noexcept nogil:
    cdef timespec now
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec * 1000000000LL + now.tv_nsec


cdef inline long long realtime_ns() noexcept nogil:
    cdef timespec now
    clock_gettime(CLOCK_REALTIME, &now)
    return now.tv_sec * 1000000000LL + now.tv_nsec
