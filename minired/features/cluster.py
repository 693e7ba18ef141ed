"""Cluster mode: N masters (and their replicas, and spare nodes in no cluster yet) served from
one process, the 16384 hash slots split between the masters, and the redirections a Redis 7.0
cluster node gives (MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN, READONLY), as Redis's
getNodeByQuery decides them.

Each node is a whole minired server (its own keyspace, clients, scripts and statistics) on its
own port; the nodes share the process's event loop and one clock. What a cluster bus would
carry between real nodes is direct here: the slot map is one object every node reads, a
PUBLISH reaches the subscribers of every node, and a replica serves its master's database
object itself (a replica that never lags). The layout changes through the commands the tools
of a real cluster send (CLUSTER SETSLOT, MIGRATE, MEET, ADDSLOTS, REPLICATE) and through the
MINIRED CLUSTER commands (commands/cluster.py): FAILOVER kills a node, whose replica is
promoted once cluster-node-timeout and the election delay have passed on the clock (tick).

Moving keys sends the keyspace events MIGRATE does (`restore` on the target, `del` on the
source), and the nodes' persistence logs it as Redis's AOFs do (RESTORE on the target, DEL on
the source), so an AOF replays a key where it was moved. When the nodes keep files (--dir, --save or --appendonly), the layout is kept too, as
Redis keeps nodes.conf: each node's `cluster-config-file` (nodes-0.conf, ... in the shared
directory) is written at start-up and at every change of the layout, and read back at the next
start, so the slots stay where their keys were moved (node ids and epochs too).

Dispatch asks `ClusterNode.route` about every command once cluster mode is on (the same
one-flag gate as tracking, CLIENT PAUSE and MONITOR; startup.start_cluster opens it), and the
script engine asks `ClusterNode.script_refusal` about every redis.call; a server not in
cluster mode never reaches this module.
"""
from __future__ import annotations

import logging
import os
import struct
from binascii import crc_hqx
from typing import TYPE_CHECKING, Any

from minired.engine.client import Client
from minired.engine.table import COMMANDS
from minired.features import pubsub
from minired.features.notifications import GENERIC, notify
from minired.features.persist_files import LoadError
from minired.protocol import errors
from minired.protocol.resp import OK

if TYPE_CHECKING:
    from minired.data.keyspace import Database
    from minired.engine.client import Client
    from minired.engine.server import Server
    from minired.engine.table import CommandSpec

log = logging.getLogger("minired")

SLOTS = 16384
BUS_PORT_OFFSET = 10000  # Redis's default cluster bus port is the client port + 10000
# From a master's FAIL to its replica's promotion: the least of Redis's election delay
# (500 ms + random 0-500 ms + 1000 ms per better-ranked replica).
ELECTION_DELAY_MS = 500

# Shard channels sit at key positions: their commands are routed by slot like keyed ones, but
# a channel is not a key, so a migrating slot does not count it missing (Redis's
# is_pubsubshard).
_SHARD_COMMANDS = frozenset({"ssubscribe", "sunsubscribe", "spublish"})


def key_hash_slot(key: bytes) -> int:
    """The hash slot of a key, as Redis's keyHashSlot: CRC16 (XMODEM) of the key, or of the
    text between its first `{` and the next `}` when that is not empty (a hash tag)."""
    start = key.find(b"{")
    if start != -1:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc_hqx(key, 0) & (SLOTS - 1)


def _f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def _lround(value: float) -> int:
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def split_slots(masters: int) -> list[tuple[int, int]]:
    """The slot range of each master, as `redis-cli --cluster create` splits them (its cursor
    is a C float, so the boundaries are computed in single precision as there)."""
    per_node = _f32(SLOTS / masters)
    ranges = []
    first = 0
    cursor = 0.0
    for i in range(masters):
        last = _lround(_f32(cursor + per_node - 1))
        if last > SLOTS or i == masters - 1:
            last = SLOTS - 1
        if last < first:
            last = first
        ranges.append((first, last))
        first = last + 1
        cursor = _f32(cursor + per_node)
    return ranges


def slot_ranges(slots: list[int]) -> list[tuple[int, int]]:
    """Sorted slot numbers as (first, last) runs."""
    runs: list[tuple[int, int]] = []
    for slot in slots:
        if runs and runs[-1][1] == slot - 1:
            runs[-1] = (runs[-1][0], slot)
        else:
            runs.append((slot, slot))
    return runs


