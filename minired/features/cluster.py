"""Cluster mode: N masters served from one process, the 16384 hash slots split between them,
and the redirections a Redis 7.0 cluster node gives (MOVED, ASK, TRYAGAIN, CROSSSLOT,
CLUSTERDOWN), as Redis's getNodeByQuery decides them.

Each node is a whole minired server (its own keyspace, clients, scripts and statistics) on its
own port; the nodes share the process's event loop and one clock. What a cluster bus would
carry between real nodes is direct here: the slot map is one object every node reads, and a
PUBLISH reaches the subscribers of every node. Resharding and node failure are driven by the
MINIRED CLUSTER commands (commands/cluster.py), which exist so that clients' handling of
redirections and of a down cluster can be tested.

Dispatch asks `ClusterNode.route` about every command once cluster mode is on (the same
one-flag gate as tracking, CLIENT PAUSE and MONITOR; startup.start_cluster opens it), and the
script engine asks `ClusterNode.script_refusal` about every redis.call; a server not in
cluster mode never reaches this module.
"""
from __future__ import annotations

import os
import struct
from binascii import crc_hqx
from typing import TYPE_CHECKING, Any

from minired.features import pubsub
from minired.protocol import errors

if TYPE_CHECKING:
    from minired.data.keyspace import Database
    from minired.engine.client import Client
    from minired.engine.server import Server
    from minired.engine.table import CommandSpec

SLOTS = 16384
BUS_PORT_OFFSET = 10000  # Redis's default cluster bus port is the client port + 10000

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


