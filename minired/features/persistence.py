"""Persistence in Redis 7.0's own files: dump.rdb snapshots and the multi-part append-only file.

Snapshots (`SAVE`, `BGSAVE`, save points, `SHUTDOWN SAVE`, a signal when save points are set)
are RDB version 10 files (rdb_file.py) written to `--dir`/`--dbfilename`: a Redis 7.0 loads
them, and minired loads Redis's. `SAVE` writes on the event loop, as Redis's SAVE blocks; a
background save forks, as Redis does: the child writes the copy-on-write image of the
keyspace while the parent keeps serving, and the parent reaps it from its 100 ms tick.
(A thread could not do that: it would need the GIL for every value it encodes, and the
keyspace would change under it; chunks on the loop would save a mix of times.) Where fork
is not available the save runs on the loop. Every file goes to a temporary file that is
fsynced, renamed over the old one and the directory fsynced (temp-<pid>.rdb, as rdbSave
does): a crash at any moment leaves the old file or the new one.

Append-only file (`--appendonly yes`): Redis 7.0's multi-part layout, `<dir>/<appenddirname>/`
holding a base (an RDB image, `appendonly.aof.<n>.base.rdb`), the incremental files
(`appendonly.aof.<n>.incr.aof`, Redis commands in RESP) and the manifest
(`appendonly.aof.manifest`) naming them. A plain `appendonly.aof` in `--dir` from an older Redis
(or minired) is moved into that directory as its base, as Redis 7.0 does on upgrade. Every
successful write command is logged by its effects, as Redis propagates it (aof_effects.py:
absolute TTLs, SPOP as SREM, a blocking command as its non-blocking form when served, ...), a
key deleted for its TTL as DEL; the writes of one EXEC or script are wrapped in MULTI/EXEC.
What is logged reaches the file (one write(2) per pass of the event loop) before any reply
leaves, as Redis's beforeSleep writes the AOF buffer before the clients' replies: a kill -9
loses no acknowledged write, and `appendfsync always|everysec|no` decides, as in Redis, only
what an OS crash can take (`always` fsyncs before replying). A real Redis replays the files to
the same data, and redis-check-aof accepts them. (minired's older files, with `#MS:<unix ms>`
clock lines, still load.) `BGREWRITEAOF` (and the automatic rewrite past auto-aof-rewrite-percentage/min-size)
opens a new incremental file, writes a new base in a forked child and then switches the
manifest, as Redis 7.0 does.

Loading refuses, as Redis does, a file it cannot read in full: start-up stops with Redis's
message and the file is left alone (only a truncated tail of the last AOF file is cut off, with
`aof-load-truncated yes`, as Redis does). Files of the format minired used before
(`#minired-snapshot 1`) still load.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import shlex
import signal
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

from minired.data.keyspace import Clock
from minired.engine import dispatch
from minired.engine.blocking import Block
from minired.engine.client import Client
from minired.engine.table import COMMANDS
from minired.features import aof_effects, rdb_file
from minired.features.oom_score import BACKGROUND_CHILD, apply_oom_score
from minired.features.rdb import COMPRESS_IN_FILES, NO_COMPRESSION, Compact
from minired.features.rdb_file import RdbError
from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.server import Server
    from minired.engine.table import CommandSpec

log = logging.getLogger("minired")

LEGACY_HEADER = b"#minired-snapshot 1\n"
LEGACY_OBJECT_COMMAND = b"minired-object"
TICK_SECONDS = 0.1
SAVE_RETRY_SECONDS = 5  # CONFIG_BGSAVE_RETRY_DELAY
AOF_WRITE_LOG_ERROR_SECONDS = 30  # AOF_WRITE_LOG_ERROR_RATE: a failing write is logged this seldom



class LoadError(Exception):
    """Start-up must stop: the data on disk cannot be loaded in full. str() is Redis's log line."""


class FunctionStore(Protocol):
    """The function libraries (scripting/functions.py), as FUNCTION DUMP/RESTORE see them."""

    def dump(self) -> bytes: ...

    def restore(self, payload: bytes, policy: bytes) -> None: ...


# --- RESP records --------------------------------------------------------------------------------

def encode_command(argv: list) -> bytes:
    out = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        if not isinstance(arg, bytes):
            arg = str(arg).encode()
        out.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
    return b"".join(out)


class ReplicaOnly(list):
    """A record for the replicas and not the AOF (PUBLISH, as Redis's PROPAGATE_REPL)."""


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
        if data[pos] != 42:  # '*'
            raise BadFormat(start)
        nl = data.find(b"\r\n", pos)
        if nl < 0:
            raise Truncated(start)
        try:
            count = int(data[pos + 1:nl])
        except ValueError:
            raise BadFormat(start) from None
        if count < 1:
            raise BadFormat(start)
        pos = nl + 2
        argv = []
        for _ in range(count):
            if pos >= n:
                raise Truncated(start)
            if data[pos] != 36:  # '$'
                raise BadFormat(start)
            nl = data.find(b"\r\n", pos)
            if nl < 0:
                raise Truncated(start)
            try:
                size = int(data[pos + 1:nl])
            except ValueError:
                raise BadFormat(start) from None
            pos = nl + 2
            if pos + size + 2 > n:
                raise Truncated(start)
            if data[pos + size:pos + size + 2] != b"\r\n":
                raise BadFormat(start)
            argv.append(data[pos:pos + size])
            pos += size + 2
        yield pos, argv


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
        self.commands = 0
        self.clock = Clock()
        self.clock.offset_ms = -self.clock.ms()

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
            self.server.clock.offset_ms = saved_offset
            self.server.clock.loading = False
        return good, truncated

    def _annotation(self, record: bytes) -> None:
        # Earlier minired's own lines: the time the commands after them ran at, for
        # their relative TTLs and their expiries alike. (Redis's `#TS:` lines, in seconds, are
        # skipped, as Redis skips them.)
        if record.startswith(b"MS:") or record.startswith(b"TS:") and int(record[3:]) > 10**11:
            offset = int(record[3:]) - int(time.time() * 1000)
            self.clock.offset_ms = self.server.clock.offset_ms = offset

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


# --- files ---------------------------------------------------------------------------------------

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


def parse_save_points(text: str) -> list[tuple[int, int]]:
    parts = text.split()
    return [(int(parts[i]), int(parts[i + 1])) for i in range(0, len(parts) - 1, 2)]