def node_line(me: "ClusterNode", node: "ClusterNode", now_ms: int) -> str:
    """`node` as `me` describes it in CLUSTER NODES and in its nodes.conf (clusterGenNodeDescription):
    id, address, flags, master, ping sent, pong received, config epoch (a replica shows its
    master's, as nodeEpoch), link, slots; open migrations on the node's own line only, as in
    Redis."""
    master = node.master
    flags = ("myself," if node is me else "") + ("slave" if master is not None else "master")
    if node.failed and node is not me:
        flags += ",fail"
    down = node.killed_at is not None and node is not me
    epoch = master.config_epoch if master is not None else node.config_epoch
    parts = [node.id, f"{node.host}:{node.port}@{node.port + BUS_PORT_OFFSET}", flags,
             master.id if master is not None else "-", "0", str(0 if down else now_ms),
             str(epoch), "disconnected" if down else "connected"]
    for first, last in slot_ranges(node.slots()):
        parts.append(str(first) if first == last else f"{first}-{last}")
    if node is me:
        for slot, target in sorted(me.migrating.items()):
            parts.append(f"[{slot}->-{target.id}]")
        for slot, source in sorted(me.importing.items()):
            parts.append(f"[{slot}-<-{source.id}]")
    return " ".join(parts)


class ClusterNode:
    """One node, a master or a replica: its identity, the database it serves, and its view of
    open migrations. A replica serves its master's database itself (the same object: a replica
    that never lags), to READONLY clients, and takes it over when it is promoted."""

    __slots__ = ("cluster", "id", "host", "port", "db", "pubsub", "blocking", "config_epoch",
                 "migrating", "importing", "asking", "readonly", "failed", "server",
                 "_mover", "master", "killed_at", "successor")

    def __init__(self, cluster: "Cluster", host: str, port: int, db: "Database",
                 pubsub: Any, blocking: Any, config_epoch: int) -> None:
        self.cluster = cluster
        self.id = os.urandom(20).hex()
        self.host = host
        self.port = port
        self.db = db  # database 0, the only one a cluster node serves
        self.pubsub = pubsub
        self.blocking = blocking  # the server's BlockingManager: see redirect_blocked
        self.config_epoch = config_epoch
        # slot -> the node it is moving to (on the source) / coming from (on the target), as
        # CLUSTER SETSLOT MIGRATING / IMPORTING leave them.
        self.migrating: dict[int, ClusterNode] = {}
        self.importing: dict[int, ClusterNode] = {}
        # Clients that sent ASKING (good for their next command) and READONLY.
        self.asking: set = set()
        self.readonly: set = set()
        # MINIRED CLUSTER FAILOVER kills a node (killed_at, the clock's ms); the others flag it
        # failed once cluster-node-timeout has passed (FAIL), until MINIRED CLUSTER RECOVER.
        self.killed_at: int | None = None
        self.failed = False
        self.master: ClusterNode | None = None  # a replica's master
        # The replica promoted in a failed master's place, which it follows when it comes back.
        self.successor: ClusterNode | None = None
        self.server: "Server | None" = None  # set by form()
        self._mover: Client | None = None  # the internal client moves are logged as

    def log_change(self, argv: list) -> None:
        """Have persistence count and log a change a key move made here (as the command that
        makes it), when the node keeps files."""
        server = self.server
        if server is None or server.propagate is None:
            return
        if self._mover is None:
            self._mover = Client(server)
        server.propagate(self._mover, COMMANDS[argv[0].lower()], argv, OK)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def slots(self) -> list[int]:
        owners = self.cluster.slots
        return [slot for slot in range(SLOTS) if owners[slot] is self]

    def forget_client(self, c: "Client") -> None:
        """A client disconnected or sent RESET: its ASKING and READONLY go with it."""
        self.asking.discard(c)
        self.readonly.discard(c)

    # --- routing (getNodeByQuery) ------------------------------------------------------------

    def route(self, c: "Client", spec: "CommandSpec", argv: list) -> str | None:
        """The redirection or refusal for a client's command, or None when this node runs it.
        ASKING is good for one command (or one transaction), as resetClient clears it."""
        asking = False
        if self.asking and c in self.asking:
            asking = True
            name = spec.name
            if name != "asking" and name != "multi" and (c.multi is None or name == "exec"):
                self.asking.discard(c)
        replica = self.master is not None
        if spec.first_key == 0 and spec.key_finder is None:
            if spec.name != "exec" or c.multi is None:
                # A replica refuses writes after the redirections (processCommand's check).
                return errors.READONLY_REPLICA if replica and spec.write else None
            commands = c.multi  # EXEC: every queued command's keys, as one request
        else:
            commands = ((spec, argv),)
        shard = spec.name in _SHARD_COMMANDS
        writes = spec.write or (spec.name == "exec" and c.multi is not None
                                and any(s.write for s, _ in c.multi))
        # A replica serves its master's slots to reads of READONLY clients (and shard channels),
        # as getNodeByQuery: not writes, nor a transaction that queued one.
        replica_read = replica and (shard or c in self.readonly) and not writes
        refusal = self._route(commands, asking or "asking" in spec.flags, shard,
                              spec.name == "migrate", replica_read)
        if refusal is None and replica and writes:
            return errors.READONLY_REPLICA
        return refusal

    @property
    def down(self) -> bool:
        """This node's cluster state is fail (clusterUpdateState): a slot has no owner, or a
        master serving slots is flagged FAIL, and cluster-require-full-coverage is yes (Redis's
        default; each node reads its own)."""
        cluster = self.cluster
        if not cluster.covered or any(node.failed and node.master is None and node in cluster.slots
                                      for node in cluster.nodes):
            server = self.server
            return server is None or server.config.get("cluster-require-full-coverage") == "yes"
        return False

    def _route(self, commands: Any, asking: bool, shard: bool,
               migrate: bool = False, replica_read: bool = False) -> str | None:
        cluster = self.cluster
        owner: ClusterNode | None = None
        first: bytes | None = None
        slot = -1
        open_slot = migrating = multiple = False
        missing = existing = 0
        db = self.db
        for spec, argv in commands:
            for index in spec.key_indexes(argv):
                key = argv[index]
                this_slot = key_hash_slot(key)
                if first is None:
                    first = key
                    slot = this_slot
                    owner = cluster.slots[slot]
                    if owner is None:
                        return errors.CLUSTER_SLOT_UNBOUND
                    if owner is self and slot in self.migrating:
                        open_slot = migrating = True
                    elif slot in self.importing:
                        open_slot = True
                elif key != first:
                    if this_slot != slot:
                        return errors.CROSSSLOT
                    multiple = True
                if open_slot and not shard:
                    if db.get(key) is None:
                        missing += 1
                    else:
                        existing += 1
        if owner is None:
            return None  # no key at all: served anywhere
        if not shard and self.down:  # (cluster-allow-pubsubshard-when-down yes)
            return errors.CLUSTER_DOWN
        if open_slot and migrate:
            return None  # MIGRATE moves keys of an open slot freely, whichever are here
        if migrating and missing:
            # Some keys here and some gone: neither node can serve them all yet. All gone: the
            # target has them (or will create them), so ASK there.
            if existing:
                return errors.CLUSTER_TRYAGAIN
            return errors.CLUSTER_ASK.format(slot, self.migrating[slot].address)
        if open_slot and not migrating and asking:
            if multiple and missing:
                return errors.CLUSTER_TRYAGAIN
            return None
        if owner is not self and not (replica_read and owner is self.master):
            return errors.CLUSTER_MOVED.format(slot, owner.address)
        return None

    def route_key(self, key: bytes) -> str | None:
        """The redirection or refusal of a RESTORE-ASKING of `key` (what MIGRATE sends)."""
        return self._route(((COMMANDS[b"restore"], [b"RESTORE", key]),), True, False)

    def redirect_blocked(self) -> None:
        """End the waits of clients blocked on keys this node no longer serves, with MOVED
        (or CLUSTERDOWN while the cluster is down), as clusterRedirectBlockedClientIfNeeded
        does: else they would wait for pushes that now go to another node."""
        cluster = self.cluster
        for waiter in list(self.blocking.waiters.values()):
            keys = waiter.block.keys
            if not keys:
                continue  # (not waiting on a key)
            if self.down:
                self.blocking.finish(waiter, errors.RedisError(errors.CLUSTER_DOWN))
                continue
            slot = key_hash_slot(keys[0])
            owner = cluster.slots[slot]
            if owner is not self and slot not in self.importing:
                message = (errors.CLUSTER_SLOT_UNBOUND if owner is None
                           else errors.CLUSTER_MOVED.format(slot, owner.address))
                self.blocking.finish(waiter, errors.RedisError(message))

    def script_refusal(self, caller: "Client", spec: "CommandSpec", argv: list) -> str | None:
        """Why a script may not run this command here (scriptVerifyClusterState), or None. A
        Redis 7.0 node refuses keys it does not serve; keys of another slot it serves are
        allowed, declared or not."""
        if spec.first_key == 0 and spec.key_finder is None:
            return None
        asking = self.asking and caller in self.asking
        refusal = self._route(((spec, argv),), bool(asking) or "asking" in spec.flags,
                              spec.name in _SHARD_COMMANDS)
        if refusal is None:
            return None
        if refusal == errors.CLUSTER_DOWN:
            return errors.SCRIPT_CLUSTER_DOWN
        return errors.SCRIPT_NON_LOCAL_KEY


