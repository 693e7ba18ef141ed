"""Snapshots: dump.rdb written and loaded, and the forked child that saves in the background.

Snapshots (`SAVE`, `BGSAVE`, save points, `SHUTDOWN SAVE`, a signal when save points are set)
are RDB version 10 files (rdb_file.py) written to `--dir`/`--dbfilename`: a Redis 7.0 loads
them, and minired loads Redis's. `SAVE` writes on the event loop, as Redis's SAVE blocks; a
background save forks, as Redis does: the child writes the copy-on-write image of the
keyspace while the parent keeps serving, and the parent reaps it from its 100 ms tick.
(A thread could not do that: it would need the GIL for every value it encodes, and the
keyspace would change under it; chunks on the loop would save a mix of times.) Where fork
is not available the save runs on the loop. The same child writes an AOF rewrite's base
(aof.py). Files are written atomically (persist_files.py). Files of the format minired used
before (`#minired-snapshot 1`) still load.

Snapshots is one part of Persistence (persistence.py), which combines it with the AOF
(aof.py) and the write path (propagation.py) over one shared state.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

from minired.features import replication
from minired.features.aof_records import Loader
from minired.features.child_info import AOF_COW_SIZE, RDB_COW_SIZE, ChildInfo, ChildReporter, KeyProgress
from minired.features.oom_score import BACKGROUND_CHILD, apply_oom_score
from minired.features.persist_files import LoadError, write_atomically
from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.server import Server
    from minired.features.rdb_file import RdbError

log = logging.getLogger("minired")

LEGACY_HEADER = b"#minired-snapshot 1\n"
SAVE_RETRY_SECONDS = 5  # CONFIG_BGSAVE_RETRY_DELAY


class FunctionStore(Protocol):
    """The function libraries (scripting/functions.py), as FUNCTION DUMP/RESTORE see them."""

    def dump(self) -> bytes: ...

    def restore(self, payload: bytes, policy: bytes) -> None: ...


def parse_save_points(text: str) -> list[tuple[int, int]]:
    parts = text.split()
    return [(int(parts[i]), int(parts[i + 1])) for i in range(0, len(parts) - 1, 2)]


class Snapshots:
    """SAVE, BGSAVE, DEBUG RELOAD, save points, and the background child (Persistence's part)."""

    server: "Server"
    config: Any
    aof_rewrite_scheduled: bool
    aof_rewrite_limited: Callable[[], bool]
    _start_aof_rewrite: Callable[[], None]
    _finish_aof_rewrite: Callable[[bool, str], None]

    def _init_snapshots(self) -> None:
        # keyspace.changes() when the last snapshot was made (or the count restarted): what
        # INFO rdb_changes_since_last_save and the save points read is the difference.
        self.changes_at_save = 0
        self.changes_at_fork = 0
        self.last_save_attempt = 0.0
        self.last_save_ok = True
        self.background_save_pending = False  # a BGSAVE child runs (or, without fork, is due)
        self.background_save_scheduled = False  # BGSAVE SCHEDULE waits for a rewrite to end
        self.background_started = 0.0
        self.saves = 0  # INFO rdb_saves
        self.last_background_save_seconds = -1  # INFO rdb_last_bgsave_time_sec (-1: none yet)
        self.keys_loaded = 0
        self.keys_expired_at_load = 0
        # While load_while_serving reads the snapshot: its Unix start time and the file's
        # size, for INFO's loading fields (0: not loading).
        self.loading_since = 0
        self.loading_total = 0
        # The child writing a snapshot or an AOF base: (pid, what, temp file) or None.
        self.child: tuple[int, str, str] | None = None
        self.forks = 0  # INFO total_forks
        self.child_info = ChildInfo()  # what the child reports over its pipe (INFO's cow sizes)
        # The function libraries, once the script engine exists (it registers itself).
        self.functions: FunctionStore | None = None
        self.pending_functions: list[bytes] = []  # read at start-up, before the engine exists

    # --- paths ------------------------------------------------------------------------------

    @property
    def directory(self) -> str:
        return self.config.get("dir") or "."

    @property
    def snapshot_path(self) -> str:
        return os.path.join(self.directory, self.config.get("dbfilename") or "dump.rdb")

    # --- loading ----------------------------------------------------------------------------

    def _load_snapshot(self, started: float) -> None:
        """dump.rdb (or minired's older snapshot format), if there is one, at start-up."""
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
            # (a replica keeps the keys already expired: its master deletes them)
            self._load_rdb(data, path, keep_expired=bool(self.config.get("replicaof")),
                           checked_as=self.config.get("dbfilename") or "dump.rdb",
                           restore_repl=True)
        log.info("DB loaded from disk: %.3f seconds", time.monotonic() - started)

    def _load_rdb(self, data: bytes, name: str, keep_expired: bool,
                  checked_as: str | None = None, restore_repl: bool = False) -> int:
        """Load an RDB image into the empty keyspace (dump.rdb, or an AOF's base). checked_as:
        the image is the snapshot file, named so (rdbFileBeingLoaded): a damage in it is
        reported as Redis reports it, with redis-check-rdb's report on stdout (rdb_check.py).
        With restore_repl (dump.rdb at start-up, not an AOF's preamble) the replication ID and
        offset it holds are taken back (loadDataFromDisk)."""
        from minired.features import rdb_file  # (the RDB codec: loaded with the first file)

        server = self.server
        if any(db.data for db in server.keyspace.dbs):
            raise LoadError("RDB image loaded into a non-empty keyspace")  # not reached at start
        try:
            loaded = rdb_file.load(data, server.keyspace, server.clock.ms(), keep_expired,
                                   self.sanitizes_loads(), self.config.number("key-load-delay"),
                                   list_expired=restore_repl)
        except rdb_file.RdbError as exc:
            if checked_as is not None and exc.reason is not None:
                self._report_damaged_snapshot(data, checked_as, exc)
            raise LoadError(*exc.warnings, f"{exc} ({name}). Terminating server after rdb file "
                            "reading failure.") from None
        self.keys_loaded = loaded.keys
        server.stats.dump_payload_sanitizations += loaded.sanitized
        self.keys_expired_at_load = loaded.expired
        _log_aux_fields(loaded.aux)
        for key in loaded.empty_keys:
            log.warning("rdbLoadObject skipping empty key: %s", key.decode("utf-8", "replace"))
        if loaded.empty_keys:
            log.warning("Done loading RDB, keys loaded: %d, keys expired: %d, empty keys "
                        "skipped: %d.", loaded.keys, loaded.expired, len(loaded.empty_keys))
        else:
            log.info("Done loading RDB, keys loaded: %d, keys expired: %d.", loaded.keys,
                     loaded.expired)
        if loaded.functions:
            self._restore_functions(loaded.functions)
        if restore_repl:
            replication.restore_at_start(server, rdb_file.repl_info(loaded.aux),
                                         loaded.expired_keys or [])
        return loaded.end

    def _report_damaged_snapshot(self, data: bytes, name: str, exc: RdbError) -> None:
        """rdbReportError for the file being loaded: the auxiliary fields read so far (rdbLoad
        logs them as it reads), the failure, then the checker's report on stdout; the server
        ends with "Terminating server after rdb file reading failure." only when the checker
        itself met a corruption (in check mode rdbReportError logs it and exits)."""
        from minired.features import rdb_file
        from minired.features.rdb_check import check_report

        assert exc.reason is not None
        _log_aux_fields(exc.aux)
        for line in exc.warnings:
            log.warning("%s", line)
        if exc.reason == rdb_file.EOF_MESSAGE:
            log.warning("Short read or OOM loading DB. Unrecoverable error, aborting now.")
        # server.loading_loaded_bytes: moved every loading-process-events-interval-bytes read
        # (rdbLoadProgressCallback), so 0 for a file smaller than that; past it, the last
        # interval's boundary (Redis's counter is at most one read short of it).
        interval = self.config.number("loading-process-events-interval-bytes") or 1
        loaded_bytes = exc.pos - exc.pos % interval
        log.warning("Internal error in RDB reading offset %d, function at rdb.c:0 -> %s",
                    loaded_bytes, exc.reason)
        lines, reported = check_report(data, name, self.sanitizes_loads(),
                                       self.server.clock.ms(), loaded_bytes)
        try:
            sys.stdout.write("".join(line + "\n" for line in lines))
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        raise LoadError(*(("Terminating server after rdb file reading failure.",)
                          if reported else ()))

    def sanitizes_loads(self) -> bool:
        """Whether RDB data loaded from a file or a master is checked deeply: only with
        sanitize-dump-payload yes (clients spares loading, as rdbLoadObject)."""
        return self.config.get("sanitize-dump-payload") == "yes"

    def _restore_functions(self, codes: list[bytes]) -> None:
        if self.functions is None:
            self.pending_functions.extend(codes)  # startup.py brings the engine up for them
            return
        from minired.features import rdb_file

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

    # --- saving (the interface commands/server.py uses) -------------------------------------

    def _function_codes(self) -> list[bytes]:
        from minired.features import rdb_file

        if self.functions is None:
            return self.pending_functions
        return rdb_file.functions_from_payload(self.functions.dump())

    def _image(self, aof_base: bool = False, data: bool = True,
               functions: bool = True, on_key: KeyProgress | None = None) -> Iterator[bytes]:
        """The RDB image; a replica's REPLCONF rdb-filter-only may leave out the keys, the
        functions, or both (SLAVE_REQ_RDB_EXCLUDE_DATA / _FUNCTIONS). on_key: after each key.
        Snapshots and the images sent to replicas hold the replication ID and offset when there
        is a stream to continue (rdbPopulateSaveInfo); an AOF's base does not."""
        from minired.features import rdb_file
        from minired.features.rdb import Compact
        from minired.features.rdb_format import COMPRESS_IN_FILES, NO_COMPRESSION

        server = self.server
        state = server.features.replication
        repl = state.save_info() if state is not None and not aof_base else None
        return rdb_file.save_chunks(
            server.keyspace if data else _NO_KEYS, self._function_codes() if functions else [],
            int(time.time()),
            server.memory.used(),
            compress_from=(COMPRESS_IN_FILES if self.config.get("rdbcompression") == "yes"
                           else NO_COMPRESSION),
            checksum=self.config.get("rdbchecksum") == "yes", aof_base=aof_base,
            compact=Compact.from_config(self.config.get), on_key=on_key, repl=repl)

    def _key_progress(self, reporter: ChildReporter | None = None) -> KeyProgress | None:
        """What runs after each key saved: rdb-key-save-delay (microseconds per key, Redis's
        debugDelay in rdbSaveKeyValuePair, which the tests use to keep a save at work) and, in
        a child, its progress reports to the parent (child_info.py)."""
        delay = self.config.number("rdb-key-save-delay")
        if not delay and reporter is None:
            return None
        return KeyProgress(delay, reporter)

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
            size = write_atomically(self.snapshot_path,
                                    self._image(on_key=self._key_progress()))
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
        from minired.features import rdb_file

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
        except (OSError, rdb_file.RdbError, RedisError) as exc:
            log.warning("DEBUG RELOAD: %s", exc)
            raise RedisError(errors.DEBUG_RELOAD_FAILED) from None
        log.warning("DB reloaded by DEBUG RELOAD")

    def flushed_all(self, changes: int) -> None:
        """FLUSHALL (flushAllDataAndResetRDB): a background save of the old data is stopped, and
        with save points set the empty dataset is saved at once, so a restart does not bring
        the flushed keys back. `changes`: what FLUSHALL counts, which dispatch adds once it
        returns."""
        if self.child is not None and self.child[1] == "rdb":
            self._kill_child()
        self.background_save_pending = False
        if self.config.get("save"):
            try:
                self.save()
            except RedisError:
                return  # logged by save(); FLUSHALL itself succeeded
            # Redis counts no change after this save, FLUSHALL's own included.
            self.changes_at_save += changes

    def changes_since_save(self) -> int:
        """INFO rdb_changes_since_last_save (Redis's server.dirty since its last snapshot)."""
        return self.server.keyspace.changes() - self.changes_at_save

    def _saved(self, changes_at: int | None = None) -> None:
        """A snapshot is on disk, holding the changes counted up to `changes_at` (a child's:
        those before its fork) or all of them."""
        self.last_save_ok = True
        self.config.note_bgsave(True)  # writes refused for a failed BGSAVE are allowed again
        self.saves += 1
        self.changes_at_save = (changes_at if changes_at is not None
                                else self.server.keyspace.changes())
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
        self.changes_at_fork = self.server.keyspace.changes()
        path = self.snapshot_path
        pid = self._fork(lambda on_key: write_atomically(path, self._image(on_key=on_key),
                                                         temp_name=f"temp-{os.getpid()}.rdb"),
                         "rdb")
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

    def saving_in_background(self) -> bool:
        return self.background_save_pending or (self.child is not None and self.child[1] == "rdb")

    def _check_save_points(self) -> None:
        dirty = self.changes_since_save()
        if not dirty or self.child is not None or self.background_save_pending:
            return
        # After a failed save, wait a few seconds before trying again, as Redis does.
        if not self.last_save_ok and time.monotonic() - self.last_save_attempt < SAVE_RETRY_SECONDS:
            return
        elapsed = time.time() - self.server.last_save
        for seconds, changes in parse_save_points(self.config.get("save") or ""):
            if dirty >= changes and elapsed >= seconds:
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                self._start_background_save()
                return

    # --- the background child ---------------------------------------------------------------

    def _can_fork(self) -> bool:
        # A server driven in-process without a loop has nobody to reap a child.
        return hasattr(os, "fork") and self.server.loop is not None

    def current_child_seconds(self, what: str) -> int:
        """INFO's rdb_current_bgsave_time_sec / aof_current_rewrite_time_sec (-1: none runs)."""
        if self.child is None or self.child[1] != what:
            return -1
        return int(time.time() - self.background_started)

    def _fork(self, job: Callable[[KeyProgress | None], Any], what: str) -> int | None:
        """Run job in a forked child (the keyspace frozen as it is now); None without fork.
        job gets the per-key hook that reports the child's progress over the child-info pipe;
        what ("rdb" or "aof") names the final report, sent once the job succeeded."""
        if not self._can_fork():
            return None
        write_end = self.child_info.open(sum(len(db) for db in self.server.keyspace.dbs))
        try:
            pid = os.fork()
        except OSError:
            os.close(write_end)
            self.child_info.close()
            raise
        self.forks += 1
        if pid == 0:  # the child: write, then leave without running the parent's exit code
            code = 1
            try:
                os.close(self.child_info.fd)
                _close_listeners(self.server)
                _detach_child_signals()
                apply_oom_score(self.server.config, BACKGROUND_CHILD)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                reporter = ChildReporter(write_end, "RDB" if what == "rdb" else "AOF rewrite")
                job(self._key_progress(reporter))
                reporter.send(RDB_COW_SIZE if what == "rdb" else AOF_COW_SIZE, 0)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
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
            self.child_info.receive()
            return
        self.child = None
        ok = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if ok:  # its last report: the cow size INFO keeps (checkChildrenDone)
            self.child_info.receive()
        self.child_info.close()
        if not ok:
            try:
                os.unlink(temp)
            except OSError:
                pass
        seconds = int(time.time() - self.background_started)
        if what == "rdb":
            self.last_background_save_seconds = seconds
            if ok:
                self._saved(self.changes_at_fork)
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
        if self.aof_rewrite_scheduled and not self.aof_rewrite_limited():
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
        self.child_info.close()


class _NoKeys:
    """A keyspace of no databases, for an image without the data."""

    dbs: tuple = ()


_NO_KEYS = _NoKeys()


def _close_listeners(server: "Server") -> None:
    """In a forked child (closeChildUnusedResourceAfterFork): the parent's listening sockets are
    closed (a unix socket's file left in place). Kept open, a child that outlives its parent
    (killed with SIGKILL while the child saves) would hold the port in LISTEN with nobody to
    accept: connections would hang there, and a server restarted on that port could not bind."""
    for listener in server.listeners:
        for sock in listener.sockets or ():
            try:
                os.close(sock.fileno())
            except OSError:
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
