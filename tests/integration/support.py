"""Helpers shared by the library tests."""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

_TERMINATION_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signal_handlers_restored() -> Iterator[None]:
    """Workers built to own their process (RQ, huey's consumer) claim SIGINT/SIGTERM/SIGHUP;
    give them back to pytest when the worker is done."""
    saved = {signum: signal.getsignal(signum) for signum in _TERMINATION_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