class Manifest:
    """appendonly.aof.manifest: the base file and the incremental files, in order."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix  # appendfilename
        self.base: str | None = None
        self.base_seq = 0
        self.incr: list[tuple[str, int]] = []
        self.history: list[str] = []

    @classmethod
    def parse(cls, prefix: str, text: str, path: str) -> "Manifest":
        """aofLoadManifestFromFile: LoadError with Redis's log lines for a manifest it refuses
        (an empty file, a blank, long or short line, a missing field, a path for a name ...)."""
        manifest = cls(prefix)
        if not text:
            raise LoadError(*_manifest_error("Found an empty AOF manifest"))
        for number, raw in enumerate(re.findall(r"[^\n]*\n|[^\n]+$", text), 1):
            if raw.startswith("#"):
                continue
            # (fgets into MANIFEST_MAX_LINE + 1 bytes: a longer line has no newline in it)
            if "\n" not in raw[:_MANIFEST_MAX_LINE]:
                raise LoadError(*_manifest_error("The AOF manifest file contains too long line"))
            line = raw.strip(" \t\r\n")
            try:
                words = shlex.split(line) if line else []
            except ValueError:
                words = []
            if len(words) < 6 or len(words) % 2:
                raise LoadError(*_manifest_error("Invalid AOF manifest file format", number, line))
            name, seq, kind = "", 0, ""
            for key, value in zip(words[0::2], words[1::2]):
                key = key.lower()
                if key == "file":
                    name = value
                    if "/" in name:
                        raise LoadError(*_manifest_error(
                            "File can't be a path, just a filename", number, line))
                elif key == "seq":
                    seq = _atoll(value)
                elif key == "type":
                    kind = value[:1]
            if not name or not seq or not kind:
                raise LoadError(*_manifest_error("Invalid AOF manifest file format", number, line))
            if kind == "b":
                if manifest.base is not None:
                    raise LoadError(*_manifest_error("Found duplicate base file information",
                                                     number, line))
                manifest.base, manifest.base_seq = name, seq
            elif kind == "i":
                if manifest.incr and seq <= manifest.incr[-1][1]:
                    raise LoadError(*_manifest_error("Found a non-monotonic sequence number",
                                                     number, line))
                manifest.incr.append((name, seq))
            elif kind == "h":
                manifest.history.append(name)
            else:
                raise LoadError(*_manifest_error("Unknown AOF file type", number, line))
        return manifest

    def text(self) -> str:
        lines = []
        if self.base is not None:
            lines.append(f"file {_quote(self.base)} seq {self.base_seq} type b\n")
        for name in self.history:
            lines.append(f"file {_quote(name)} seq 0 type h\n")
        for name, seq in self.incr:
            lines.append(f"file {_quote(name)} seq {seq} type i\n")
        return "".join(lines)

    def next_incr(self) -> str:
        seq = (self.incr[-1][1] if self.incr else 0) + 1
        name = f"{self.prefix}.{seq}.incr.aof"
        self.incr.append((name, seq))
        return name

    def files(self) -> list[str]:
        return ([self.base] if self.base else []) + [name for name, _ in self.incr]


_MANIFEST_MAX_LINE = 1024


def _manifest_error(reason: str, number: int = 0, line: str | None = None) -> list[str]:
    """The lines aofLoadManifestFromFile logs before it exits."""
    lines = ["\n*** FATAL AOF MANIFEST FILE ERROR ***\n"]
    if line is not None:
        lines += [f"Reading the manifest file, at line {number}\n", f">>> '{line}'\n"]
    return lines + [f"{reason}\n"]


def _atoll(text: str) -> int:
    """C's atoll: the leading decimal digits (with a sign), 0 if none."""
    match = re.match(r"\s*([+-]?\d+)", text)
    return int(match.group(1)) if match else 0


def _quote(name: str) -> str:
    return name if name and all(ch.isalnum() or ch in "._-" for ch in name) else '"%s"' % name


# --- the subsystem -------------------------------------------------------------------------------

