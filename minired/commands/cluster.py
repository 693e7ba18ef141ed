"""CLUSTER, ASKING, READONLY, READWRITE as a Redis 7.0 cluster node answers them, and MINIRED
CLUSTER MIGRATE/FAILOVER/RECOVER, which reshard the one-process cluster and take its nodes
down and up for client tests (cluster model: minired/features/cluster.py).

A server not in cluster mode answers every one of them as a Redis 7.0 server started without
cluster-enabled does: `ERR This instance has cluster support disabled`.
"""
from __future__ import annotations

from minired.engine.args import parse_int
from minired.engine.table import command, container_command
from minired.features.cluster import SLOTS, ClusterNode, key_hash_slot, node_line, slot_ranges
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, Status, Verbatim

G = "cluster"

container_command("cluster", G, summary="A container for Redis Cluster commands.")


def _node(c) -> ClusterNode:
    node = c.server.cluster
    if node is None:
        raise RedisError(errors.CLUSTER_DISABLED)
    return node


# --- the cluster's layout -----------------------------------------------------------------------

def _node_entry(node: ClusterNode) -> list:
    # ip, port, id, then a map of extra endpoint metadata (hostname: none is announced here).
    return [node.host.encode(), node.port, node.id.encode(), {}]


@command("slots", arity=2, flags="stale", parent="cluster", group=G)
def cluster_slots(c, argv):
    """Slot ranges and the node serving each."""
    me = _node(c)
    reply = []
    for node in me.cluster.nodes:
        for first, last in slot_ranges(node.slots()):
            reply.append([first, last, _node_entry(node)])
    reply.sort(key=lambda entry: entry[0])
    return reply


@command("shards", arity=2, flags="stale", parent="cluster", group=G)
def cluster_shards(c, argv):
    """Each shard's slots and nodes."""
    me = _node(c)
    shards = []
    for node in me.cluster.nodes:
        slots = []
        for first, last in slot_ranges(node.slots()):
            slots += [first, last]
        host = node.host.encode()
        shards.append({b"slots": slots, b"nodes": [{
            b"id": node.id.encode(), b"port": node.port, b"ip": host, b"endpoint": host,
            b"role": b"master", b"replication-offset": 0,
            b"health": b"fail" if node.failed else b"online"}]})
    return shards


@command("nodes", arity=2, flags="stale", parent="cluster", group=G)
def cluster_nodes(c, argv):
    """The cluster configuration as this node sees it."""
    me = _node(c)
    now = c.server.clock.ms()
    return Verbatim("".join(node_line(me, node, now) + "\n"
                            for node in me.cluster.nodes).encode())


@command("info", arity=2, flags="stale", parent="cluster", group=G)
def cluster_info(c, argv):
    """The cluster's state and sizes."""
    me = _node(c)
    cluster = me.cluster
    failed = sum(1 for owner in cluster.slots if owner is not None and owner.failed)
    assigned = sum(1 for owner in cluster.slots if owner is not None)
    fields = [
        ("cluster_state", "fail" if cluster.down else "ok"),
        ("cluster_slots_assigned", assigned),
        ("cluster_slots_ok", assigned - failed),
        ("cluster_slots_pfail", 0),
        ("cluster_slots_fail", failed),
        ("cluster_known_nodes", len(cluster.nodes)),
        ("cluster_size", sum(1 for node in cluster.nodes if node.slots())),
        ("cluster_current_epoch", cluster.current_epoch),
        ("cluster_my_epoch", me.config_epoch),
        # No bus: no messages (Redis lists only the message types it has counted).
        ("cluster_stats_messages_sent", 0),
        ("cluster_stats_messages_received", 0),
        ("total_cluster_links_buffer_limit_exceeded", 0),
    ]
    return Verbatim("".join(f"{name}:{value}\r\n" for name, value in fields).encode())


@command("myid", arity=2, flags="stale", parent="cluster", group=G)
def cluster_myid(c, argv):
    """This node's id."""
    return _node(c).id.encode()


@command("keyslot", arity=3, flags="stale", parent="cluster", group=G)
def cluster_keyslot(c, argv):
    """The hash slot of a key."""
    _node(c)
    return key_hash_slot(argv[2])


@command("countkeysinslot", arity=3, flags="stale", parent="cluster", group=G)
def cluster_countkeysinslot(c, argv):
    """How many keys of a slot this node holds."""
    me = _node(c)
    slot = parse_int(argv[2])
    if not 0 <= slot < SLOTS:
        raise RedisError(errors.CLUSTER_INVALID_SLOT)
    return len(me.cluster.keys_in_slot(me, slot))


@command("getkeysinslot", arity=4, flags="stale", parent="cluster", group=G)
def cluster_getkeysinslot(c, argv):
    """Up to COUNT keys of a slot this node holds."""
    me = _node(c)
    slot = parse_int(argv[2])
    count = parse_int(argv[3])
    if not 0 <= slot < SLOTS or count < 0:
        raise RedisError(errors.CLUSTER_INVALID_SLOT_OR_COUNT)
    # Redis keeps a slot's keys newest first.
    return list(reversed(me.cluster.keys_in_slot(me, slot)))[:count]


@command("links", arity=2, flags="stale", parent="cluster", group=G)
def cluster_links(c, argv):
    """The node's bus links: none, the nodes share one process."""
    _node(c)
    return []