class Cluster:
    """The slot map every node reads, and the epochs of the configuration."""

    __slots__ = ("nodes", "slots", "current_epoch", "control", "layout_paths", "_timer",
                 "process", "covered")

    def __init__(self, control: bool = False) -> None:
        self.nodes: list[ClusterNode] = []
        self.slots: list[ClusterNode | None] = [None] * SLOTS
        self.current_epoch = 0
        # MINIRED CLUSTER MIGRATE/FAILOVER/RECOVER are allowed (--cluster-control).
        self.control = control
        # Each node's nodes.conf, in node order, when the nodes keep files; else empty.
        self.layout_paths: list[str] = []
        self._timer: Any = None  # tick's next run while a failure is pending
        # Every node of the process, in this cluster or not: those CLUSTER MEET can reach.
        self.process: list[ClusterNode] = []
        self.covered = False  # every slot has an owner (update_coverage keeps it)

    def add_node(self, host: str, port: int, db: "Database", pubsub: Any,
                 blocking: Any) -> ClusterNode:
        self.current_epoch += 1
        node = ClusterNode(self, host, port, db, pubsub, blocking, self.current_epoch)
        self.nodes.append(node)
        return node

    def assign_evenly(self) -> None:
        masters = self.masters()
        for node, (first, last) in zip(masters, split_slots(len(masters))):
            for slot in range(first, last + 1):
                self.slots[slot] = node
        self.update_coverage()

    def update_coverage(self) -> None:
        """After slots were given owners or taken from them."""
        self.covered = None not in self.slots

    def link_pubsub(self) -> None:
        """PUBLISH reaches the subscribers of every node of the cluster."""
        for node in self.nodes:
            node.pubsub.peers = [other.pubsub for other in self.nodes if other is not node]

    def meet(self, me: ClusterNode, port: int) -> None:
        """CLUSTER MEET sent to `me`: the node of this process on `port` and `me` end up in
        one cluster, the one of them that holds slots (a node without slots joins it, as the
        handshake and gossip would have it)."""
        other = next((node for node in self.process if node.port == port), None)
        if other is None:
            raise errors.RedisError(errors.CLUSTER_MEET_OUTSIDE)
        if other.cluster is self:
            return
        joining, host = (self, other.cluster) if not any(self.slots) else (other.cluster, self)
        if any(joining.slots):
            raise errors.RedisError(errors.CLUSTER_MEET_TWO_LAYOUTS)
        for node in joining.nodes:
            node.cluster = host
            host.nodes.append(node)
        host.current_epoch = max(host.current_epoch, joining.current_epoch)
        joining.nodes = []
        host.link_pubsub()
        host.save_layout()

    def masters(self) -> list[ClusterNode]:
        return [node for node in self.nodes if node.master is None]

    def replicas_of(self, master: ClusterNode) -> list[ClusterNode]:
        return [node for node in self.nodes if node.master is master]

    def follow(self, replica: ClusterNode, master: ClusterNode) -> None:
        """Make `replica` a replica of `master`: it serves the master's database from now on,
        whatever it held (as a full resync replaces a replica's data)."""
        replica.master = master
        replica.db = master.db
        if replica.server is not None:
            replica.server.keyspace.dbs[0] = master.db
            # A replica expires no key itself: its master's deletions reach it (as DELs).
            replica.server.active_expire_enabled = False

    # --- failure and failover (clusterCron, clusterHandleSlaveFailover) ------------------------

    def kill(self, node: ClusterNode) -> None:
        """MINIRED CLUSTER FAILOVER: the node's process dies. Its port refuses connections at
        once; the other nodes flag it FAIL after cluster-node-timeout, and a replica of a master
        takes its slots ELECTION_DELAY_MS later (tick)."""
        if node.killed_at is not None:
            return
        assert node.server is not None
        node.killed_at = node.server.clock.ms()
        node.server.crash()
        self.tick()

    def node_timeout(self, node: ClusterNode) -> int:
        """cluster-node-timeout as the failed node's replica (else the node itself) has it."""
        judge = next(iter(self.replicas_of(node)), node)
        assert judge.server is not None
        return int(judge.server.config.get("cluster-node-timeout"))

    def tick(self) -> None:
        """Flag killed nodes FAIL and promote replicas when their time has come; called as the
        clock moves (MINIRED ADVANCE) and, while something is pending, every 100 ms."""
        pending = changed = False
        for node in self.nodes:
            if node.killed_at is None:
                continue
            assert node.server is not None
            now = node.server.clock.ms()
            timeout = self.node_timeout(node)
            if not node.failed:
                if now < node.killed_at + timeout:
                    pending = True
                    continue
                node.failed = changed = True
            replicas = [r for r in self.replicas_of(node) if r.killed_at is None]
            if node.master is None and replicas and node in self.slots:
                if now < node.killed_at + timeout + ELECTION_DELAY_MS:
                    pending = True
                else:
                    self.promote(replicas[0])
                    changed = True
        if changed:
            for each in self.nodes:
                each.redirect_blocked()
            self.save_layout()
        if pending and self._timer is None:
            loop = next((n.server.loop for n in self.nodes
                         if n.server is not None and n.server.loop is not None), None)
            if loop is not None:
                self._timer = loop.call_later(0.1, self._timed_tick)

    def _timed_tick(self) -> None:
        self._timer = None
        self.tick()

    def promote(self, replica: ClusterNode) -> None:
        """The replica takes its master's slots with a new config epoch (a won election); the
        other replicas follow it, and so will the old master when it comes back (until then it
        shows as a failed master without slots, as in Redis)."""
        old = replica.master
        assert old is not None and replica.server is not None
        self.slots = [replica if owner is old else owner for owner in self.slots]
        replica.master = None
        replica.server.active_expire_enabled = True
        self.current_epoch += 1
        replica.config_epoch = self.current_epoch
        for other in self.replicas_of(old):
            other.master = replica
        old.successor = replica
        # The database's change hooks are now the new master's (events, tracking, waiters).
        server, db = replica.server, replica.db
        own = server.keyspace.dbs[1 if len(server.keyspace) > 1 else 0]
        db.notifier = own.notifier
        db.tracking = server.tracking
        db.ready_keys = server.keyspace.ready_keys
        db.blocked_types = server.keyspace.blocked_types

    def recover(self, node: ClusterNode) -> None:
        """MINIRED CLUSTER RECOVER: the node's process is back, with the data it had; a master
        whose replica took over comes back as that replica's replica (its data replaced)."""
        if node.killed_at is None:
            return
        assert node.server is not None
        node.killed_at = None
        node.failed = False
        if node.successor is not None:
            self.follow(node, node.successor)
            node.successor = None
        node.server.restart()
        for each in self.nodes:
            each.redirect_blocked()
        self.save_layout()

    def node_at(self, port: int) -> ClusterNode | None:
        for node in self.nodes:
            if node.port == port:
                return node
        return None

    # --- resharding --------------------------------------------------------------------------

    def open_migration(self, slot: int, target: ClusterNode) -> ClusterNode:
        """Mark `slot` migrating from its owner to `target` (CLUSTER SETSLOT MIGRATING on the
        source, IMPORTING on the target); the source. A move of the slot already open to another
        node is undone first: the keys it moved go back to the source."""
        source = self.slots[slot]
        assert source is not None
        opened = source.migrating.get(slot)
        if opened is not None and opened is not target:
            self.move_keys(slot, opened, source)
            opened.importing.pop(slot, None)
        source.migrating[slot] = target
        target.importing[slot] = source
        self.save_layout()
        return source

    def move_keys(self, slot: int, source: ClusterNode, target: ClusterNode,
                  count: int | None = None) -> int:
        """Move up to `count` keys of `slot` (all if None) from source to target with their
        TTLs, as MIGRATE does; the number moved."""
        moved = 0
        for key in self.keys_in_slot(source, slot):
            if count is not None and moved >= count:
                break
            if self.move_key(source, target, key):
                moved += 1
        return moved

    def move_key(self, source: ClusterNode, target: ClusterNode, key: bytes,
                 copy: bool = False) -> bool:
        """Move one key with its TTL (a copy of it with COPY), replacing the target's, as
        MIGRATE's RESTORE-ASKING ... REPLACE and the source's DEL do; False if the source has
        no such key. The events and the files' records are MIGRATE's: `restore` on the target,
        `del` on the source (none with COPY)."""
        src, dst = source.db, target.db
        value = src.get(key)
        if value is None:
            return False
        from minired.features.rdb import Compact, decode_value, encode_value
        from minired.features.rdb_format import COMPRESS_AS_REDIS, Reader, seal

        deadline = src.expiry(key)
        payload = None
        if copy or (target.server is not None and target.server.propagate is not None):
            compact = (Compact.from_config(target.server.config.get)
                       if target.server is not None else None)
            payload = seal(encode_value(value, COMPRESS_AS_REDIS, compact))
        if copy:
            value = decode_value(Reader(payload))
        else:
            src.pop(key)
        dst.delete(key)
        dst.set(key, value)
        if deadline is not None:
            dst.set_expiry(key, deadline)
        if dst.notifier is not None:
            notify(dst, GENERIC, b"restore", key)
        if not copy and src.notifier is not None:
            notify(src, GENERIC, b"del", key)
        if payload is not None:
            target.log_change([b"RESTORE", key, b"%d" % (deadline or 0), payload,
                               b"REPLACE", b"ABSTTL"])
        if not copy:
            source.log_change([b"DEL", key])
        return True

    def node_by_id(self, node_id: bytes) -> ClusterNode | None:
        for node in self.nodes:
            if node.id.encode() == node_id:
                return node
        return None

    def set_slot(self, me: ClusterNode, slot: int, action: bytes,
                 node_id: bytes | None) -> None:
        """CLUSTER SETSLOT <slot> MIGRATING|IMPORTING|NODE <id> | STABLE sent to `me`, with
        Redis 7.0's checks and texts (clusterCommand). The slot map is shared by the nodes, so
        NODE takes effect for all of them at once, as if the bus had spread it."""
        if action == b"migrating":
            if self.slots[slot] is not me:
                raise errors.RedisError(errors.SETSLOT_NOT_OWNER.format(slot))
            other = self._known(node_id, errors.CLUSTER_UNKNOWN_NODE)
            me.migrating[slot] = other
        elif action == b"importing":
            if self.slots[slot] is me:
                raise errors.RedisError(errors.SETSLOT_ALREADY_OWNER.format(slot))
            other = self._known(node_id, errors.CLUSTER_UNKNOWN_NODE)
            me.importing[slot] = other
        elif action == b"stable":
            me.migrating.pop(slot, None)
            me.importing.pop(slot, None)
        else:
            other = self._known(node_id, errors.SETSLOT_UNKNOWN_NODE)
            holds_keys = bool(self.keys_in_slot(me, slot))
            if self.slots[slot] is me and other is not me and holds_keys:
                raise errors.RedisError(errors.SETSLOT_STILL_HOLDS_KEYS.format(slot))
            if not holds_keys:
                me.migrating.pop(slot, None)
            self.slots[slot] = other
            if other is me and me.importing.pop(slot, None) is not None:
                self.bump_epoch(me)  # (a manual move takes a new epoch, without consensus)
            for node in self.nodes:
                node.redirect_blocked()
        self.save_layout()

    def _known(self, node_id: bytes | None, unknown: str) -> ClusterNode:
        node = self.node_by_id(node_id or b"")
        if node is None:
            raise errors.RedisError(unknown.format((node_id or b"").decode(errors="replace")))
        if node.master is not None:
            raise errors.RedisError(errors.CLUSTER_TARGET_NOT_MASTER)
        return node

    def bump_epoch(self, node: ClusterNode) -> None:
        """clusterBumpConfigEpochWithoutConsensus: a new epoch for `node`, unless its epoch is
        already the greatest the cluster knows."""
        greatest = max([self.current_epoch] + [other.config_epoch for other in self.nodes])
        if node.config_epoch == 0 or node.config_epoch != greatest:
            self.current_epoch += 1
            node.config_epoch = self.current_epoch

    def finish_migration(self, slot: int, target: ClusterNode) -> int:
        """Give the slot to `target` with every key of it any other node holds, and close any
        move of it; the keys moved. To the node moving it away, this undoes an open move (the
        keys moved so far come back). A new owner takes a new config epoch (CLUSTER SETSLOT
        NODE bumps it without consensus)."""
        source = self.slots[slot]
        assert source is not None
        moved = 0
        for node in self.nodes:
            if node is not target:
                moved += self.move_keys(slot, node, target)
        for node in self.nodes:
            node.migrating.pop(slot, None)
            node.importing.pop(slot, None)
        self.slots[slot] = target
        if source is not target:
            self.current_epoch += 1
            target.config_epoch = self.current_epoch
        self.save_layout()
        return moved

    def keys_in_slot(self, node: ClusterNode, slot: int) -> list[bytes]:
        return [key for key in node.db.keys() if key_hash_slot(key) == slot]

    # --- the layout on disk (nodes.conf) ----------------------------------------------------

    def save_layout(self) -> None:
        """Write each node's nodes.conf, as Redis's clusterSaveConfig: every node's line as
        CLUSTER NODES gives it (the node's own marked myself, with its open migrations), then
        the epochs. Written to a temporary file and renamed, so a crash leaves the old one."""
        for me, path in zip(self.nodes, self.layout_paths):
            if me.killed_at is not None:
                continue  # (a dead process writes nothing: it keeps the layout it died with)
            text = "".join(node_line(me, node, 0) + "\n" for node in self.nodes)
            text += f"vars currentEpoch {self.current_epoch} lastVoteEpoch 0\n"
            temporary = f"{path}.tmp-{os.getpid()}"
            try:
                with open(temporary, "w", encoding="ascii") as out:
                    out.write(text)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temporary, path)
            except OSError as exc:
                log.warning("Could not save the cluster layout to %s: %s", path, exc)

    def load_layout(self) -> bool:
        """Take the layout the nodes' files keep: False if there are none (a first start).
        Raises LoadError if they do not describe a cluster of these nodes."""
        present = [os.path.exists(path) for path in self.layout_paths]
        if not any(present):
            return False
        if not all(present):
            missing = [p for p, here in zip(self.layout_paths, present) if not here]
            raise LoadError(f"Cluster layout incomplete: {', '.join(missing)} missing while "
                            f"the other nodes' files exist (start with as many nodes as before)")
        views = [_read_layout(path) for path in self.layout_paths]
        for path, view in zip(self.layout_paths, views):
            if view[6] != len(self.nodes):
                raise LoadError(f"Cluster layout of another cluster: {path} describes "
                                f"{view[6]} nodes, this cluster has {len(self.nodes)}")
        ids = [view[0] for view in views]
        if len(set(ids)) != len(ids):
            raise LoadError("Cluster layout invalid: two nodes' files name the same node")
        by_id = dict(zip(ids, self.nodes))
        self.slots = [None] * SLOTS
        for node, path, (node_id, epoch, slots, migrating, importing, current, _, master) in zip(
                self.nodes, self.layout_paths, views):
            node.id = node_id
            node.config_epoch = epoch
            node.master = by_id.get(master)
        claims = sorted(zip(self.nodes, views), key=lambda pair: pair[1][1])
        for node, view in claims:  # (by config epoch: the greater wins a slot two nodes claim)
            for slot in view[2]:
                owner = self.slots[slot]
                if owner is not None and owner.config_epoch == node.config_epoch:
                    raise LoadError(f"Cluster layout invalid: slot {slot} has two owners "
                                    f"of one epoch")
                self.slots[slot] = node
        for node, view in claims:
            # A master whose slots all went to a newer owner while it was down (a failover)
            # becomes that owner's replica (clusterUpdateSlotsConfigWith).
            if node.master is None and view[2] and node not in self.slots:
                node.master = self.slots[view[2][0]]
        for node, path, (_, _, _, migrating, importing, current, _, _) in zip(
                self.nodes, self.layout_paths, views):
            try:
                node.migrating = {slot: by_id[other] for slot, other in migrating.items()}
                node.importing = {slot: by_id[other] for slot, other in importing.items()}
            except KeyError as exc:
                raise LoadError(f"Cluster layout invalid: {path} names unknown node "
                                f"{exc.args[0]}") from None
            self.current_epoch = max(self.current_epoch, current)
        self.update_coverage()
        return True


