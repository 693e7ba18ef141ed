"""The append-only file: Redis 7.0's multi-part AOF, written, fsynced, rewritten and loaded.

`--appendonly yes`: `<dir>/<appenddirname>/` holds a base (an RDB image,
`appendonly.aof.<n>.base.rdb`), the incremental files (`appendonly.aof.<n>.incr.aof`, Redis
commands in RESP) and the manifest (`appendonly.aof.manifest`, aof_manifest.py) naming them. A
plain `appendonly.aof` in `--dir` from an older Redis (or minired) is moved into that directory
as its base, as Redis 7.0 does on upgrade. What propagation.py logs reaches the file (one
write(2) per pass of the event loop) before any reply leaves, as Redis's beforeSleep writes the
AOF buffer before the clients' replies: a kill -9 loses no acknowledged write, and
`appendfsync always|everysec|no` decides, as in Redis, only what an OS crash can take
(`always` fsyncs before replying). A real Redis replays the files to the same data, and
redis-check-aof accepts them. (minired's older files, with `#MS:<unix ms>` clock lines, still
load.) `BGREWRITEAOF` (and the automatic rewrite past auto-aof-rewrite-percentage/min-size)
opens a new incremental file, writes a new base in a forked child (snapshot.py) and then
switches the manifest, as Redis 7.0 does.

Loading refuses, as Redis does, a file it cannot read in full: start-up stops with Redis's
message and the file is left alone (only a truncated tail of the last AOF file is cut off, with
`aof-load-truncated yes`, as Redis does).

AppendOnlyFile is one part of Persistence (persistence.py).
"""
from __future__ import annotations

import errno
import logging
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

from minired.features import aof_rewrite
from minired.features.aof_manifest import Manifest
from minired.features.aof_records import Loader
from minired.features.persist_files import LoadError, fsync_directory, write_atomically, write_synced
from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.server import Server

log = logging.getLogger("minired")

AOF_WRITE_LOG_ERROR_SECONDS = 30  # AOF_WRITE_LOG_ERROR_RATE: a failing write is logged this seldom
AOF_REWRITE_LIMIT_THRESHOLD = 3  # AOF_REWRITE_LIMITE_THRESHOLD: failed rewrites in a row
AOF_REWRITE_LIMIT_MAX_MINUTES = 60