_HELP = [
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]", "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH", "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>", "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]", "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]", "    Promote current replica node to being a master.",
    "FORGET <node-id>", "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS", "    Delete current node own slots information.",
    "INFO", "    Return information about the cluster.",
    "KEYSLOT <key>", "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]", "    Connect nodes into a working cluster.",
    "MYID", "    Return the node id.",
    "NODES", "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>", "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]", "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>", "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>", "    Return <node-id> replicas.",
    "SAVECONFIG", "    Force saving cluster configuration on disk.",
    "SLOTS", "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS", "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP", "    Prints this help.",
]


@command("help", arity=2, flags="loading stale", parent="cluster", group=G)
def cluster_help(c, argv):
    """Show helpful text about the different subcommands."""
    _node(c)
    return [Status(line.encode()) for line in _HELP]


def _fixed_layout(c, argv):
    """The layout is set at start-up (MINIRED CLUSTER changes it): refused as unsupported."""
    _node(c)
    raise RedisError(f"ERR CLUSTER {argv[1].decode(errors='replace').upper()} is not supported "
                     "by minired: the cluster's layout is fixed at start-up (see MINIRED CLUSTER)")


# Subcommands that change the layout or the replication of a real cluster. Declared, so that
# COMMAND and ACL know them as Redis does (ACL SETUSER ... +cluster|setslot), but refused.
for _name, _arity, _flags in (
        ("addslots", -3, "admin stale no_async_loading"),
        ("addslotsrange", -4, "admin stale no_async_loading"),
        ("bumpepoch", 2, "admin stale no_async_loading"),
        ("count-failure-reports", 3, "admin stale"),
        ("delslots", -3, "admin stale no_async_loading"),
        ("delslotsrange", -4, "admin stale no_async_loading"),
        ("failover", -2, "admin stale no_async_loading"),
        ("flushslots", 2, "admin stale no_async_loading"),
        ("forget", 3, "admin stale no_async_loading"),
        ("meet", -4, "admin stale no_async_loading"),
        ("replicate", 3, "admin stale no_async_loading"),
        ("replicas", 3, "admin stale"),
        ("slaves", 3, "admin stale"),
        ("reset", -2, "admin noscript stale"),
        ("saveconfig", 2, "admin stale no_async_loading"),
        ("set-config-epoch", 3, "admin stale no_async_loading"),
        ("setslot", -4, "admin stale no_async_loading")):
    command(_name, arity=_arity, flags=_flags, parent="cluster", group=G,
            summary=f"CLUSTER {_name.upper()}")(_fixed_layout)


# --- per-connection cluster flags ---------------------------------------------------------------

@command("asking", arity=1, flags="fast", group=G)
def asking(c, argv):
    """The next command may touch a slot this node is importing."""
    _node(c).asking.add(c)
    return OK


@command("readonly", arity=1, flags="loading stale fast", group=G)
def readonly(c, argv):
    """Reads may be served by a replica (a master serves them regardless)."""
    _node(c).readonly.add(c)
    return OK


@command("readwrite", arity=1, flags="loading stale fast", group=G)
def readwrite(c, argv):
    """Undo READONLY."""
    _node(c).readonly.discard(c)
    return OK


# --- MINIRED CLUSTER: resharding and failure on demand ------------------------------------------

def _control(c) -> ClusterNode:
    me = _node(c)
    if not me.cluster.control:
        raise RedisError(errors.CLUSTER_CONTROL_DISABLED)
    return me


def _node_at(me: ClusterNode, raw: bytes) -> ClusterNode:
    port = parse_int(raw)
    node = me.cluster.node_at(port)
    if node is None:
        raise RedisError(errors.CLUSTER_NO_SUCH_NODE.format(port))
    return node


@command("cluster", arity=-3, flags="admin noscript", parent="minired", group="server")
def minired_cluster(c, argv):
    """MIGRATE <slot> <target-port> [COUNT <n> | FINISH], FAILOVER <port>, RECOVER <port>.
    FINISH to the port of the node a slot is moving away from undoes the move."""
    me = _control(c)
    cluster = me.cluster
    action = argv[2].lower()
    if action == b"migrate" and len(argv) >= 5:
        slot = parse_int(argv[3])
        if not 0 <= slot < SLOTS:
            raise RedisError(errors.CLUSTER_INVALID_SLOT)
        target = _node_at(me, argv[4])
        option = argv[5].lower() if len(argv) > 5 else None
        if option == b"finish" and len(argv) == 6:
            moved = cluster.finish_migration(slot, target)
            for node in cluster.nodes:
                node.redirect_blocked()
            return moved
        if cluster.slots[slot] is target:
            raise RedisError(f"ERR slot {slot} is already served by {target.address}")
        if option is None:
            count = None
        elif option == b"count" and len(argv) == 7:
            count = parse_int(argv[6])
            if count < 0:
                raise RedisError(errors.NOT_INTEGER)
        else:
            raise RedisError(errors.SYNTAX)
        source = cluster.open_migration(slot, target)
        if count is None:  # half the slot's keys: a slot caught in the middle of a move
            count = len(cluster.keys_in_slot(source, slot)) // 2
        return cluster.move_keys(slot, source, target, count)
    if action in (b"failover", b"recover") and len(argv) == 4:
        node = _node_at(me, argv[3])
        node.failed = action == b"failover"
        for each in cluster.nodes:
            each.redirect_blocked()
        return OK
    raise RedisError(errors.SYNTAX)
