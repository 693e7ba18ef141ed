"""Persistence in Redis 7.0's own files: dump.rdb snapshots and the multi-part append-only file.

One subsystem over one state, in parts that can be read alone:
- snapshot.py: SAVE/BGSAVE/save points/DEBUG RELOAD, dump.rdb loaded, the forked child;
- aof.py: the AOF's files, its fsync policy, rewrites, and loading it;
- propagation.py: the write path, each write's effects to the AOF and the replicas;
- aof_manifest.py, aof_records.py, persist_files.py: the manifest, the RESP records and their
  replay, atomic file writes.
This module combines them, decides at start-up which files load (Redis's loadDataFromDisk),
follows CONFIG SET (reconcile) and runs the 100 ms tick.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING

from minired.engine import dispatch
from minired.features.aof import AppendOnlyFile
from minired.features.persist_files import LoadError
from minired.features.propagation import Propagation
from minired.features.snapshot import Snapshots
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.server import Server

log = logging.getLogger("minired")

TICK_SECONDS = 0.1


class Persistence(Snapshots, AppendOnlyFile, Propagation):
    """Serves SAVE/BGSAVE/BGREWRITEAOF/SHUTDOWN SAVE (commands/server.py) and keeps the AOF."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.config = server.config
        self._init_snapshots()
        self._init_aof()
        self._init_propagation()
        self._timer: asyncio.TimerHandle | None = None
        self.stopped = False
        self.keeps_files = False  # (see reconcile)

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
        self._load_snapshot(started)

    # --- the periodic tick -----------------------------------------------------------------------

    def reconcile(self, at_start: bool = False) -> None:
        """Follow CONFIG SET appendonly/appendfsync/aof-timestamp-enabled/save: install the
        hooks they need (and only those: with both off, the write path pays one attribute
        check). CONFIG SET calls it after every change, and so does the tick."""
        server = self.server
        wants_aof = self.config.get("appendonly") == "yes"
        if wants_aof and self.aof_state == "off":
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
        elif not wants_aof and self.aof_state != "off":
            self.disable_aof()
        self.fsync_mode = self.config.get("appendfsync") or "everysec"
        self.aof_timestamps = self.config.get("aof-timestamp-enabled") == "yes"
        if self.aof_manifest is not None and self.aof_manifest.history:
            self._collect_history()  # (aof-disable-auto-gc turned off)
        logging_on = self.aof_state != "off" or self.replica_feed is not None
        server.sync_before_reply = self.write_before_reply if logging_on else None
        for db in server.keyspace.dbs:
            db.on_expired = self._expired if logging_on else None
        # Files are kept on their own (save points, the AOF, a cluster node's layout) once they
        # were asked for: AOF, save points, or a --dir of the user's. SAVE and BGSAVE write into
        # `dir` in any case, as Redis's do.
        self.keeps_files = (self.aof_state != "off" or bool(self.config.get("save"))
                            or (self.directory != "."
                                and self.config.get("temporary-dir") != "yes"))
        server.features.saver = self
        server.propagate = self.propagate if logging_on else None
        server.blocking.on_finish = self._served if logging_on else None

    def turn_on_aof(self, in_exec: bool = False) -> bool:
        """CONFIG SET appendonly yes, at once, as Redis's startAppendOnly: False (the setting
        undone, the reason logged) when the files cannot be made. Inside EXEC the rewrite
        that starts the AOF is scheduled."""
        self.enabling_in_exec = in_exec
        try:
            self.reconcile()
        finally:
            self.enabling_in_exec = False
        return self.aof_state != "off"

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
            self._start_scheduled()
            self._check_save_points()
        except Exception:
            log.exception("persistence tick failed")
        self._schedule()

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
        if self.aof_state != "off":
            self.disable_aof()
        # SHUTDOWN already saved (or was told NOSAVE); a signal saves when save points are set.
        by_command, self.server.features.shutdown_by_command = self.server.features.shutdown_by_command, False
        if not by_command and self.config.get("save") and self.changes_since_save():
            try:
                self.save()
            except RedisError:
                pass


def attach(server: "Server") -> None:
    """Persistence's state and hooks; the data on disk is loaded by load_at_start (or by
    load_while_serving, once the server listens)."""
    persistence = Persistence(server)
    server.features.persistence = persistence
    server.hooks.disconnect.append(persistence._forget_client)
    server.hooks.shutdown.append(persistence.on_shutdown)
    server.hooks.start.append(persistence._schedule)


def load_at_start(server: "Server") -> None:
    """loadDataFromDisk, before the server listens (embedded servers, cluster nodes)."""
    persistence = server.features.persistence
    persistence.load_on_start()
    persistence.reconcile(at_start=True)


async def load_while_serving(server: "Server") -> None:
    """loadDataFromDisk as redis-server runs it: the listeners are open, and until the data is
    loaded every command not flagged loading is answered -LOADING (dispatch) and INFO says
    loading:1. The snapshot is read on a worker thread (the loop keeps answering; the keyspace
    is only filled once the whole file has been read, key-load-delay pausing the thread after
    each key); an AOF is replayed through dispatch, so it loads before the loop runs again."""
    persistence = server.features.persistence
    if persistence.config.get("appendonly") == "yes" or not os.path.exists(
            persistence.snapshot_path):
        # Loading, as below, until it is over: a LoadError leaves it so, and what the loop
        # serves while the process winds down is refused -LOADING (the replay itself goes
        # through dispatch.call, which does not ask).
        dispatch.set_loading(server, True)
        load_at_start(server)
        dispatch.set_loading(server, False)
        return
    try:
        persistence.loading_total = os.path.getsize(persistence.snapshot_path)
    except OSError:
        persistence.loading_total = 0
    persistence.loading_since = int(time.time())
    dispatch.set_loading(server, True)
    server.clock.loading = True  # (nothing expires meanwhile: Redis's server.loading)
    loop = asyncio.get_running_loop()
    loading = loop.run_in_executor(None, persistence.load_on_start)
    stopping = loop.create_task(server.stopped.wait())
    await asyncio.wait((loading, stopping), return_when=asyncio.FIRST_COMPLETED)
    if not loading.done():
        # SHUTDOWN while loading (never saving: commands/server.py): Redis exits from its
        # loading loop; the worker thread cannot be stopped, so the process ends here.
        log.warning("Redis is now ready to exit, bye bye...")
        logging.shutdown()
        os._exit(0)
    stopping.cancel()
    # A LoadError fails the start-up with the server still loading: Redis exits from its
    # loading loop, so a command that arrives while the process winds down is still refused
    # with -LOADING, never served from a half-loaded or empty dataset.
    loading.result()
    server.clock.loading = False
    dispatch.set_loading(server, False)
    persistence.loading_since = 0
    persistence.reconcile(at_start=True)
