"""Exceptions a handler may raise to steer what happens to its job."""


class UnrecoverableError(Exception):
    """Raise from a handler to dead-letter the job now, whatever attempts it has left."""
