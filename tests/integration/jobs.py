"""Job handlers the libraries' workers import by dotted path (tests.integration.jobs.<name>),
also from forked or spawned worker processes: they keep no state in memory."""
from __future__ import annotations

import os


class JobFailure(Exception):
    """The error a failing handler raises, so tests can recognise it in the failure record."""


def add(a: int, b: int) -> int:
    return a + b


def fail(message: str) -> None:
    raise JobFailure(message)


def fail_first_attempt(marker_path: str) -> str:
    """Raise on the first call for this marker, succeed on every later one: a retried job
    succeeds. The marker is a file so attempts made in other worker processes count too."""
    try:
        fd = os.open(marker_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return "recovered"
    os.close(fd)
    raise JobFailure("first attempt fails")


def record_order(path: str, label: str) -> str:
    """Append label to a file, so tests can see the order in which a worker ran jobs."""
    with open(path, "a") as fh:
        fh.write(label + "\n")
    return label


def read_order(path: str) -> list[str]:
    with open(path) as fh:
        return fh.read().split()


def total(values: list[int]) -> int:
    return sum(values)
