"""The write path: every write, as its effects, to the AOF and the replicas alike.

Every successful write command is logged by its effects, as Redis propagates it
(aof_effects.py: absolute TTLs, SPOP as SREM, a blocking command as its non-blocking form when
served, ...), a key deleted for its TTL as DEL; the writes of one EXEC or script are wrapped in
MULTI/EXEC. Each record goes to the AOF's buffer (aof.py writes it out) and to the replication
stream (replication.py), one source of truth for what is propagated.

Propagation is one part of Persistence (persistence.py).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from minired.engine.blocking import Block
from minired.engine.client import Client
from minired.engine.table import COMMANDS, stats_of
from minired.features.aof_effects import deletion_of_expired, effects
from minired.features.aof_records import AofOnly, ReplicaOnly, timestamp_annotation
from minired.protocol.errors import RedisError
from minired.protocol.resp import encode_command

if TYPE_CHECKING:
    from minired.engine.server import Server
    from minired.engine.table import CommandSpec

log = logging.getLogger("minired")

# The records around the writes of one command or transaction, encoded once.
_MULTI, _EXEC = [b"MULTI"], [b"EXEC"]
_MULTI_RECORD, _EXEC_RECORD = encode_command(_MULTI), encode_command(_EXEC)


class Propagation:
    """dispatch's propagate hook, blocked commands served, expiries, transactions."""

    server: "Server"
    config: Any
    aof_file: Any
    aof_buffer: list[bytes]
    aof_db: int
    aof_timestamp: int
    aof_timestamps: bool

    def _init_propagation(self) -> None:
        # The writes of the EXEC or script running now (or that just ended), as (db, argv).
        self.aof_transaction: list[tuple[int, list]] = []
        self.aof_transaction_client: Client | None = None
        self.aof_transaction_key: Any = None  # see _transaction_of
        self.aof_expired: list[tuple[int, list]] = []  # DELs of expired keys, see _expired
        # The replication stream (features/replication.py), fed the same records as the AOF
        # once a replica is attached: feed(db, record), the record encoded, db None for a record
        # that needs no SELECT.
        self.replica_feed: Callable[[int | None, bytes], None] | None = None
        self._blocked: dict[int, tuple[int, list]] = {}

    def propagate(self, c: Client, spec: "CommandSpec", argv: list, reply: Any) -> None:
        """dispatch.call hook for every successful write command."""
        if type(reply) is Block:
            self._blocked[c.id] = (c.db_index, argv)  # logged once served, see _served
            return
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
            if self.aof_file is not None or self.replica_feed is not None:
                db_index, argv = entry
                self._log(waiter.client, db_index, argv, reply)

    def _forget_client(self, client: Client) -> None:
        self._blocked.pop(client.id, None)

    def _log(self, c: Client, db_index: int, argv: list, reply: Any) -> None:
        only = None
        if c.in_script:
            run = self.server.features.scripting.current
            if run is not None and run.propagate & 3 != 3:
                # redis.set_repl: REPL_NONE logs nothing, REPL_AOF / REPL_REPLICA one of the two
                if not run.propagate & 3:
                    return
                only = AofOnly if run.propagate & 3 == 1 else ReplicaOnly
        try:
            records = effects(c.server.keyspace[db_index], argv, reply, self.config)
        except Exception:  # a bug here must not fail a write that happened: log it as sent
            log.exception("rewriting %r for the AOF failed", argv[:1])
            records = [argv]
        if not records:
            return
        if only is not None:
            records = [only(record) for record in records]
        elif len(records) == 1 and not (self.aof_expired or c.in_exec or c.in_script):
            # (the usual write: one record of its own, nothing around it)
            if self.aof_transaction_client is not None:
                self._close_transaction()
            self._append(db_index, records[0])
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
            self.aof_expired.append((db.index, [deletion_of_expired(self.config), key]))

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
        return c, (stats_of(self.server, COMMANDS[b"exec"]).calls if c.in_exec else None)

    def _append_atomically(self, records: list) -> None:
        """(db, argv) records in a MULTI/EXEC block when there is more than one, as Redis wraps
        a command's or a transaction's writes; SELECT before MULTI, for the first record."""
        if len(records) == 1:
            self._append(*records[0])
            return
        self._append(records[0][0], _MULTI, _MULTI_RECORD)
        for db_index, argv in records:
            self._append(db_index, argv)
        self._append(None, _EXEC, _EXEC_RECORD)

    def _append(self, db_index: int | None, argv: list, record: bytes | None = None) -> None:
        """One record, to the AOF and to the replicas alike (one source of truth for what is
        propagated), each preceded by a SELECT where its database changes. Encoded once for
        both (`record`, when the caller has it already)."""
        if record is None:
            record = encode_command(argv)
        if self.aof_file is not None and type(argv) is not ReplicaOnly:
            buffer = self.aof_buffer
            if self.aof_timestamps:
                # a `#TS:` line whenever the second changed (feedAppendOnlyFile)
                now = self.server.clock.ms() // 1000
                if now > self.aof_timestamp:
                    self.aof_timestamp = now
                    buffer.append(timestamp_annotation(now))
            if db_index is not None and db_index != self.aof_db:
                buffer.append(encode_command([b"SELECT", b"%d" % db_index]))
                self.aof_db = db_index
            buffer.append(record)
        if self.replica_feed is not None and type(argv) is not AofOnly:
            self.replica_feed(db_index, record)

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
