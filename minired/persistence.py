"""Optional persistence for local development: an append-only file and snapshots. Off by default.

Both files hold the same thing, Redis commands in RESP (a real redis-server reads the AOF's
commands too), plus annotation lines starting with `#`:

    #minired-snapshot 1                      first line of a snapshot / rewritten AOF
    #TS:<unix ms>                            the server clock when the commands below ran
    *3\r\n$6\r\nSELECT\r\n...                  SELECT, RESTORE key <abs-ms> <DUMP payload> ABSTTL, ...
    *4\r\n$14\r\nMINIRED-OBJECT\r\n...         key <abs-ms> <pickle>: a value DUMP cannot encode

Append-only file (`--appendonly yes`, `--dir`, `--appendfilename`): every successful write
command is appended as it ran, after a `#TS` line whenever the clock moved, so replay sees the
same time the original did (lazy expiry, XADD ids, relative TTLs all come out the same).
Commands whose effect is not a function of the log are rewritten: TTLs are pinned with
PEXPIREAT, SPOP becomes SREM of what it popped, XADD `*` gets the id it generated. The writes
of one EXEC or script are wrapped in MULTI/EXEC so a torn tail never half-applies them; a
blocking command is logged when it is served, at the point its data exists. `appendfsync`:
`always` writes and fsyncs before the reply leaves, `everysec` writes every 100 ms and fsyncs
every second, `no` writes every 100 ms and leaves fsync to the OS. On start the file is
replayed (a truncated tail is cut off, as Redis's aof-load-truncated) and rewritten compacted;
it is compacted again whenever it doubles past 64 MB.

Snapshots (`SAVE`, `BGSAVE`, `SHUTDOWN SAVE`, `--save "<seconds> <changes> ..."`, and SIGTERM
when save points are set) go to `--dir`/`--dbfilename` through a temporary file that is
fsynced and renamed over the old one. SAVE and BGSAVE are served once any of `--appendonly yes`,
`--save` or `--dir` is given, and refused as memory-only otherwise. BGSAVE writes the
snapshot on the event loop right after replying (no fork). With the AOF on, the AOF is what is
loaded on start, as in Redis.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any, Iterator

from . import dispatch, errors
from .blocking import Block
from .client import Client
from .commands.keys_dump import dump_payload
from .errors import RedisError

if TYPE_CHECKING:
    from .commands.table import CommandSpec
    from .server import Server

log = logging.getLogger("minired")

SNAPSHOT_HEADER = b"#minired-snapshot 1\n"
OBJECT_COMMAND = b"MINIRED-OBJECT"
TICK_SECONDS = 0.1
REWRITE_MIN_SIZE = 64 * 1024 * 1024

# Write commands whose TTL is relative to "now" (or set by an option): pinned with PEXPIREAT.
_TTL_SETTERS = frozenset({b"set", b"setex", b"psetex", b"getex", b"restore"})
_EXPIRE_FAMILY = frozenset({b"expire", b"pexpire", b"expireat", b"pexpireat"})


# --- RESP records --------------------------------------------------------------------------------

def encode_command(argv: list) -> bytes:
    out = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        if not isinstance(arg, bytes):
            arg = str(arg).encode()
        out.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
    return b"".join(out)


class Truncated(Exception):
    """The file ends inside a record: `offset` is where the last complete record ended."""

    def __init__(self, offset: int) -> None:
        super().__init__(offset)
        self.offset = offset


def read_records(data: bytes) -> Iterator[tuple[int, Any]]:
    """(end offset, record) for each record: bytes for an annotation line (without '#'),
    a list of arguments for a command. Raises Truncated at an incomplete or garbled tail."""
    pos, n = 0, len(data)
    while pos < n:
        start = pos
        if data[pos] == 35:  # '#'
            nl = data.find(b"\n", pos)
            if nl < 0:
                raise Truncated(start)
            yield nl + 1, data[pos + 1:nl].rstrip(b"\r")
            pos = nl + 1
            continue
        try:
            nl = data.index(b"\r\n", pos)
            if data[pos] != 42:  # '*'
                raise ValueError
            count = int(data[pos + 1:nl])
            pos = nl + 2
            argv = []
            for _ in range(count):
                nl = data.index(b"\r\n", pos)
                if data[pos] != 36:  # '$'
                    raise ValueError
                size = int(data[pos + 1:nl])
                pos = nl + 2
                if pos + size + 2 > n or data[pos + size:pos + size + 2] != b"\r\n":
                    raise ValueError
                argv.append(data[pos:pos + size])
                pos += size + 2
        except ValueError:
            raise Truncated(start) from None
        yield pos, argv


# --- loading -------------------------------------------------------------------------------------

class Loader:
    """Replays records into a server through its command table, on the clock they were
    recorded at, as one internal client that never blocks."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.client = Client(server)
        self.client.authenticated = True
        self.client.in_exec = True  # blocking commands answer at once instead of waiting
        self.commands = 0

    def load(self, data: bytes) -> int:
        """Apply every complete record; returns the offset up to which the data was used (a
        torn MULTI block at the tail is left out)."""
        clock = self.server.clock
        saved_offset = clock.offset_ms
        transaction: list | None = None
        good = 0
        try:
            try:
                for end, record in read_records(data):
                    if isinstance(record, bytes):
                        if record.startswith(b"TS:"):
                            clock.offset_ms = int(record[3:]) - int(time.time() * 1000)
                        if transaction is None:
                            good = end
                        continue
                    name = record[0].lower() if record else b""
                    if name == b"multi":
                        transaction = []
                    elif name == b"exec" and transaction is not None:
                        for argv in transaction:
                            self.apply(argv)
                        transaction = None
                        good = end
                    elif transaction is not None:
                        transaction.append(record)
                    else:
                        self.apply(record)
                        good = end
            except Truncated:
                pass
        finally:
            clock.offset_ms = saved_offset
        return good

    def apply(self, argv: list) -> None:
        self.commands += 1
        if argv[0].lower() == OBJECT_COMMAND.lower():
            self._restore_object(argv)
            return
        spec = dispatch.resolve(argv)
        if isinstance(spec, RedisError):
            log.warning("persistence: skipping %r: %s", argv[:1], spec.message)
            return
        reply = dispatch.call(self.client, spec, argv)
        if isinstance(reply, RedisError):
            log.warning("persistence: replaying %r failed: %s", argv[:2], reply.message)

    def _restore_object(self, argv: list) -> None:
        import pickle  # only for values DUMP cannot encode; kept off the start-up path

        _, key, deadline, blob = argv
        db = self.client.db
        db.set(key, pickle.loads(blob))
        if int(deadline):
            db.set_expiry(key, int(deadline))


