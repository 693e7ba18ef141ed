"""The files persistence writes: whole, fsynced, and swapped in atomically.

Every snapshot, AOF base and manifest goes to a temporary file that is fsynced, renamed over
the old one and the directory fsynced (temp-<pid>.rdb, as rdbSave does): a crash at any moment
leaves the old file or the new one. LoadError is what start-up stops on when the files that
are there cannot be loaded in full.
"""
from __future__ import annotations

import os
from typing import Iterator


class LoadError(Exception):
    """Start-up must stop: the data on disk cannot be loaded in full. str() is Redis's log line."""


def write_synced(path: str, chunks: Iterator[bytes]) -> int:
    """Write the chunks to `path` and fsync it; on any failure remove what was written."""
    size = 0
    try:
        with open(path, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
                size += len(chunk)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    return size


def write_atomically(path: str, chunks: Iterator[bytes], temp_name: str | None = None) -> int:
    """Write to a temporary file next to `path`, fsync it, rename it over `path`, fsync the
    directory: a crash leaves either the old file or the new one, never a mix."""
    directory = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(directory, temp_name or f"temp-{os.getpid()}.rdb")
    size = write_synced(temp, chunks)
    try:
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    fsync_directory(directory)
    return size


def fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