def _read_layout(path: str) -> tuple:
    """A nodes.conf's own line and epoch: (id, config epoch, slots, migrating {slot: node id},
    importing {slot: node id}, current epoch, how many nodes it lists, its master's id or
    "-")."""
    with open(path, encoding="ascii", errors="replace") as source:
        lines = source.read().splitlines()
    current = nodes = 0
    own = None
    for line in lines:
        fields = line.split()
        if fields[:1] == ["vars"]:
            pairs = dict(zip(fields[1::2], fields[2::2]))
            current = int(pairs.get("currentEpoch", "0"))
        elif len(fields) >= 8:
            nodes += 1
            if "myself" in fields[2].split(","):
                own = fields
    if own is None:
        raise LoadError(f"Cluster layout invalid: {path} has no line for its own node")
    slots: list[int] = []
    migrating: dict[int, str] = {}
    importing: dict[int, str] = {}
    try:
        for item in own[8:]:
            if item.startswith("["):
                slot, arrow, other = item[1:-1].partition("->-")
                if arrow:
                    migrating[int(slot)] = other
                else:
                    slot, _, other = item[1:-1].partition("-<-")
                    importing[int(slot)] = other
            else:
                first, _, last = item.partition("-")
                slots.extend(range(int(first), int(last or first) + 1))
        epoch = int(own[6])
    except ValueError:
        raise LoadError(f"Cluster layout invalid: unreadable line in {path}") from None
    if any(not 0 <= slot < SLOTS for slot in slots):
        raise LoadError(f"Cluster layout invalid: a slot out of range in {path}")
    return own[0], epoch, slots, migrating, importing, current, nodes, own[3]