# --- writing snapshots ---------------------------------------------------------------------------

def snapshot_records(server: "Server") -> Iterator[bytes]:
    """The whole dataset as records that recreate it, TTLs as absolute times."""
    yield SNAPSHOT_HEADER
    yield b"#TS:%d\n" % server.clock.ms()
    for db in server.keyspace.dbs:
        if not db.data:
            continue
        yield encode_command([b"SELECT", b"%d" % db.index])
        for key in db.keys():  # live keys only
            value = db.data[key]
            deadline = db.expires.get(key, 0)
            try:
                payload = dump_payload(value)
            except RedisError:  # a type without a DUMP encoding (streams)
                import pickle

                yield encode_command([OBJECT_COMMAND, key, b"%d" % deadline,
                                      pickle.dumps(value, pickle.HIGHEST_PROTOCOL)])
                continue
            yield encode_command([b"RESTORE", key, b"%d" % deadline, payload, b"ABSTTL"])


def write_atomically(path: str, chunks: Iterator[bytes]) -> int:
    """Write to a temporary file next to `path`, fsync it, rename it over `path`, fsync the
    directory: a crash leaves either the old file or the new one, never a mix."""
    directory = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(directory, f"temp-{os.getpid()}-{os.path.basename(path)}")
    size = 0
    with open(temp, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
            size += len(chunk)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return size


def parse_save_points(text: str) -> list[tuple[int, int]]:
    parts = text.split()
    return [(int(parts[i]), int(parts[i + 1])) for i in range(0, len(parts) - 1, 2)]


# --- the subsystem -------------------------------------------------------------------------------

class Persistence:
    """Serves SAVE/BGSAVE/SHUTDOWN SAVE (commands/server.py) and keeps the AOF."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.config = server.config
        self.dirty = 0  # write commands since the last snapshot
        self.last_save_attempt = 0.0
        self.last_save_ok = True
        self.background_save_pending = False
        self.saves = 0  # INFO rdb_saves
        self.last_background_save_seconds = -1  # INFO rdb_last_bgsave_time_sec (-1: none yet)
        self.aof_file: Any = None
        self.aof_path = ""
        self.aof_base_size = 0
        self.aof_buffer: list[bytes] = []
        self.aof_db = -1
        self.aof_ts = -1
        self.aof_transaction_client: Client | None = None
        self.last_fsync = time.monotonic()
        self.fsync_mode = ""
        self._blocked: dict[int, tuple[int, list]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self.stopped = False

    # --- paths ---------------------------------------------------------------------------------

    def _path(self, name_param: str) -> str:
        return os.path.join(self.config.get("dir") or ".", self.config.get(name_param) or "")

    @property
    def snapshot_path(self) -> str:
        return self._path("dbfilename")

    # --- start-up ------------------------------------------------------------------------------

    def load_on_start(self) -> None:
        appendonly = self.config.get("appendonly") == "yes"
        path = self._path("appendfilename") if appendonly else self.snapshot_path
        if not os.path.exists(path):
            return
        with open(path, "rb") as f:
            data = f.read()
        started = time.monotonic()
        loader = Loader(self.server)
        used = loader.load(data)
        if used < len(data):
            log.warning("persistence: %s ends with an incomplete record; loaded the first %d of "
                        "%d bytes", path, used, len(data))
            if appendonly:
                with open(path, "r+b") as f:
                    f.truncate(used)
        log.info("DB loaded from %s: %d commands in %.3f seconds", path, loader.commands,
                 time.monotonic() - started)

    # --- snapshots (the interface commands/server.py uses) ---------------------------------------

    def save(self) -> None:
        self.background_save_pending = False  # this snapshot is at least as fresh
        self.last_save_attempt = time.monotonic()
        try:
            size = write_atomically(self.snapshot_path, snapshot_records(self.server))
        except OSError as exc:
            self.last_save_ok = False
            log.warning("Failed saving the DB to %s: %s", self.snapshot_path, exc)
            raise RedisError(errors.SAVE_FAILED) from None
        self.last_save_ok = True
        self.saves += 1
        self.dirty = 0
        self.server.last_save = int(time.time())
        log.info("DB saved on disk (%s, %d bytes)", self.snapshot_path, size)

    def background_save(self, schedule: bool) -> str:
        # SCHEDULE only matters while an AOF rewrite runs, and minired's never runs in the
        # background: like Redis then, a second BGSAVE is refused either way.
        if self.background_save_pending:
            raise RedisError(errors.BGSAVE_IN_PROGRESS)
        self.background_save_pending = True
        if self.server.loop is None:  # a server driven in-process, with no loop running
            self._background_save_now()
        else:
            self.server.loop.call_soon(self._background_save_now)
        return "Background saving started"

    def _background_save_now(self) -> None:
        if not self.background_save_pending:
            return  # a SAVE or SHUTDOWN got there first
        started = int(time.time())  # whole seconds on the wall clock, as Redis's time(NULL)
        try:
            self.save()
        except RedisError:
            pass  # logged by save()
        self.last_background_save_seconds = int(time.time()) - started

    # --- the write path --------------------------------------------------------------------------

    def propagate(self, c: Client, spec: "CommandSpec", argv: list, reply: Any) -> None:
        """dispatch.call hook for every successful write command."""
        if type(reply) is Block:
            self._blocked[c.id] = (c.db_index, argv)  # logged once served, see _served
            return
        self.dirty += 1
        if self.aof_file is not None:
            self._log(c, spec.name.encode(), argv, reply, c.in_exec or c.in_script)

    def _served(self, waiter: Any, reply: Any) -> None:
        """BlockingManager.on_finish: a blocked command that gets its data is logged as it
        stands, now that replaying it finds that data and does not block."""
        entry = self._blocked.pop(waiter.client.id, None)
        if (entry is not None and reply is not waiter.block.timeout_reply
                and type(reply) is not RedisError):
            self.dirty += 1
            if self.aof_file is not None:
                db_index, argv = entry
                self._append_command(db_index, argv, False, waiter.client)

    def _forget_client(self, client: Client) -> None:
        self._blocked.pop(client.id, None)

    def _log(self, c: Client, name: bytes, argv: list, reply: Any, atomic: bool) -> None:
        db = c.db
        if name in _EXPIRE_FAMILY:
            if reply != 1:
                return
            key = argv[1]
            deadline = db.expires.get(key)
            argv = [b"PEXPIREAT", key, b"%d" % deadline] if deadline is not None else [b"DEL", key]
        elif name == b"spop":
            members = [reply] if isinstance(reply, bytes) else list(reply or ())
            if not members:
                return
            argv = [b"SREM", argv[1], *members]
        elif name == b"xadd" and isinstance(reply, bytes):
            argv = _xadd_with_id(argv, reply)
        self._append_command(c.db_index, argv, atomic, c)
        if name in _TTL_SETTERS:
            deadline = db.expires.get(argv[1])
            if deadline is not None:
                self._append_command(c.db_index, [b"PEXPIREAT", argv[1], b"%d" % deadline], atomic, c)

    def _append_command(self, db_index: int, argv: list, atomic: bool, c: Client) -> None:
        buffer = self.aof_buffer
        if atomic:
            if self.aof_transaction_client is not c:
                self._close_transaction()
                buffer.append(b"*1\r\n$5\r\nMULTI\r\n")
                self.aof_transaction_client = c
        elif self.aof_transaction_client is not None:
            self._close_transaction()
        now = self.server.clock.ms()
        if now != self.aof_ts:
            buffer.append(b"#TS:%d\n" % now)
            self.aof_ts = now
        if db_index != self.aof_db:
            buffer.append(encode_command([b"SELECT", b"%d" % db_index]))
            self.aof_db = db_index
        buffer.append(encode_command(argv))

    def _close_transaction(self) -> None:
        if self.aof_transaction_client is not None:
            self.aof_buffer.append(b"*1\r\n$4\r\nEXEC\r\n")
            self.aof_transaction_client = None

    # --- the AOF file ----------------------------------------------------------------------------

    def enable_aof(self) -> None:
        """Start logging: the current data becomes the file's base, then writes are appended."""
        self.aof_path = self._path("appendfilename")
        self.aof_base_size = write_atomically(self.aof_path, snapshot_records(self.server))
        self.aof_file = open(self.aof_path, "ab", buffering=0)
        self.aof_db = -1
        self.aof_ts = -1
        log.info("Append only file enabled: %s", self.aof_path)

    def disable_aof(self) -> None:
        if self.aof_file is not None:
            self.flush_aof(fsync=True)
            self.aof_file.close()
            self.aof_file = None
            log.info("Append only file disabled")

    def flush_aof(self, fsync: bool) -> None:
        """Write what was logged since the last flush (closing an EXEC block that ended)."""
        file = self.aof_file
        if file is None:
            return
        self._close_transaction()
        if self.aof_buffer:
            data = b"".join(self.aof_buffer)
            self.aof_buffer.clear()
            view = memoryview(data)
            while view:
                written = file.write(view)
                view = view[written:]
        if fsync:
            os.fsync(file.fileno())
            self.last_fsync = time.monotonic()

    def sync_before_reply(self) -> None:
        """appendfsync always: a client hears back only about writes already on disk."""
        if self.aof_buffer:
            self.flush_aof(fsync=True)

    def _maybe_rewrite_aof(self) -> None:
        size = self.aof_file.tell() if self.aof_file is not None else 0
        if size > REWRITE_MIN_SIZE and size > 2 * self.aof_base_size:
            log.info("Rewriting the append only file (%d bytes, base %d)", size, self.aof_base_size)
            self.disable_aof()
            self.enable_aof()

    # --- the periodic tick -----------------------------------------------------------------------

    def reconcile(self) -> None:
        """Follow CONFIG SET appendonly/appendfsync/save: install the hooks they need (and only
        those: with both off, the write path pays one attribute check)."""
        server = self.server
        wants_aof = self.config.get("appendonly") == "yes"
        if wants_aof and self.aof_file is None:
            try:
                self.enable_aof()
            except OSError as exc:
                log.warning("Can't open the append-only file %s: %s", self.aof_path, exc)
        elif not wants_aof and self.aof_file is not None:
            self.disable_aof()
        self.fsync_mode = self.config.get("appendfsync") or "everysec"
        logging_on = self.aof_file is not None
        server.sync_before_reply = (self.sync_before_reply
                                    if logging_on and self.fsync_mode == "always" else None)
        counting = logging_on or bool(self.config.get("save"))
        # SAVE/BGSAVE are served once the user asked for files: AOF, save points, or a --dir.
        # Otherwise minired stays memory-only and commands/server.py says so.
        if counting or (self.config.get("dir") or ".") != ".":
            server.extensions["persistence"] = self
        else:
            server.extensions.pop("persistence", None)
        server.propagate = self.propagate if counting else None
        server.blocking.on_finish = self._served if counting else None

    def tick(self) -> None:
        try:
            self.reconcile()
            if self.aof_file is not None:
                fsync = (self.fsync_mode == "everysec"
                         and time.monotonic() - self.last_fsync >= 1.0)
                self.flush_aof(fsync=fsync)
                self._maybe_rewrite_aof()
            self._check_save_points()
        except Exception:
            log.exception("persistence tick failed")
        self._schedule()

    def _check_save_points(self) -> None:
        if not self.dirty or self.background_save_pending:
            return
        now = time.monotonic()
        # After a failed save, wait a few seconds before trying again, as Redis does.
        if not self.last_save_ok and now - self.last_save_attempt < 5:
            return
        elapsed = time.time() - self.server.last_save
        for seconds, changes in parse_save_points(self.config.get("save") or ""):
            if self.dirty >= changes and elapsed >= seconds:
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                try:
                    self.save()
                except RedisError:
                    pass  # logged by save(); retried after the delay above
                return

    def _schedule(self) -> None:
        # First called by the server's start hook: a server driven in-process without a loop
        # (the benchmarks' harnesses) never ticks, and needs no current loop in its thread.
        if not self.stopped and self.server.loop is not None:
            self._timer = self.server.loop.call_later(TICK_SECONDS, self.tick)

    def on_shutdown(self) -> None:
        self.stopped = True
        if self._timer is not None:
            self._timer.cancel()
        if self.aof_file is not None:
            self.disable_aof()
        # SHUTDOWN already saved (or was told NOSAVE); a signal saves when save points are set.
        by_command = self.server.extensions.pop("shutdown_by_command", False)
        if not by_command and self.config.get("save") and self.dirty:
            try:
                self.save()
            except RedisError:
                pass


def _xadd_with_id(argv: list, generated: bytes) -> list:
    """XADD argv with its `*` (or `<ms>-*`) id replaced by the id it generated."""
    i = 2
    while i < len(argv):
        option = argv[i].lower()
        if option == b"nomkstream":
            i += 1
        elif option in (b"maxlen", b"minid"):
            i += 2
            if argv[i - 1] in (b"=", b"~"):
                i += 1
            if i < len(argv) and argv[i].lower() == b"limit":
                i += 2
        else:
            break
    if i < len(argv) and argv[i].endswith(b"*"):
        return [*argv[:i], generated, *argv[i + 1:]]
    return argv


def attach(server: "Server") -> None:
    persistence = Persistence(server)
    server.extensions["persistence_engine"] = persistence
    server.extensions.setdefault("disconnect_hooks", []).append(persistence._forget_client)
    server.extensions.setdefault("shutdown_hooks", []).append(persistence.on_shutdown)
    persistence.load_on_start()
    persistence.reconcile()
    server.extensions.setdefault("start_hooks", []).append(persistence._schedule)
