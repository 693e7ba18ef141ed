"""The AOF's records: commands in RESP (and `#` annotation lines), written and replayed.

resp.encode_command writes one record; read_records parses a file's records, telling a tail cut
short (Truncated) from bytes that are no command (BadFormat); Loader replays them into a
server through its command table, as Redis's loadSingleAppendOnlyFile does with its fake
client. The replication stream (replication.py) is made of the same records.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Iterator

from minired.data.keyspace import Clock
from minired.engine import dispatch
from minired.engine.client import Client
from minired.engine.table import uncounted_stats
from minired.features.persist_files import LoadError
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.server import Server

log = logging.getLogger("minired")

LEGACY_OBJECT_COMMAND = b"minired-object"


def timestamp_annotation(seconds: int) -> bytes:
    """The `#TS:<unix time>` line of aof-timestamp-enabled (genAofTimestampAnnotationIfNeeded);
    loading skips it, redis-check-aof --truncate-to-timestamp cuts at it."""
    return b"#TS:%d\r\n" % seconds


class ReplicaOnly(list):
    """A record for the replicas and not the AOF (PUBLISH, as Redis's PROPAGATE_REPL)."""


class AofOnly(list):
    """A record for the AOF and not the replicas (a script's write after
    redis.set_repl(redis.REPL_AOF), as Redis's PROPAGATE_AOF)."""


class Truncated(Exception):
    """The data ends inside a record: `offset` is where the last complete record ended."""

    def __init__(self, offset: int) -> None:
        super().__init__(offset)
        self.offset = offset


class BadFormat(Exception):
    """A record that is not RESP (and not cut short): the file is not an AOF."""

    def __init__(self, offset: int) -> None:
        super().__init__(offset)
        self.offset = offset


def _header(data: bytes, pos: int, mark: int, start: int) -> tuple[int, int]:
    """A `*<count>` or `$<length>` line at pos (mark: the byte it starts with): its number and
    where the line after it starts. Truncated or BadFormat name the record's start."""
    if data[pos] != mark:
        raise BadFormat(start)
    nl = data.find(b"\r\n", pos)
    if nl < 0:
        raise Truncated(start)
    try:
        return int(data[pos + 1:nl]), nl + 2
    except ValueError:
        raise BadFormat(start) from None


def read_records(data: bytes, pos: int = 0) -> Iterator[tuple[int, Any]]:
    """(end offset, record) for each record: bytes for an annotation line (without '#'),
    a list of arguments for a command. Raises Truncated at an incomplete tail, BadFormat at
    bytes that are no command."""
    n = len(data)
    while pos < n:
        start = pos
        if data[pos] == 35:  # '#'
            nl = data.find(b"\n", pos)
            if nl < 0:
                raise Truncated(start)
            yield nl + 1, data[pos + 1:nl].rstrip(b"\r")
            pos = nl + 1
            continue
        count, pos = _header(data, pos, 42, start)  # '*'
        if count < 1:
            raise BadFormat(start)
        argv = []
        for _ in range(count):
            if pos >= n:
                raise Truncated(start)
            size, pos = _header(data, pos, 36, start)  # '$'
            if pos + size + 2 > n:
                raise Truncated(start)
            if data[pos + size:pos + size + 2] != b"\r\n":
                raise BadFormat(start)
            argv.append(data[pos:pos + size])
            pos += size + 2
        yield pos, argv


class _StillClock(Clock):
    """A clock that reads one instant: the time an earlier minired logged before the commands
    after it (see Loader._annotation)."""

    __slots__ = ("at_ms",)

    def __init__(self, at_ms: int, loading: bool = False) -> None:
        super().__init__()
        self.at_ms = at_ms
        self.loading = loading

    def ms(self) -> int:
        return self.at_ms

    def us(self) -> int:
        return self.at_ms * 1000

    def command_instant(self) -> int:
        return self.at_ms


# --- replaying commands --------------------------------------------------------------------------

class Loader:
    """Replays an AOF's commands into a server through its command table, as one internal
    client that never blocks.

    While it replays, the databases read a clock of their own that stands at the epoch, so no
    key expires and no TTL counts as already past (Redis's keyIsExpired and checkAlreadyExpired
    answer no while loading): the file logs expiries as absolute times and the deletions they
    led to as DELs, and a key whose time passed since is expired once the server runs. A
    relative TTL (an AOF of Redis 6) counts from now, as in Redis. Files of earlier minired
    (`#MS:<unix ms>` lines before relative TTLs) set both clocks to the time each
    command ran at."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.client = Client(server)
        self.client.authenticated = True
        self.client.in_exec = True  # blocking commands answer at once instead of waiting
        # Obeyed as a master's link is (mustObeyClient): a replica's read-only state, or a
        # refusal of writes, never stops the file's writes, scripts' included.
        self.client.flags = "M"
        # Replayed commands are not calls INFO counts (commandstats, total_commands_processed),
        # as in Redis, which leaves statistics alone while loading the AOF.
        self.client.command_stats = uncounted_stats()
        self.commands = 0
        self.clock = Clock()
        self.clock.offset_ms = -self.clock.ms()
        self.server_clock = server.clock

    def load(self, data: bytes, name: str, pos: int = 0) -> tuple[int, bool]:
        """Apply every complete record from `pos`: (offset up to which the data was used, whether
        it ended cut short). An unfinished MULTI at the end is left out (its offset not counted).
        Raises LoadError at bytes that are no command, or an unknown command, as Redis does."""
        dbs = self.server.keyspace.dbs
        clocks = [db.clock for db in dbs]
        saved_offset = self.server.clock.offset_ms
        for db in dbs:
            db.clock = self.clock
        # (and the server's clock says it is loading: Redis's server.loading)
        self.server.clock.loading = True
        transaction: list | None = None
        good = pos
        truncated = False
        try:
            try:
                for end, record in read_records(data, pos):
                    if isinstance(record, bytes):
                        self._annotation(record)
                        if transaction is None:
                            good = end
                        continue
                    name_ = record[0].lower()
                    if name_ == b"multi":
                        transaction = []
                    elif name_ == b"exec" and transaction is not None:
                        for argv in transaction:
                            self.apply(argv, name)
                        transaction = None
                        good = end
                    elif transaction is not None:
                        transaction.append(record)
                    else:
                        self.apply(record, name)
                        good = end
            except Truncated:
                truncated = True
            except BadFormat:
                raise LoadError(f"Bad file format reading the append only file {name}: make a "
                                "backup of your AOF file, then use ./redis-check-aof --fix "
                                "<filename.manifest>") from None
            if transaction is not None:
                log.warning("Revert incomplete MULTI/EXEC transaction in AOF file %s", name)
                truncated = True
        finally:
            for db, clock in zip(dbs, clocks):
                db.clock = clock
            self.server.clock = self.server_clock
            self.server.clock.offset_ms = saved_offset
            self.server.clock.loading = False
        return good, truncated

    def _annotation(self, record: bytes) -> None:
        # Earlier minired's own lines: the time the commands after them ran at, for
        # their relative TTLs and their expiries alike. (Redis's `#TS:` lines, in seconds, are
        # skipped, as Redis skips them.)
        if record.startswith(b"MS:") or record.startswith(b"TS:") and int(record[3:]) > 10**11:
            logged_at = int(record[3:])
            # The commands read a clock that stands at that instant, so a TTL counts from it
            # exactly (an offset from the running time would let a millisecond pass between
            # this line and the command). Whatever holds the server's clock itself (scripts)
            # gets the same time as an offset.
            self.clock = _StillClock(logged_at)
            for db in self.server.keyspace.dbs:
                db.clock = self.clock
            self.server.clock = _StillClock(logged_at, loading=True)
            self.server_clock.offset_ms = logged_at - self.server_clock.ms() + \
                self.server_clock.offset_ms

    def apply(self, argv: list, name: str) -> None:
        self.commands += 1
        if argv[0].lower() == LEGACY_OBJECT_COMMAND:
            self._restore_legacy_object(argv)
            return
        spec = dispatch.resolve(argv)
        if isinstance(spec, RedisError):
            raise LoadError("Unknown command '%s' reading the append only file %s"
                            % (argv[0].decode("utf-8", "replace"), name))
        reply = dispatch.call(self.client, spec, argv)
        if isinstance(reply, RedisError):  # Redis replays on and ignores the reply too
            log.debug("AOF replay of %r answered %s", argv[:2], reply.message)

    def _restore_legacy_object(self, argv: list) -> None:
        import pickle  # only the snapshot format of minired < 10 wrote these (streams)

        _, key, deadline, blob = argv
        db = self.client.db
        db.set(key, pickle.loads(blob))
        if int(deadline):
            db.set_expiry(key, int(deadline))