class AppendOnlyFile:
    """The AOF's files, buffer, fsync policy and rewrites (Persistence's part)."""

    server: "Server"
    config: Any
    directory: str
    changes_at_save: int
    child: tuple[int, str, str] | None
    background_save_pending: bool
    background_started: float
    replica_feed: Any
    aof_transaction_client: Any
    aof_expired: list
    _can_fork: Callable[[], bool]
    _fork: Callable[[Callable[[Any], Any], str], int | None]
    _image: Callable[..., Iterator[bytes]]
    _key_progress: Callable[[], Any]
    _kill_child: Callable[[], None]
    _function_codes: Callable[[], list[bytes]]
    _load_rdb: Callable[..., int]
    _close_transaction: Callable[[], None]
    _close_finished_transaction: Callable[[], None]
    _append_expired: Callable[[], None]

    def _init_aof(self) -> None:
        self.aof_file: Any = None
        # Redis's aof_state: "off", "on", or "wait" (turned on, its first rewrite not done)
        self.aof_state = "off"
        self.aof_manifest: Manifest | None = None
        self.aof_base_size = 0
        self.aof_rewrite_base_size = 0
        self.aof_buffer: list[bytes] = []
        self.aof_db = -1
        self.aof_timestamp = 0  # the last `#TS:` line's time (Redis's aof_cur_timestamp)
        self.aof_timestamps = False  # aof-timestamp-enabled, read per record (see reconcile)
        self.aof_rewrite_scheduled = False
        self.enabling_in_exec = False  # CONFIG SET appendonly yes inside EXEC (turn_on_aof)
        self.aof_rewrite_base_name = ""  # the base the rewrite's child writes (its format)
        self.aof_rewrites = 0
        self.aof_last_rewrite_seconds = -1
        self.aof_last_rewrite_ok = True
        self.aof_rewrite_failures = 0  # in a row (stat_aofrw_consecutive_failures)
        self.aof_rewrite_delay_minutes = 0  # see aof_rewrite_limited
        self.aof_next_rewrite_time = 0.0
        self.last_fsync = time.monotonic()
        self.aof_error_logged_at = -AOF_WRITE_LOG_ERROR_SECONDS  # see _write_failed
        self.aof_write_errno = 0  # the last write to the AOF failed with it (_write_failed)
        self.aof_fsync_errno = 0  # the last fsync of the AOF failed with it (_fsync_aof)
        self.fsync_mode = ""

    # --- paths ------------------------------------------------------------------------------

    @property
    def aof_directory(self) -> str:
        return os.path.join(self.directory, self.config.get("appenddirname") or "appendonlydir")

    @property
    def aof_prefix(self) -> str:
        return self.config.get("appendfilename") or "appendonly.aof"

    @property
    def manifest_path(self) -> str:
        return os.path.join(self.aof_directory, self.aof_prefix + ".manifest")

    # --- loading ----------------------------------------------------------------------------

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
            from minired.features.rdb_file import is_rdb  # (the RDB codec: not for every start)

            if is_rdb(data):
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

    def reload_aof(self) -> None:
        """DEBUG LOADAOF: write out what the AOF buffer holds, empty the keyspace and the
        function libraries (emptyData with EMPTYDB_NO_FLAGS: the base holds the libraries, which
        would otherwise already exist) and load the AOF files back, as at start-up; the load's
        changes are not logged again."""
        self.flush_aof(fsync=True)
        server = self.server
        server.keyspace.flushall()
        if self.functions is not None:
            self.functions.flush()
        propagate, server.propagate = server.propagate, None  # replayed, not logged anew
        try:
            self._load_aof()
            self._collect_history()
        except LoadError as exc:
            for line in exc.args:
                log.warning("DEBUG LOADAOF: %s", line)
            raise RedisError(errors.DEBUG_LOADAOF_FAILED) from None
        finally:
            server.propagate = propagate
        self.changes_at_save = server.keyspace.changes()  # (Redis: server.dirty = 0)
        log.warning("Append Only File loaded by DEBUG LOADAOF")

    # --- the AOF file -----------------------------------------------------------------------

    def _base_name(self, seq: int) -> str:
        """A new base's name: an RDB image, or commands with aof-use-rdb-preamble no."""
        suffix = "rdb" if self.config.get("aof-use-rdb-preamble") == "yes" else "aof"
        return f"{self.aof_prefix}.{seq}.base.{suffix}"

    def _base_image(self, name: str, on_key: Any = None) -> Iterator[bytes]:
        """The data now, as the base `name` holds it (rewriteAppendOnlyFile); on_key is called
        after each key (the save delay, a child's progress)."""
        if name.endswith(".rdb"):
            return self._image(aof_base=True, on_key=on_key)
        timestamp = (self.server.clock.ms() // 1000
                     if self.config.get("aof-timestamp-enabled") == "yes" else None)
        return aof_rewrite.command_chunks(self.server.keyspace, self._function_codes(), timestamp,
                                          on_key)

    def _open_incr(self, name: str, truncate: bool = False) -> None:
        self.aof_file = open(os.path.join(self.aof_directory, name), "wb" if truncate else "ab",
                             buffering=0)
        self.aof_db = -1  # a new file starts with a SELECT

    def enable_aof(self, at_start: bool = False) -> None:
        """Start logging. At start-up, after loading (aofOpenIfNeededOnServerStart): append to
        the last incremental file, a new one when there is none; a base of the data first when
        the manifest names no file at all. Turned on later (CONFIG SET, startAppendOnly): the
        AOF waits for a background rewrite, writes going to a temporary incremental file
        meanwhile, and is on once the rewrite has written the data's base."""
        self._make_aof_directory()
        manifest = self.aof_manifest
        if at_start and manifest is not None and (manifest.base is not None or manifest.incr):
            opened = bool(manifest.incr)
            if not opened:
                manifest.next_incr()
            self._persist_manifest(manifest)
            self._open_incr(manifest.incr[-1][0])
            self.aof_state = "on"
            self.aof_rewrite_base_size = self.aof_base_size
            log.info("%s AOF incr file %s on server start", "Opening" if opened else "Creating",
                     manifest.incr[-1][0])
        elif at_start or not self._can_fork():
            self.aof_state = "on"
            self._rewrite_now()
            assert self.aof_manifest is not None
            if at_start:
                log.info("Creating AOF base file %s on server start", self.aof_manifest.base)
                log.info("Creating AOF incr file %s on server start", self.aof_manifest.incr[-1][0])
            else:
                log.info("Append only file enabled: %s", self.aof_file.name)
        else:
            self.aof_state = "wait"
            if self.child is not None and self.child[1] != "aof":
                self.aof_rewrite_scheduled = True
                log.warning("AOF was enabled but there is already another background operation. "
                            "An AOF background was scheduled to start when possible.")
                return
            if self.enabling_in_exec:  # (no fork within a transaction, as Redis)
                self.aof_rewrite_scheduled = True
                log.warning("AOF was enabled during a transaction. An AOF background was "
                            "scheduled to start when possible.")
                return
            # A rewrite of the files while the AOF was off accumulates nothing: start anew.
            self._kill_aof_child()
            try:
                self._start_aof_rewrite()
            except OSError:
                self.aof_state = "off"
                raise

    @property
    def _temp_incr_name(self) -> str:
        """getTempIncrAofName: where writes wait for the first rewrite of an AOF turned on."""
        return f"temp-{self.aof_prefix}.incr"

    def _rewrite_now(self) -> None:
        """A rewrite on the loop: a new base of the data now (and, with the AOF on, a new empty
        incremental file); what the base replaces becomes history."""
        manifest = (self.aof_manifest or Manifest(self.aof_prefix)).copy()
        base_name = self._base_name(manifest.base_seq + 1)
        self._make_aof_directory()
        size = write_atomically(os.path.join(self.aof_directory, base_name),
                                self._base_image(base_name, self._key_progress()),
                                temp_name=f"temp-rewriteaof-{os.getpid()}.aof")
        if self.aof_state != "off":
            if self.aof_file is not None:
                self.flush_aof(fsync=True, close_transaction=True)
                self.aof_file.close()
            self._open_incr(manifest.next_incr())
        self._switch_base(manifest, base_name)
        self.aof_base_size = self.aof_rewrite_base_size = size

    def _switch_base(self, manifest: Manifest, base_name: str) -> None:
        """The new base in place: the old one and the incremental files it holds become
        history, the manifest is persisted, history deleted unless aof-disable-auto-gc."""
        manifest.new_base(base_name)
        manifest.retire_incr(keep_last=self.aof_file is not None)
        self._persist_manifest(manifest)
        self.aof_manifest = manifest
        self._collect_history()

    def _collect_history(self) -> None:
        """aofDelHistoryFiles: history files deleted and left out of the manifest, unless
        aof-disable-auto-gc yes keeps them."""
        manifest = self.aof_manifest
        if (manifest is None or not manifest.history
                or self.config.get("aof-disable-auto-gc") == "yes"):
            return
        for name, _ in manifest.history:
            log.info("Removing the history file %s in the background", name)
            try:
                os.unlink(os.path.join(self.aof_directory, name))
            except OSError:
                pass
        manifest.history = []
        self._persist_manifest(manifest)

    def rewrite_aof(self, in_exec: bool = False) -> str:
        """BGREWRITEAOF. (With appendonly off too: the files are there for when it is on.)
        Inside EXEC it is scheduled, as Redis forks no child within a transaction."""
        if self.child is not None and self.child[1] == "aof":
            raise RedisError(errors.AOF_REWRITE_IN_PROGRESS)
        if self.child is not None or self.background_save_pending or in_exec:
            self.aof_rewrite_scheduled = True  # once the BGSAVE child is done
            self.aof_rewrite_failures = 0  # asked for: not held back by aofRewriteLimited
            return "Background append only file rewriting scheduled"
        if self.aof_manifest is None:
            self._read_manifest_if_any()
        self._start_aof_rewrite()
        return "Background append only file rewriting started"

    def _start_aof_rewrite(self) -> None:
        """Redis 7.0's rewrite (rewriteAppendOnlyFileBackground): new writes go to a new
        incremental file from now on, a forked child writes the base of the data as it is now,
        and on its success the manifest names that base and the incremental files opened
        since. With the AOF off no incremental file is opened; while it waits for its first
        rewrite, writes go to a temporary one."""
        self.aof_rewrite_scheduled = False
        self.aof_rewrites += 1
        if not self._can_fork():
            if self.aof_state == "wait":
                self.aof_state = "on"
            self._rewrite_now()
            return
        self._make_aof_directory()
        manifest = self.aof_manifest = self.aof_manifest or Manifest(self.aof_prefix)
        if self.aof_state == "on":
            self.flush_aof(fsync=True, close_transaction=True)
            self.aof_file.close()
            self._open_incr(manifest.next_incr())
            self._persist_manifest(manifest)
            log.info("Creating AOF incr file %s on background rewrite", manifest.incr[-1][0])
        elif self.aof_state == "wait":
            self._open_incr(self._temp_incr_name, truncate=True)
            log.info("Creating AOF incr file %s on background rewrite", self._temp_incr_name)
        self.background_started = time.time()
        directory = self.aof_directory
        # The child writes the base under a temporary name; the parent renames it into place
        # once the child succeeded, then switches the manifest (backgroundRewriteDoneHandler).
        base_name = self.aof_rewrite_base_name = self._base_name(manifest.base_seq + 1)
        pid = self._fork(lambda on_key: write_synced(
            os.path.join(directory, f"temp-rewriteaof-bg-{os.getpid()}.aof"),
            self._base_image(base_name, on_key)), "aof")
        assert pid is not None
        self.child = (pid, "aof", os.path.join(directory, f"temp-rewriteaof-bg-{pid}.aof"))
        log.info("Background append only file rewriting started by pid %d", pid)

    def _finish_aof_rewrite(self, ok: bool, temp: str) -> None:
        """backgroundRewriteDoneHandler: on success the child's base and (for an AOF that
        waited) the temporary incremental file take their names, and the manifest switches;
        on failure the AOF that waits tries again (aof_rewrite_scheduled)."""
        if ok and self.aof_manifest is not None:
            manifest = self.aof_manifest.copy()
            base_name = self.aof_rewrite_base_name
            try:
                os.replace(temp, os.path.join(self.aof_directory, base_name))
                if self.aof_state == "wait":
                    os.replace(os.path.join(self.aof_directory, self._temp_incr_name),
                               os.path.join(self.aof_directory, manifest.next_incr()))
                fsync_directory(self.aof_directory)
                self._switch_base(manifest, base_name)
            except OSError as exc:
                log.warning("Error trying to switch to the new AOF base file %s: %s",
                            base_name, exc.strerror)
                ok = False
            else:
                self.aof_base_size = self.aof_rewrite_base_size = os.path.getsize(
                    os.path.join(self.aof_directory, base_name))
                if self.aof_file is not None:
                    self.aof_db = -1  # (a SELECT is issued again)
                if self.aof_state == "wait":
                    self.aof_state = "on"
                log.info("Background AOF rewrite finished successfully")
        self.aof_last_rewrite_ok = ok
        if ok:
            self.aof_rewrite_failures = 0
        else:
            self.aof_rewrite_failures += 1
            log.warning("Background AOF rewrite terminated with error")
            try:
                os.unlink(temp)
            except OSError:
                pass
        if self.aof_state == "wait":  # the writes since are dropped with the file
            self._drop_temp_incr()
            self.aof_rewrite_scheduled = True

    def _kill_aof_child(self) -> None:
        """killAppendOnlyChild: a rewrite at work is stopped (its temporary file removed)."""
        if self.child is not None and self.child[1] == "aof":
            log.info("Killing running AOF rewrite child: %d", self.child[0])
            self._kill_child()

    def _drop_temp_incr(self) -> None:
        """aofDelTempIncrAofFile (and the AOF buffer cleared with it)."""
        if self.aof_file is not None:
            self.aof_file.close()
            self.aof_file = None
        self.aof_buffer.clear()
        log.info("Removing the temp incr aof file %s in the background", self._temp_incr_name)
        try:
            os.unlink(os.path.join(self.aof_directory, self._temp_incr_name))
        except OSError:
            pass

    def aof_rewrite_limited(self) -> bool:
        """aofRewriteLimited: after 3 failed rewrites in a row an automatic or scheduled one
        waits 1 minute, then 2, 4, ... up to an hour (BGREWRITEAOF itself is never held)."""
        if self.aof_rewrite_failures < AOF_REWRITE_LIMIT_THRESHOLD:
            self.aof_rewrite_delay_minutes = 0
            self.aof_next_rewrite_time = 0.0
            return False
        now = time.time()
        if self.aof_next_rewrite_time:
            if now < self.aof_next_rewrite_time:
                return True
            self.aof_next_rewrite_time = 0.0
            return False
        self.aof_rewrite_delay_minutes = min(max(self.aof_rewrite_delay_minutes * 2, 1),
                                             AOF_REWRITE_LIMIT_MAX_MINUTES)
        self.aof_next_rewrite_time = now + self.aof_rewrite_delay_minutes * 60
        log.warning("Background AOF rewrite has repeatedly failed and triggered the limit, will "
                    "retry in %d minutes", self.aof_rewrite_delay_minutes)
        return True

    def disable_aof(self) -> None:
        """stopAppendOnly: a rewrite at work is stopped; what could not be written is dropped."""
        if self.aof_state == "off":
            return
        if self.aof_file is not None:
            self.flush_aof(fsync=True, close_transaction=True)
        waiting = self.aof_state == "wait"
        self.aof_state = "off"
        self.aof_rewrite_scheduled = False
        self._kill_aof_child()
        if waiting:
            self._drop_temp_incr()
        elif self.aof_file is not None:
            self.aof_file.close()
            self.aof_file = None
        self.aof_buffer.clear()
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
        """serverCron's automatic rewrite past auto-aof-rewrite-percentage/min-size."""
        if self.child is not None or self.aof_state != "on" or self.background_save_pending:
            return
        percentage = self.config.number("auto-aof-rewrite-percentage")
        min_size = self.config.number("auto-aof-rewrite-min-size")
        if not percentage:
            return
        size = self.aof_file.tell() + self.aof_rewrite_base_size
        base = self.aof_rewrite_base_size or 1
        growth = (size - base) * 100 // base
        if size > min_size and growth >= percentage and not self.aof_rewrite_limited():
            log.info("Starting automatic rewriting of AOF on %d%% growth", growth)
            self._start_aof_rewrite()
