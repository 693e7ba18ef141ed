"""minired: an in-memory Redis-protocol server in Python."""

__version__ = "0.1.0"
# The Redis release whose replies, error texts and INFO fields minired matches.
REDIS_VERSION = "7.0.15"
# Redis's LL_VERBOSE as a logging level: between debug and notice (INFO). server_log shows it
# as `-`; every layer may log at it.
LOG_VERBOSE = 15


def _prefer_edited_sources() -> None:
    """Hot modules may be compiled (see setup.py) and sit beside their .py files, which the
    import system then never reads. A module whose .py no longer matches what was compiled
    (edited in a checkout since the last install) is loaded from the .py instead."""
    import os
    import sys
    import zlib

    package = os.path.dirname(os.path.abspath(__file__))
    try:
        with open(os.path.join(package, "_compiled.txt")) as f:
            record = [line.split() for line in f]
    except OSError:
        return  # not compiled
    root = os.path.dirname(package)
    types = [(path, checksum) for path, checksum in record if path.endswith(".pxd")]
    record = [(name, checksum) for name, checksum in record if not name.endswith(".pxd")]
    # A module written in Cython itself (a .pyx) has no Python source to fall back to: stale,
    # it is not importable at all (None), and its importers do without it.
    sources = {}
    for name, _ in record:
        source = os.path.join(root, *name.split(".")) + ".py"
        sources[name] = source if os.path.exists(source) else source + "x"
    from minired._sources import pure_python_asked

    stale = {}
    if pure_python_asked():
        # The uncompiled build on demand, from the same install: CI runs the suite both ways.
        stale = {name: sources[name] for name, _ in record}
    elif any(_checksum(os.path.join(root, *path.split("/"))) not in (None, int(checksum))
           for path, checksum in types):  # (a .pxd that is not there was not edited)
        # An edited .pxd: the compiled modules may disagree on each other's types.
        stale = {name: sources[name] for name, _ in record}
    for name, checksum in record:
        if name in stale:
            continue
        try:
            with open(sources[name], "rb") as f:
                if zlib.crc32(f.read()) == int(checksum):
                    continue
        except OSError:
            continue
        stale[name] = sources[name]
    stale = {name: None if source.endswith(".pyx") else source for name, source in stale.items()}
    if stale:
        _add_dependents(stale, [name for name, _ in record], os.path.dirname(package))
        from minired._sources import SourceOverStaleExtension
        sys.meta_path.insert(0, SourceOverStaleExtension(stale))


def _checksum(path: str) -> int | None:
    import zlib

    try:
        with open(path, "rb") as f:
            return zlib.crc32(f.read())
    except OSError:
        return None


def _add_dependents(stale: dict[str, str], compiled: list[str], root: str) -> None:
    """A compiled module that cimports a stale one (its .pxd says `from minired.x cimport`)
    was built against the extension type of the compiled original and cannot import the
    source version, so it is loaded from source too."""
    import os
    import re

    cimports = {}
    for name in compiled:
        try:
            with open(os.path.join(root, *name.split(".")) + ".pxd") as f:
                found = re.findall(r"^from\s+([\w.]+)\s+cimport\s+([\w, ]+)", f.read(), re.M)
        except OSError:
            continue
        # "from minired.engine.client cimport Client" needs minired.engine.client; "from minired cimport
        # dispatch, resp" needs minired.engine.dispatch and minired.protocol.resp.
        cimports[name] = {module for package, names in found
                          for module in (package, *(f"{package}.{n.strip()}"
                                                    for n in names.split(",")))}
    grew = True
    while grew:
        grew = False
        for name, needs in cimports.items():
            if name not in stale and needs & stale.keys():
                stale[name] = os.path.join(root, *name.split(".")) + ".py"
                grew = True


def _stand_in_for_cython() -> None:
    """`import cython` in the modules with C types finds minired._cython when Cython is not
    installed (see there): one fallback for all of them, looked up only when one asks."""
    import sys

    from minired._sources import CythonStandIn

    sys.meta_path.append(CythonStandIn())


_prefer_edited_sources()
_stand_in_for_cython()
