"""maxclients and the process's open files limit, as Redis's adjustOpenFilesLimit: at start-up
and on CONFIG SET maxclients, RLIMIT_NOFILE is raised to maxclients + 32 (the descriptors
Redis keeps for itself) or as near as the system allows; what cannot be reached lowers
maxclients (at start-up) or refuses the CONFIG SET, naming the maxclients that would fit.
"""
from __future__ import annotations

import errno
import logging
import os

log = logging.getLogger("minired")

RESERVED_FDS = 32  # CONFIG_MIN_RESERVED_FDS
_STEP = 16  # adjustOpenFilesLimit lowers its attempt by this much each time


def adjust_limit(config) -> int:
    """Raise the open files limit for `config`'s maxclients: the maxclients the limit now
    allows (maxclients itself when it was, or could be made, enough), logged as Redis does."""
    maxclients = config.maxclients
    wanted = (maxclients + RESERVED_FDS) & 0xFFFFFFFF  # (rlim_t from an unsigned int sum)
    try:
        if os.sysconf("SC_OPEN_MAX") >= wanted:
            return maxclients  # (the soft limit, read without loading `resource`: the usual case)
        import resource
    except (ValueError, OSError, ImportError):  # (not a Unix: no limit to adjust)
        return maxclients
    try:
        old, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError) as exc:
        log.warning("Unable to obtain the current NOFILE limit (%s), assuming 1024 and "
                    "setting the max clients configuration accordingly.", exc)
        return 1024 - RESERVED_FDS
    if old == resource.RLIM_INFINITY or old >= wanted:
        return maxclients
    best, failure = _highest_settable(wanted, old)
    if best < wanted:
        log.warning("You requested maxclients of %d requiring at least %d max file "
                    "descriptors.", maxclients, wanted)
        log.warning("Server can't set maximum open files to %d because of OS error: %s.",
                    wanted, failure)
        log.warning("Current maximum open files is %d. maxclients has been reduced to %d to "
                    "compensate for low ulimit. If you need higher maxclients increase "
                    "'ulimit -n'.", best, best - RESERVED_FDS)
        return best - RESERVED_FDS
    log.info("Increased maximum number of open files to %d (it was originally set to %d).",
             wanted, old)
    return maxclients


def _highest_settable(wanted: int, old: int) -> tuple[int, str]:
    """Redis tries `wanted`, then 16 less, and so on while above the current limit, and keeps
    the first the system accepts (as the soft and the hard limit), else the current limit.
    The system accepts any value up to the hard limit, or up to fs.nr_open for a privileged
    process, so the first accepted is the highest of the walk under one of those bounds:
    tried directly (Redis's walk down from a huge maxclients is millions of calls, and an
    accepted value lowers the hard limit for good, so nothing else may be tried first)."""
    import resource

    failure = _try_limit(wanted)
    if failure is None:
        return wanted, ""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for bound in (_nr_open(), hard):
        if bound is None or bound == resource.RLIM_INFINITY or bound >= wanted:
            continue
        candidate = wanted - -(-(wanted - bound) // _STEP) * _STEP  # the walk's first <= bound
        if candidate <= old:
            break
        refused = _try_limit(candidate)
        if refused is None:
            return candidate, failure
    return old, failure


def _nr_open() -> int | None:
    """The most a privileged process may raise its limit to (Linux's fs.nr_open)."""
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _try_limit(limit: int) -> str | None:
    """Set the soft and hard limits to `limit`: None if accepted, else the reason."""
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    except ValueError:  # (CPython's word for EPERM and EINVAL)
        return os.strerror(errno.EPERM)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def adjust_at_start(config) -> None:
    """initServer's call: a maxclients the limit cannot reach is lowered to what it allows."""
    fitting = adjust_limit(config)
    if fitting != config.maxclients:
        config.set("maxclients", fitting)
