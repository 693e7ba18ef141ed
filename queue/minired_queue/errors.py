"""Exceptions a handler may raise to steer what happens to its job."""


class UnrecoverableError(Exception):
    """Raise from a handler to dead-letter the job now, whatever attempts it has left."""


class UnreadableJobError(UnrecoverableError):
    """A fetched job whose stored record cannot be read (a field that is not an integer or
    not JSON, written by hand or by a client not keeping to the protocol). The worker fails
    it at once, without running the handler, instead of dying on it."""