class Persistence:
    """Serves SAVE/BGSAVE/BGREWRITEAOF/SHUTDOWN SAVE (commands/server.py) and keeps the AOF."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.config = server.config
        self.dirty = 0  # writes since the last snapshot
        self.dirty_at_fork = 0
        self.last_save_attempt = 0.0
        self.last_save_ok = True
        self.background_save_pending = False  # a BGSAVE child runs (or, without fork, is due)
        self.background_save_scheduled = False  # BGSAVE SCHEDULE waits for a rewrite to end
        self.background_started = 0.0
        self.saves = 0  # INFO rdb_saves
        self.last_background_save_seconds = -1  # INFO rdb_last_bgsave_time_sec (-1: none yet)
        self.keys_loaded = 0
        self.keys_expired_at_load = 0
        # The child writing a snapshot or an AOF base: (pid, what, temp file) or None.
        self.child: tuple[int, str, str] | None = None
        # The function libraries, once the script engine exists (it registers itself).
        self.functions: FunctionStore | None = None
        self.pending_functions: list[bytes] = []  # read at start-up, before the engine exists
        # The AOF.
        self.aof_file: Any = None
        self.aof_manifest: Manifest | None = None
        self.aof_base_size = 0
        self.aof_rewrite_base_size = 0
        self.aof_buffer: list[bytes] = []
        self.aof_db = -1
        # The writes of the EXEC or script running now (or that just ended), as (db, argv).
        self.aof_transaction: list[tuple[int, list]] = []
        self.aof_transaction_client: Client | None = None
        self.aof_transaction_key: Any = None  # see _transaction_key
        self.aof_expired: list[tuple[int, list]] = []  # DELs of expired keys, see _expired
        # The replication stream (features/replication.py), fed the same records as the AOF
        # once a replica is attached: feed(db, argv), db None for a record that needs no SELECT.
        self.replica_feed: Callable[[int | None, list], None] | None = None
        self.aof_rewrite_scheduled = False
        self.aof_rewrite_incr_from = 0  # index in manifest.incr of the rewrite's first incr file
        self.aof_rewrites = 0
        self.aof_last_rewrite_seconds = -1
        self.aof_last_rewrite_ok = True
        self.last_fsync = time.monotonic()
        self.aof_error_logged_at = -AOF_WRITE_LOG_ERROR_SECONDS  # see _write_failed
        self.aof_write_errno = 0  # the last write to the AOF failed with it (_write_failed)
        self.aof_fsync_errno = 0  # the last fsync of the AOF failed with it (_fsync_aof)
        self.fsync_mode = ""
        self._blocked: dict[int, tuple[int, list]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self.stopped = False

    # --- paths ---------------------------------------------------------------------------------

    @property
    def directory(self) -> str:
        return self.config.get("dir") or "."

    @property
    def snapshot_path(self) -> str:
        return os.path.join(self.directory, self.config.get("dbfilename") or "dump.rdb")

    @property
    def aof_directory(self) -> str:
        return os.path.join(self.directory, self.config.get("appenddirname") or "appendonlydir")

    @property
    def aof_prefix(self) -> str:
        return self.config.get("appendfilename") or "appendonly.aof"

    @property
    def manifest_path(self) -> str:
        return os.path.join(self.aof_directory, self.aof_prefix + ".manifest")

    # --- start-up ------------------------------------------------------------------------------

    def load_on_start(self) -> None:
        """Load the AOF (appendonly yes) or dump.rdb, as Redis's loadDataFromDisk; LoadError if
        what is there cannot be loaded in full."""
        started = time.monotonic()
        if self.config.get("appendonly") == "yes":
            loaded = self._load_aof()
            if loaded:
                log.info("DB loaded from append only file: %.3f seconds", time.monotonic() - started)
            elif os.path.exists(self.snapshot_path):
                log.warning("%s is not loaded: with appendonly yes only the AOF is, as in Redis "
                            "(start once with appendonly no, then CONFIG SET appendonly yes, to "
                            "carry its data over)", self.snapshot_path)
            return
        self._read_manifest_if_any()
        path = self.snapshot_path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise LoadError(f"Fatal error loading the DB: {exc.strerror}. Exiting.") from None
        if data.startswith(LEGACY_HEADER):
            loader = Loader(self.server)
            used, truncated = loader.load(data, path)
            if truncated or used != len(data):
                raise LoadError(f"Short read or OOM loading DB {path}. Unrecoverable error, "
                                "aborting now.")
        else:
            self._load_rdb(data, path, keep_expired=False)
        log.info("DB loaded from disk: %.3f seconds", time.monotonic() - started)

    def _load_rdb(self, data: bytes, name: str, keep_expired: bool) -> int:
        server = self.server
        if any(db.data for db in server.keyspace.dbs):
            raise LoadError("RDB image loaded into a non-empty keyspace")  # not reached at start
        try:
            loaded = rdb_file.load(data, server.keyspace, server.clock.ms(), keep_expired,
                                   self.sanitizes_loads())
        except RdbError as exc:
            raise LoadError(f"{exc} ({name}). Terminating server after rdb file reading "
                            "failure.") from None
        self.keys_loaded = loaded.keys
        server.stats.dump_payload_sanitizations += loaded.sanitized
        self.keys_expired_at_load = loaded.expired
        _log_aux_fields(loaded.aux)
        log.info("Done loading RDB, keys loaded: %d, keys expired: %d.", loaded.keys,
                 loaded.expired)
        if loaded.functions:
            self._restore_functions(loaded.functions)
        return loaded.end

    def sanitizes_loads(self) -> bool:
        """Whether RDB data loaded from a file or a master is checked deeply: only with
        sanitize-dump-payload yes (clients spares loading, as rdbLoadObject)."""
        return self.config.get("sanitize-dump-payload") == "yes"

    def _restore_functions(self, codes: list[bytes]) -> None:
        if self.functions is None:
            self.pending_functions.extend(codes)  # startup.py brings the engine up for them
            return
        try:
            self.functions.restore(rdb_file.functions_payload(codes), b"append")
        except RedisError as exc:
            raise LoadError(f"Failed loading library: {exc.message}") from None

    def use_functions(self, store: FunctionStore) -> None:
        """The script engine exists: its libraries are saved from now on (and any read at start-up
        are loaded into it)."""
        self.functions = store
        pending, self.pending_functions = self.pending_functions, []
        if pending:
            self._restore_functions(pending)

    def _read_manifest_if_any(self) -> bool:
        path = self.manifest_path
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (FileNotFoundError, NotADirectoryError):
            return False  # (no AOF directory: aofLoadManifestFromDisk)
        except OSError as exc:
            raise LoadError(f"Fatal error: can't open the AOF manifest {path}: {exc.strerror}")
        self.aof_manifest = Manifest.parse(self.aof_prefix, text, path)
        return True

    def _load_aof(self) -> bool:
        has_manifest = self._read_manifest_if_any()
        manifest = self.aof_manifest
        legacy = os.path.join(self.directory, self.aof_prefix)
        # loadAppendOnlyFiles upgrades an old-style AOF when there is no manifest, when the
        # manifest names no file, or when it names only that file as its base and the move
        # into the AOF directory was interrupted.
        if os.path.isfile(legacy) and (
                manifest is None or not manifest.files() or (
                    manifest.base == self.aof_prefix and not manifest.incr and not
                    os.path.exists(os.path.join(self.aof_directory, self.aof_prefix)))):
            self._upgrade_legacy_aof(legacy)
        elif not has_manifest:
            return False
        manifest = self.aof_manifest
        assert manifest is not None
        files = manifest.files()
        for name in files:  # (their sizes are taken first: getBaseAndIncrAppendOnlyFilesSize)
            try:
                os.stat(os.path.join(self.aof_directory, name))
            except OSError as exc:
                raise LoadError(f"Unable to obtain the AOF file {name} length. stat: "
                                f"{exc.strerror}") from None
        loader = Loader(self.server)
        total = 0
        for i, name in enumerate(files):
            path = os.path.join(self.aof_directory, name)
            last = i == len(files) - 1
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                # Redis 7.0 warns and goes on without it; a file the manifest names but that is
                # gone means data is missing, and starting would soon rewrite the AOF without it.
                raise LoadError(f"The AOF file {name} doesn't exist") from None
            except OSError as exc:
                raise LoadError(f"Fatal error: can't open the append log file {name} for "
                                f"reading: {exc.strerror}") from None
            total += len(data)
            pos = 0
            if rdb_file.is_rdb(data):
                log.info("Reading RDB base file on AOF loading...")
                pos = self._load_rdb(data, name, keep_expired=True)
            used, truncated = loader.load(data, name, pos)
            if truncated:
                if not last:
                    raise LoadError(f"Fatal error: the truncated file {name} is not the last file")
                if self.config.get("aof-load-truncated") != "yes":
                    raise LoadError(f"Unexpected end of file reading the append only file {name}."
                                    " You can: 1) Make a backup of your AOF file, then use "
                                    "./redis-check-aof --fix <filename.manifest>. 2) "
                                    "Alternatively you can set the 'aof-load-truncated' "
                                    "configuration option to yes and restart the server.")
                log.warning("!!! Warning: short read while loading the AOF file %s!!!", name)
                log.warning("!!! Truncating the AOF %s at offset %d !!!", name, used)
                with open(path, "r+b") as f:
                    f.truncate(used)
                    os.fsync(f.fileno())
                log.warning("AOF %s loaded anyway because aof-load-truncated is enabled", name)
        self.aof_base_size = total
        return True

    def _upgrade_legacy_aof(self, legacy: str) -> None:
        """A single appendonly.aof (Redis < 7, or minired's own): it becomes the base of a
        multi-part AOF, moved into the AOF directory untouched (aofUpgradePrepare)."""
        self._make_aof_directory()
        manifest = Manifest(self.aof_prefix)
        manifest.base, manifest.base_seq = self.aof_prefix, 1
        target = os.path.join(self.aof_directory, self.aof_prefix)
        self._persist_manifest(manifest)  # written first: a crash now still finds the file
        os.replace(legacy, target)
        fsync_directory(self.directory)
        self.aof_manifest = manifest
        log.info("Successfully migrated an old-style AOF file (%s) into the AOF directory (%s).",
                 self.aof_prefix, self.config.get("appenddirname") or "appendonlydir")

    def _make_aof_directory(self) -> None:
        """The AOF directory, made if missing (dirCreateIfMissing: a file in its place is
        ENOTDIR); OSError with Redis's log line when it cannot be."""
        try:
            os.mkdir(self.aof_directory)
        except FileExistsError:
            if os.path.isdir(self.aof_directory):
                return
            error: OSError = NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        except OSError as exc:
            error = exc
        else:
            return
        raise OSError(error.errno, "Can't open or create append-only dir %s: %s" % (
            self.config.get("appenddirname") or "appendonlydir", error.strerror))

    def _persist_manifest(self, manifest: Manifest) -> None:
        self._make_aof_directory()
        write_atomically(self.manifest_path, iter([manifest.text().encode()]),
                         temp_name="temp-" + self.aof_prefix + ".manifest")

    # --- snapshots (the interface commands/server.py uses) ---------------------------------------

    def _function_codes(self) -> list[bytes]:
        if self.functions is None:
            return self.pending_functions
        return rdb_file.functions_from_payload(self.functions.dump())

    def _image(self, aof_base: bool = False) -> Iterator[bytes]:
        server = self.server
        return rdb_file.save_chunks(
            server.keyspace, self._function_codes(), int(time.time()),
            server.memory.used(),
            compress_from=(COMPRESS_IN_FILES if self.config.get("rdbcompression") == "yes"
                           else NO_COMPRESSION),
            checksum=self.config.get("rdbchecksum") == "yes", aof_base=aof_base,
            compact=Compact.from_config(self.config.get))

    def _delayed(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The image slowed by rdb-key-save-delay (microseconds per key, Redis's debugDelay in
        rdbSaveKeyValuePair), which the tests use to keep a save at work: the whole delay is
        spent once the temporary file exists, after its first chunk."""
        delay = self.config.number("rdb-key-save-delay")
        keys = sum(len(db) for db in self.server.keyspace.dbs) if delay > 0 else 0
        for i, chunk in enumerate(chunks):
            yield chunk
            if i == 0 and keys:
                time.sleep(delay * keys / 1e6)

    def save(self, shutting_down: bool = False) -> None:
        """SAVE: write the snapshot now, on the loop. SHUTDOWN first stops a child at work."""
        if shutting_down:
            self._kill_child()
        elif self.child is not None and self.child[1] == "rdb":
            raise RedisError(errors.BGSAVE_IN_PROGRESS)
        self.background_save_pending = False  # this snapshot is at least as fresh
        self.last_save_attempt = time.monotonic()
        try:
            # (rdb-key-save-delay slows a save on the loop as it slows a child's: Redis's
            # rdbSaveKeyValuePair delays whoever saves)
            size = write_atomically(self.snapshot_path, self._delayed(self._image()))
        except OSError as exc:
            self.last_save_ok = False
            log.warning("Failed saving the DB: %s", exc)
            raise RedisError(errors.SAVE_FAILED) from None
        self._saved()
        log.info("DB saved on disk (%d bytes)", size)

    def reload(self, save: bool, flush: bool, merge: bool = False) -> None:
        """DEBUG RELOAD: save (unless NOSAVE), empty the keyspace and the function libraries
        (unless NOFLUSH), load the file back: the round trip through dump.rdb, on the loop. A
        library already there fails the load, unless MERGE lets the file's replace it."""
        if save:
            self.save()
        server = self.server
        if flush:
            server.keyspace.flushall()
        try:
            with open(self.snapshot_path, "rb") as f:
                data = f.read()
            loaded = rdb_file.load(data, server.keyspace, server.clock.ms(),
                                   deep=self.sanitizes_loads())
            if self.functions is not None and (loaded.functions or flush):
                policy = b"flush" if flush else b"replace" if merge else b"append"
                self.functions.restore(rdb_file.functions_payload(loaded.functions), policy)
        except (OSError, RdbError, RedisError) as exc:
            log.warning("DEBUG RELOAD: %s", exc)
            raise RedisError(errors.DEBUG_RELOAD_FAILED) from None
        log.warning("DB reloaded by DEBUG RELOAD")

    def reload_aof(self) -> None:
        """DEBUG LOADAOF: write out what the AOF buffer holds, empty the keyspace and load the
        AOF files back, as at start-up; the load's changes are not logged again."""
        self.flush_aof(fsync=True)
        server = self.server
        server.keyspace.flushall()
        propagate, server.propagate = server.propagate, None  # replayed, not logged anew
        try:
            self._load_aof()
        except LoadError as exc:
            for line in exc.args:
                log.warning("DEBUG LOADAOF: %s", line)
            raise RedisError(errors.DEBUG_LOADAOF_FAILED) from None
        finally:
            server.propagate = propagate
        self.dirty = 0
        log.warning("Append Only File loaded by DEBUG LOADAOF")

    def flushed_all(self) -> None:
        """FLUSHALL (flushAllDataAndResetRDB): a background save of the old data is stopped, and
        with save points set the empty dataset is saved at once, so a restart does not bring
        the flushed keys back."""
        if self.child is not None and self.child[1] == "rdb":
            self._kill_child()
        self.background_save_pending = False
        if self.config.get("save"):
            try:
                self.save()
            except RedisError:
                return  # logged by save(); FLUSHALL itself succeeded
            # propagate() counts FLUSHALL next; Redis counts no change after this save.
            self.dirty = -1

    def _saved(self, dirty_before: int | None = None) -> None:
        self.last_save_ok = True
        self.config.note_bgsave(True)  # writes refused for a failed BGSAVE are allowed again
        self.saves += 1
        self.dirty = self.dirty - dirty_before if dirty_before is not None else 0
        self.server.last_save = int(time.time())

    def background_save(self, schedule: bool) -> str:
        if self.child is not None and self.child[1] == "rdb" or self.background_save_pending:
            raise RedisError(errors.BGSAVE_IN_PROGRESS)
        if self.child is not None:  # an AOF rewrite
            if not schedule:
                raise RedisError(errors.BGSAVE_AOF_REWRITE_IN_PROGRESS)
            self.background_save_scheduled = True
            return "Background saving scheduled"
        self._start_background_save()
        return "Background saving started"

    def _start_background_save(self) -> None:
        self.last_save_attempt = time.monotonic()
        self.background_started = time.time()
        self.dirty_at_fork = self.dirty
        path = self.snapshot_path
        pid = self._fork(lambda: write_atomically(path, self._delayed(self._image()),
                                                  temp_name=f"temp-{os.getpid()}.rdb"))
        if pid is None:  # no fork here: right after replying, on the loop
            self.background_save_pending = True
            if self.server.loop is None:
                self._background_save_inline()
            else:
                self.server.loop.call_soon(self._background_save_inline)
            return
        self.child = (pid, "rdb", os.path.join(os.path.dirname(os.path.abspath(path)),
                                               f"temp-{pid}.rdb"))
        log.info("Background saving started by pid %d", pid)

    def _background_save_inline(self) -> None:
        if not self.background_save_pending:
            return  # a SAVE or SHUTDOWN got there first
        started = time.time()
        try:
            self.save()
        except RedisError:  # (logged by save())
            self.config.note_bgsave(False)
        self.last_background_save_seconds = int(time.time() - started)

    def _can_fork(self) -> bool:
        # A server driven in-process without a loop has nobody to reap a child.
        return hasattr(os, "fork") and self.server.loop is not None

    def saving_in_background(self) -> bool:
        return self.background_save_pending or (self.child is not None and self.child[1] == "rdb")

    def current_child_seconds(self, what: str) -> int:
        """INFO's rdb_current_bgsave_time_sec / aof_current_rewrite_time_sec (-1: none runs)."""
        if self.child is None or self.child[1] != what:
            return -1
        return int(time.time() - self.background_started)

    def _fork(self, job: Callable[[], Any]) -> int | None:
        """Run job in a forked child (the keyspace frozen as it is now); None without fork."""
        if not self._can_fork():
            return None
        pid = os.fork()
        if pid == 0:  # the child: write, then leave without running the parent's exit code
            code = 1
            try:
                _detach_child_signals()
                apply_oom_score(self.server.config, BACKGROUND_CHILD)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                job()
                code = 0
            finally:
                os._exit(code)
        return pid

    def _reap_child(self) -> None:
        if self.child is None:
            return
        pid, what, temp = self.child
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 1 << 8
        if not done:
            return
        self.child = None
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if not ok:
            try:
                os.unlink(temp)
            except OSError:
                pass
        seconds = int(time.time() - self.background_started)
        if what == "rdb":
            self.last_background_save_seconds = seconds
            if ok:
                self._saved(self.dirty_at_fork)
                log.info("Background saving terminated with success")
            else:
                self.last_save_ok = False
                self.config.note_bgsave(False)  # stop-writes-on-bgsave-error: MISCONF
                log.warning("Background saving error")
        else:
            self.aof_last_rewrite_seconds = seconds
            self._finish_aof_rewrite(ok, temp)
        self._start_scheduled()

    def _start_scheduled(self) -> None:
        if self.child is not None:
            return
        if self.aof_rewrite_scheduled and self.aof_file is not None:
            self.aof_rewrite_scheduled = False
            self._start_aof_rewrite()
        elif self.background_save_scheduled:
            self.background_save_scheduled = False
            self._start_background_save()

    def _kill_child(self) -> None:
        if self.child is None:
            return
        pid, _, temp = self.child
        try:
            os.kill(pid, signal.SIGUSR1)
            os.waitpid(pid, 0)
        except OSError:
            pass
        try:
            os.unlink(temp)
        except OSError:
            pass
        self.child = None

    # --- the write path --------------------------------------------------------------------------

    def propagate(self, c: Client, spec: "CommandSpec", argv: list, reply: Any) -> None:
        """dispatch.call hook for every successful write command."""
        if type(reply) is Block:
            self._blocked[c.id] = (c.db_index, argv)  # logged once served, see _served
            return
        self.dirty += 1
        if self.aof_file is not None or self.replica_feed is not None:
            self._log(c, c.db_index, argv, reply)

    def propagate_to_replicas(self, c: Client, argv: list) -> None:
        """A command that changed no data but reaches the replicas (PUBLISH), in its place
        among the writes (inside the transaction of an EXEC or script)."""
        self._log(c, c.db_index, ReplicaOnly(argv), None)

    def _served(self, waiter: Any, reply: Any) -> None:
        """BlockingManager.on_finish: a blocked command that gets its data is logged by what
        it did, as its non-blocking form (aof_effects)."""
        entry = self._blocked.pop(waiter.client.id, None)
        if (entry is not None and reply is not waiter.block.timeout_reply
                and type(reply) is not RedisError):
            self.dirty += 1
            if self.aof_file is not None or self.replica_feed is not None:
                db_index, argv = entry
                self._log(waiter.client, db_index, argv, reply)

    def _forget_client(self, client: Client) -> None:
        self._blocked.pop(client.id, None)

    def _log(self, c: Client, db_index: int, argv: list, reply: Any) -> None:
        if c.in_script:
            run = self.server.features.scripting.current
            if run is not None and not run.propagate & 1:
                return  # redis.set_repl without REPL_AOF
        try:
            records = aof_effects.effects(c.server.keyspace[db_index], argv, reply, self.config)
        except Exception:  # a bug here must not fail a write that happened: log it as sent
            log.exception("rewriting %r for the AOF failed", argv[:1])
            records = [argv]
        if not records:
            return
        ops = [(db_index, argv) for argv in records]
        if self.aof_expired:  # keys the command found expired: deleted before it wrote
            ops[:0] = self.aof_expired
            self.aof_expired = []
        if c.in_exec or c.in_script:
            # The writes of one EXEC or script are one transaction in the file, written once it
            # is over (propagatePendingCommands).
            owner, key = self._transaction_of(c)
            if self.aof_transaction_client is not owner or self.aof_transaction_key != key:
                self._close_transaction()
                self.aof_transaction_client = owner
                self.aof_transaction_key = key
            self.aof_transaction.extend(ops)
            return
        self._close_transaction()
        self._append_atomically(ops)

    def _expired(self, db: Any, key: bytes) -> None:
        """Database.on_expired: a key deleted for its TTL is logged as DEL (propagateExpire),
        with the writes of the command that found it expired, in one MULTI/EXEC when there are
        some (alsoPropagate), else on its own."""
        if self.aof_file is not None or self.replica_feed is not None:
            self.aof_expired.append((db.index, [aof_effects.deletion_of_expired(self.config), key]))

    def _append_expired(self) -> None:
        """Deletions of expired keys that no write followed (a read found them, or the active
        cycle), each on its own. They came after everything logged so far."""
        expired, self.aof_expired = self.aof_expired, []
        for op in expired:
            self._append(*op)

    def _transaction_of(self, c: Client) -> tuple[Client, Any]:
        """The client whose EXEC or script a write of c belongs to (a script run by EXEC is
        part of that EXEC), and what tells that transaction from the client's next one: the
        script's run, or the count of EXECs so far; None once it is over."""
        if c.in_script:
            scripting = self.server.features.scripting
            run = scripting.current if scripting is not None else None
            if run is None or not run.caller.in_exec:
                return c, run
            c = run.caller
        return c, (COMMANDS[b"exec"].calls if c.in_exec else None)

    def _append_atomically(self, records: list) -> None:
        """(db, argv) records in a MULTI/EXEC block when there is more than one, as Redis wraps
        a command's or a transaction's writes; SELECT before MULTI, for the first record."""
        if len(records) == 1:
            self._append(*records[0])
            return
        self._append(records[0][0], [b"MULTI"])
        for db_index, argv in records:
            self._append(db_index, argv)
        self._append(None, [b"EXEC"])

    def _append(self, db_index: int | None, argv: list) -> None:
        """One record, to the AOF and to the replicas alike (one source of truth for what is
        propagated), each preceded by a SELECT where its database changes."""
        if self.aof_file is not None and type(argv) is not ReplicaOnly:
            buffer = self.aof_buffer
            if db_index is not None and db_index != self.aof_db:
                buffer.append(encode_command([b"SELECT", b"%d" % db_index]))
                self.aof_db = db_index
            buffer.append(encode_command(argv))
        if self.replica_feed is not None:
            self.replica_feed(db_index, argv)

    def _close_transaction(self) -> None:
        if self.aof_transaction_client is not None:
            records, self.aof_transaction = self.aof_transaction, []
            self.aof_transaction_client = self.aof_transaction_key = None
            if records:
                self._append_atomically(records)

    def _close_finished_transaction(self) -> None:
        """The transaction of an EXEC or script that is over; one still running (a busy script
        serving other clients' reads) stays open."""
        running = self.aof_transaction_client
        if running is not None:
            owner, key = self._transaction_of(running)
            if key is None or owner is not running or key != self.aof_transaction_key:
                self._close_transaction()

    # --- the AOF file ----------------------------------------------------------------------------

    def _open_incr(self, name: str) -> None:
        self.aof_file = open(os.path.join(self.aof_directory, name), "ab", buffering=0)
        self.aof_db = -1  # a new file starts with a SELECT

    def enable_aof(self, at_start: bool = False) -> None:
        """Start logging. At start-up, after loading (aofOpenIfNeededOnServerStart): append to
        the last incremental file, a new one when there is none; a base of the data first when
        the manifest names no file at all. Turned on later (CONFIG SET): a rewrite, so the files
        hold what is in memory now."""
        self._make_aof_directory()
        manifest = self.aof_manifest
        if at_start and manifest is not None and (manifest.base is not None or manifest.incr):
            opened = bool(manifest.incr)
            if not opened:
                manifest.next_incr()
            self._persist_manifest(manifest)
            self._open_incr(manifest.incr[-1][0])
            self.aof_rewrite_base_size = self.aof_base_size
            log.info("%s AOF incr file %s on server start", "Opening" if opened else "Creating",
                     manifest.incr[-1][0])
        else:
            self._rewrite_now()
            if at_start:
                log.info("Creating AOF base file %s on server start", self.aof_manifest.base)
                log.info("Creating AOF incr file %s on server start", self.aof_manifest.incr[-1][0])
            else:
                log.info("Append only file enabled: %s", self.aof_file.name)

    def _rewrite_now(self) -> None:
        """A rewrite on the loop: a new base of the data now, a new empty incremental file."""
        manifest = self.aof_manifest or Manifest(self.aof_prefix)
        base_seq = manifest.base_seq + 1
        base_name = f"{self.aof_prefix}.{base_seq}.base.rdb"
        self._make_aof_directory()
        size = write_atomically(os.path.join(self.aof_directory, base_name),
                                self._image(aof_base=True),
                                temp_name=f"temp-rewriteaof-{os.getpid()}.aof")
        old_files = manifest.files()
        fresh = Manifest(self.aof_prefix)
        fresh.base, fresh.base_seq = base_name, base_seq
        fresh.incr = [(f"{self.aof_prefix}.{(manifest.incr[-1][1] if manifest.incr else 0) + 1}"
                       ".incr.aof", (manifest.incr[-1][1] if manifest.incr else 0) + 1)]
        if self.aof_file is not None:
            self.flush_aof(fsync=True, close_transaction=True)
            self.aof_file.close()
        self._open_incr(fresh.incr[0][0])
        self._persist_manifest(fresh)
        self.aof_manifest = fresh
        self._delete_aof_files(old_files, keep=fresh.files())
        self.aof_base_size = self.aof_rewrite_base_size = size

    def _delete_aof_files(self, names: list[str], keep: list[str]) -> None:
        for name in names:
            if name not in keep:
                try:
                    os.unlink(os.path.join(self.aof_directory, name))
                except OSError:
                    pass

    def rewrite_aof(self) -> str:
        """BGREWRITEAOF."""
        if self.child is not None and self.child[1] == "aof":
            raise RedisError(errors.AOF_REWRITE_IN_PROGRESS)
        if self.child is not None or self.background_save_pending:
            self.aof_rewrite_scheduled = True  # once the BGSAVE child is done
            return "Background append only file rewriting scheduled"
        if self.aof_file is None:
            # Redis rewrites even with appendonly off: the files are there for when it is on.
            self._rewrite_aof_files_off()
            return "Background append only file rewriting started"
        self._start_aof_rewrite()
        return "Background append only file rewriting started"

    def _rewrite_aof_files_off(self) -> None:
        self._read_manifest_if_any()
        self._rewrite_now()
        self.aof_file.close()
        self.aof_file = None
        self.aof_rewrites += 1

    def _start_aof_rewrite(self) -> None:
        """Redis 7.0's rewrite: new writes go to a new incremental file from now on, a forked
        child writes the base of the data as it is now, and on its success the manifest names
        that base and the incremental files opened since."""
        manifest = self.aof_manifest
        if manifest is None or not self._can_fork():
            self._rewrite_now()
            self.aof_rewrites += 1
            return
        self.flush_aof(fsync=True, close_transaction=True)
        self.aof_file.close()
        self.aof_rewrite_incr_from = len(manifest.incr)
        self._open_incr(manifest.next_incr())
        self._persist_manifest(manifest)
        self.background_started = time.time()
        directory = self.aof_directory
        # The child writes the base under a temporary name; the parent renames it into place
        # once the child succeeded, then switches the manifest (backgroundRewriteDoneHandler).
        pid = self._fork(lambda: write_synced(
            os.path.join(directory, f"temp-rewriteaof-bg-{os.getpid()}.aof"),
            self._image(aof_base=True)))
        assert pid is not None
        self.child = (pid, "aof", os.path.join(directory, f"temp-rewriteaof-bg-{pid}.aof"))
        log.info("Background append only file rewriting started by pid %d", pid)

    def _finish_aof_rewrite(self, ok: bool, temp: str) -> None:
        manifest = self.aof_manifest
        self.aof_last_rewrite_ok = ok
        if not ok or manifest is None:
            log.warning("Background AOF rewrite terminated with error")
            return
        base_seq = manifest.base_seq + 1
        base_name = f"{self.aof_prefix}.{base_seq}.base.rdb"
        os.replace(temp, os.path.join(self.aof_directory, base_name))
        fsync_directory(self.aof_directory)
        old_files = manifest.files()
        fresh = Manifest(self.aof_prefix)
        fresh.base, fresh.base_seq = base_name, base_seq
        fresh.incr = manifest.incr[self.aof_rewrite_incr_from:]
        self._persist_manifest(fresh)
        self.aof_manifest = fresh
        self._delete_aof_files(old_files, keep=fresh.files())
        self.aof_base_size = self.aof_rewrite_base_size = os.path.getsize(
            os.path.join(self.aof_directory, base_name))
        self.aof_rewrites += 1
        log.info("Background AOF rewrite finished successfully")

    def disable_aof(self) -> None:
        if self.aof_file is not None:
            self.flush_aof(fsync=True, close_transaction=True)
            self.aof_file.close()
            self.aof_file = None
            self.aof_buffer.clear()  # what could not be written is dropped, as stopAppendOnly
            self.aof_write_errno = self.aof_fsync_errno = 0
            self._note_aof_errors()
            log.info("Append only file disabled")

    def flush_aof(self, fsync: bool, close_transaction: bool = False) -> None:
        """Write what was logged since the last flush (one write(2)), with the transaction of an
        EXEC or script that ended (all of it, with close_transaction: the file changes)."""
        file = self.aof_file
        if file is None and self.replica_feed is None:
            return
        if close_transaction:
            self._close_transaction()
        else:
            self._close_finished_transaction()
        if self.aof_expired and self.aof_transaction_client is None:
            self._append_expired()
        if file is None:
            return  # (the replicas were fed as the records were made)
        if self.aof_buffer:
            data = b"".join(self.aof_buffer)
            self.aof_buffer.clear()
            view = memoryview(data)
            written = 0
            try:
                while written < len(data):
                    written += file.write(view[written:])
            except OSError as exc:
                self._write_failed(file, data, written, exc)
                return
            if self.aof_write_errno:
                log.warning("AOF write error looks solved, Redis can write again.")
                self.aof_write_errno = 0
                self._note_aof_errors()
        if fsync:
            self._fsync_aof(file)

    def _fsync_aof(self, file: Any) -> None:
        """fsync the AOF. A failure ends the server with appendfsync always (the replies of this
        pass must not leave); otherwise writes are refused until an fsync succeeds, as Redis's
        background fsync sets aof_bio_fsync_status (EBADF and EINVAL are not failures there)."""
        try:
            os.fsync(file.fileno())
        except OSError as exc:
            if self.fsync_mode == "always":
                log.warning("Can't persist AOF for fsync error when the AOF fsync policy is "
                            "'always': %s. Exiting...", os.strerror(exc.errno or errno.EIO))
                logging.shutdown()
                os._exit(1)
            if exc.errno in (errno.EBADF, errno.EINVAL):
                return
            log.warning("Fail to fsync the AOF file: %s", os.strerror(exc.errno or errno.EIO))
            self.aof_fsync_errno = exc.errno or errno.EIO
            self._note_aof_errors()
            return
        self.last_fsync = time.monotonic()
        if self.aof_fsync_errno:
            self.aof_fsync_errno = 0
            self._note_aof_errors()

    def _note_aof_errors(self) -> None:
        """Writes are refused while the AOF's last write or fsync failed (the write's error
        named first, as writeCommandsDeniedByDiskError checks it first)."""
        failed = self.aof_write_errno or self.aof_fsync_errno
        self.config.note_aof_write(os.strerror(failed) if failed else "")

    def _write_failed(self, file: Any, data: bytes, written: int, exc: OSError) -> None:
        """A write to the AOF failed after `written` bytes of `data`, as flushAppendOnlyFile
        handles it: a partial record is cut off the file again; with appendfsync always the
        server exits (the replies of this pass must not leave); otherwise the records are kept
        for the next try (each pass of the loop, and each tick) and writes are refused with
        MISCONF until one succeeds. The replies already made are sent: those writes happened."""
        now = time.monotonic()
        can_log = now - self.aof_error_logged_at > AOF_WRITE_LOG_ERROR_SECONDS
        if can_log:
            self.aof_error_logged_at = now
        error = exc.errno or errno.EIO
        if written:
            if can_log:
                log.warning("Short write while writing to the AOF file: (nwritten=%d, "
                            "expected=%d)", written, len(data))
            try:  # the file as it was before this write: it ends with a whole record
                os.ftruncate(file.fileno(), os.fstat(file.fileno()).st_size - written)
            except OSError as truncate_error:
                if can_log:
                    log.warning("Could not remove short write from the append-only file.  "
                                "Redis may refuse to load the AOF the next time it starts.  "
                                "ftruncate: %s", truncate_error.strerror)
            else:
                written = 0
            error = errno.ENOSPC  # (as Redis reports a short write)
        elif can_log:
            log.warning("Error writing to the AOF file: %s", os.strerror(error))
        if self.fsync_mode == "always":
            log.warning("Can't recover from AOF write error when the AOF fsync policy is "
                        "'always'. Exiting...")
            logging.shutdown()
            os._exit(1)
        self.aof_buffer.insert(0, data[written:])  # tried again before anything newer
        self.aof_write_errno = error
        self._note_aof_errors()

    def write_before_reply(self) -> None:
        """Server.sync_before_reply, called before any reply is written to a socket: the writes
        logged so far reach the file first (one write for the whole pass of the loop, as Redis's
        beforeSleep writes the AOF buffer before the clients' replies), so a kill -9 never loses
        a write a client was told of; with appendfsync always they reach the disk too."""
        if self.aof_buffer or self.aof_transaction_client is not None or self.aof_expired:
            try:
                self.flush_aof(fsync=self.fsync_mode == "always")
            except OSError as exc:  # (a failed write is handled by _write_failed)
                log.warning("Error syncing the AOF file: %s", exc)

    def aof_current_size(self) -> int:
        if self.aof_manifest is None:
            return 0
        total = 0
        for name in self.aof_manifest.files():
            try:
                total += os.path.getsize(os.path.join(self.aof_directory, name))
            except OSError:
                pass
        return total

    def _maybe_rewrite_aof(self) -> None:
        if self.child is not None or self.aof_file is None:
            return
        percentage = int(self.config.get("auto-aof-rewrite-percentage") or 0)
        min_size = int(self.config.get("auto-aof-rewrite-min-size") or 0)
        if not percentage:
            return
        size = self.aof_file.tell() + self.aof_rewrite_base_size
        base = self.aof_rewrite_base_size or 1
        if size > min_size and (size - base) * 100 // base >= percentage:
            log.info("Starting automatic rewriting of AOF on %d%% growth",
                     (size - base) * 100 // base)
            self._start_aof_rewrite()

    # --- the periodic tick -----------------------------------------------------------------------

    def reconcile(self, at_start: bool = False) -> None:
        """Follow CONFIG SET appendonly/appendfsync/save: install the hooks they need (and only
        those: with both off, the write path pays one attribute check)."""
        server = self.server
        wants_aof = self.config.get("appendonly") == "yes"
        if wants_aof and self.aof_file is None:
            try:
                self.enable_aof(at_start)
            except OSError as exc:
                reason = exc.strerror if exc.strerror.startswith("Can't") else (
                    f"Can't open the append-only file: {exc.strerror}")
                if at_start:  # Redis exits
                    raise LoadError(reason) from None
                log.warning("%s", reason)
                # CONFIG SET appendonly yes answers the error and is undone (turn_on_aof)
                self.config.set("appendonly", "no")
        elif not wants_aof and self.aof_file is not None:
            self.disable_aof()
        self.fsync_mode = self.config.get("appendfsync") or "everysec"
        logging_on = self.aof_file is not None or self.replica_feed is not None
        server.sync_before_reply = self.write_before_reply if logging_on else None
        for db in server.keyspace.dbs:
            db.on_expired = self._expired if logging_on else None
        # Otherwise minired stays memory-only and commands/server.py says so.
        # SAVE/BGSAVE are served, and writes counted for INFO's rdb_changes_since_last_save,
        # once files were asked for: AOF, save points, or a --dir.
        served = (self.aof_file is not None or bool(self.config.get("save"))
                  or self.directory != ".")
        server.features.saver = self if served else None
        counted = served or logging_on
        server.propagate = self.propagate if counted else None
        server.blocking.on_finish = self._served if counted else None

    def turn_on_aof(self) -> bool:
        """CONFIG SET appendonly yes, at once, as Redis's startAppendOnly: False (the setting
        undone, the reason logged) when the files cannot be made."""
        self.reconcile()
        return self.aof_file is not None

    def tick(self) -> None:
        try:
            self.reconcile()
            self._reap_child()
            if self.aof_file is not None:
                fsync = (self.fsync_mode == "everysec"
                         and time.monotonic() - self.last_fsync >= 1.0)
                self.flush_aof(fsync=fsync)
            elif self.replica_feed is not None:
                self.flush_aof(fsync=False)  # (the transactions and expiries that are over)
                self._maybe_rewrite_aof()
            self._check_save_points()
        except Exception:
            log.exception("persistence tick failed")
        self._schedule()

    def _check_save_points(self) -> None:
        if not self.dirty or self.child is not None or self.background_save_pending:
            return
        # After a failed save, wait a few seconds before trying again, as Redis does.
        if not self.last_save_ok and time.monotonic() - self.last_save_attempt < SAVE_RETRY_SECONDS:
            return
        elapsed = time.time() - self.server.last_save
        for seconds, changes in parse_save_points(self.config.get("save") or ""):
            if self.dirty >= changes and elapsed >= seconds:
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                self._start_background_save()
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
        self._kill_child()
        if self.aof_file is not None:
            self.disable_aof()
        # SHUTDOWN already saved (or was told NOSAVE); a signal saves when save points are set.
        by_command, self.server.features.shutdown_by_command = self.server.features.shutdown_by_command, False
        if not by_command and self.config.get("save") and self.dirty:
            try:
                self.save()
            except RedisError:
                pass


def _detach_child_signals() -> None:
    """In a forked child: the parent's handlers would write to its loop's wakeup fd (a SIGTERM
    to the child would stop the parent). Default actions instead; Ctrl-C is the parent's."""
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    for sig, action in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGUSR1, signal.SIG_DFL),
                        (signal.SIGINT, signal.SIG_IGN)):
        try:
            signal.signal(sig, action)
        except (ValueError, OSError):
            pass


def _log_aux_fields(aux: dict[bytes, bytes]) -> None:
    """What Redis's rdbLoad logs of a file's auxiliary fields, in the file's order."""
    for name, value in aux.items():
        if name == b"redis-ver":
            log.info("Loading RDB produced by version %s", value.decode(errors="replace"))
        elif name == b"ctime" and value.lstrip(b"-").isdigit():
            log.info("RDB age %d seconds", max(0, int(time.time()) - int(value)))
        elif name == b"used-mem" and value.isdigit():
            log.info("RDB memory usage when created %.2f Mb", int(value) / (1024 * 1024))


def attach(server: "Server") -> None:
    persistence = Persistence(server)
    server.features.persistence = persistence
    server.hooks.disconnect.append(persistence._forget_client)
    server.hooks.shutdown.append(persistence.on_shutdown)
    persistence.load_on_start()
    persistence.reconcile(at_start=True)
    server.hooks.start.append(persistence._schedule)