def _layout_path(server: "Server") -> str | None:
    """Where a node keeps its layout: its cluster-config-file in its directory, when the node
    keeps files at all (the data and the layout must come back together)."""
    persistence = server.features.persistence
    if persistence is None or not persistence.keeps_files:
        return None
    return os.path.join(persistence.directory, server.config.get("cluster-config-file"))


def _enroll(cluster: Cluster, server: "Server") -> ClusterNode:
    node = cluster.add_node(server.host, server.port, server.keyspace[0],
                            pubsub.registry(server), server.blocking)
    node.server = server
    server.cluster = node
    server.config.set("cluster-enabled", "yes")
    server.hooks.disconnect.append(node.forget_client)
    return node


def form(servers: "list[Server]", control: bool = False, replicas: int = 0,
         spares: int = 0) -> Cluster:
    """Join started servers into one cluster as `redis-cli --cluster create` leaves them:
    of the first len(servers) - spares, the first 1 / (1 + replicas) are masters serving their
    share of the slots, the rest their replicas (server masters + i replicates master i %
    masters); config epochs 1..N. The last `spares` are nodes of no cluster yet, as a new
    redis-server started with cluster-enabled (`redis-cli --cluster add-node` joins them)."""
    cluster = Cluster(control)
    members = servers[:len(servers) - spares]
    everyone: list[ClusterNode] = []
    for server in members:
        everyone.append(_enroll(cluster, server))
    masters = len(members) // (1 + replicas)
    for index, node in enumerate(cluster.nodes[masters:]):
        node.master = cluster.nodes[index % masters]
    cluster.link_pubsub()
    paths = [_layout_path(server) for server in members]
    if all(paths) and not spares:  # (a layout that nodes may join is not kept)
        cluster.layout_paths = paths
    if not cluster.load_layout():
        cluster.assign_evenly()
    for node in cluster.nodes:
        if node.master is not None:
            cluster.follow(node, node.master)
    cluster.save_layout()
    clock = servers[0].clock
    clock.listeners.append(cluster.tick)
    for server in servers[len(members):]:
        alone = Cluster(control)
        node = _enroll(alone, server)
        alone.current_epoch = node.config_epoch = 0  # (a node never in a cluster)
        everyone.append(node)
    for node in everyone:
        node.cluster.process = everyone
    return cluster