class ClusterNode:
    """One master: its identity, the database it serves, and its view of open migrations."""

    __slots__ = ("cluster", "id", "host", "port", "db", "pubsub", "blocking", "config_epoch",
                 "migrating", "importing", "asking", "readonly", "failed")

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
        self.failed = False  # MINIRED CLUSTER FAILOVER: down until MINIRED CLUSTER RECOVER

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
        if spec.first_key == 0 and spec.key_finder is None:
            if spec.name != "exec" or c.multi is None:
                return None
            commands = c.multi  # EXEC: every queued command's keys, as one request
        else:
            commands = ((spec, argv),)
        return self._route(commands, asking or "asking" in spec.flags,
                           spec.name in _SHARD_COMMANDS)

    def _route(self, commands: Any, asking: bool, shard: bool) -> str | None:
        cluster = self.cluster
        owner: ClusterNode | None = None
        first: bytes | None = None
        slot = -1
        open_slot = migrating = multiple = False
        missing = 0
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
                if open_slot and not shard and db.get(key) is None:
                    missing += 1
        if owner is None:
            return None  # no key at all: served anywhere
        if cluster.down and not shard:  # (cluster-allow-pubsubshard-when-down yes)
            return errors.CLUSTER_DOWN
        if migrating and missing:
            if multiple:
                return errors.CLUSTER_TRYAGAIN
            return f"ASK {slot} {self.migrating[slot].address}"
        if open_slot and not migrating and asking:
            if multiple and missing:
                return errors.CLUSTER_TRYAGAIN
            return None
        if owner is not self:
            return f"MOVED {slot} {owner.address}"
        return None

    def redirect_blocked(self) -> None:
        """End the waits of clients blocked on keys this node no longer serves, with MOVED
        (or CLUSTERDOWN while the cluster is down), as clusterRedirectBlockedClientIfNeeded
        does: else they would wait for pushes that now go to another node."""
        cluster = self.cluster
        for waiter in list(self.blocking.waiters.values()):
            keys = waiter.block.keys
            if not keys:
                continue  # (not waiting on a key)
            if cluster.down:
                self.blocking.finish(waiter, errors.RedisError(errors.CLUSTER_DOWN))
                continue
            slot = key_hash_slot(keys[0])
            owner = cluster.slots[slot]
            if owner is not self and slot not in self.importing:
                message = (errors.CLUSTER_SLOT_UNBOUND if owner is None
                           else f"MOVED {slot} {owner.address}")
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

    __slots__ = ("nodes", "slots", "current_epoch", "control")

    def __init__(self, control: bool = False) -> None:
        self.nodes: list[ClusterNode] = []
        self.slots: list[ClusterNode | None] = [None] * SLOTS
        self.current_epoch = 0
        # MINIRED CLUSTER MIGRATE/FAILOVER/RECOVER are allowed (--cluster-control).
        self.control = control

    @property
    def down(self) -> bool:
        """Whether the cluster state is fail: a master is down and its slots have no other
        server (cluster-require-full-coverage yes, Redis's default)."""
        for node in self.nodes:
            if node.failed:
                return True
        return False

    def add_node(self, host: str, port: int, db: "Database", pubsub: Any,
                 blocking: Any) -> ClusterNode:
        self.current_epoch += 1
        node = ClusterNode(self, host, port, db, pubsub, blocking, self.current_epoch)
        self.nodes.append(node)
        return node

    def assign_evenly(self) -> None:
        for node, (first, last) in zip(self.nodes, split_slots(len(self.nodes))):
            for slot in range(first, last + 1):
                self.slots[slot] = node

    def node_at(self, port: int) -> ClusterNode | None:
        for node in self.nodes:
            if node.port == port:
                return node
        return None

    # --- resharding --------------------------------------------------------------------------

    def open_migration(self, slot: int, target: ClusterNode) -> ClusterNode:
        """Mark `slot` migrating from its owner to `target` (CLUSTER SETSLOT MIGRATING on the
        source, IMPORTING on the target); the source."""
        source = self.slots[slot]
        assert source is not None
        opened = source.migrating.get(slot)
        if opened is not None and opened is not target:
            opened.importing.pop(slot, None)
        source.migrating[slot] = target
        target.importing[slot] = source
        return source

    def move_keys(self, slot: int, source: ClusterNode, target: ClusterNode,
                  count: int | None = None) -> int:
        """Move up to `count` keys of `slot` (all if None) from source to target with their
        TTLs, as MIGRATE does; the number moved."""
        moved = 0
        src, dst = source.db, target.db
        for key in [k for k in src.keys() if key_hash_slot(k) == slot]:
            if count is not None and moved >= count:
                break
            deadline = src.expiry(key)
            value = src.pop(key)
            if value is None:
                continue
            dst.delete(key)
            dst.set(key, value)
            if deadline is not None:
                dst.set_expiry(key, deadline)
            moved += 1
        return moved

    def finish_migration(self, slot: int, target: ClusterNode) -> int:
        """Move the slot's remaining keys and give the slot to `target`, which takes a new
        config epoch (CLUSTER SETSLOT NODE bumps it without consensus); the keys moved."""
        source = self.slots[slot]
        assert source is not None
        moved = 0
        if source is not target:
            moved = self.move_keys(slot, source, target)
        for node in self.nodes:
            node.migrating.pop(slot, None)
            node.importing.pop(slot, None)
        self.slots[slot] = target
        if source is not target:
            self.current_epoch += 1
            target.config_epoch = self.current_epoch
        return moved

    def keys_in_slot(self, node: ClusterNode, slot: int) -> list[bytes]:
        return [key for key in node.db.keys() if key_hash_slot(key) == slot]


def form(servers: "list[Server]", control: bool = False) -> Cluster:
    """Join started servers into one cluster, each a master serving its share of the slots,
    as `redis-cli --cluster create` leaves them (config epochs 1..N)."""
    cluster = Cluster(control)
    for server in servers:
        node = cluster.add_node(server.host, server.port, server.keyspace[0],
                                pubsub.registry(server), server.blocking)
        server.cluster = node
        server.config.set("cluster-enabled", "yes")
        server.hooks.disconnect.append(node.forget_client)
    for node in cluster.nodes:
        node.pubsub.peers = [other.pubsub for other in cluster.nodes if other is not node]
    cluster.assign_evenly()
    return cluster
