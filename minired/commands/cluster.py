"""CLUSTER, ASKING, READONLY, READWRITE and MIGRATE as a Redis 7.0 cluster node answers them
(the layout-changing subcommands with --cluster-control), and MINIRED CLUSTER
MIGRATE/FAILOVER/RECOVER, which reshard the one-process cluster and kill and revive its nodes
for client tests (cluster model: minired/features/cluster.py).

A server not in cluster mode answers every one of them as a Redis 7.0 server started without
cluster-enabled does: `ERR This instance has cluster support disabled`.
"""
from __future__ import annotations

from minired.commands.keys_dump import server_dump
from minired.engine.args import parse_int
from minired.engine.client import Client
from minired.engine.table import COMMANDS, command, container_command
from minired.features import migrate as migrate_io
from minired.features.cluster import SLOTS, ClusterNode, key_hash_slot, node_line, slot_ranges
from minired.features.notifications import GENERIC, notify
from minired.features.security import auth_required, users_of
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, Status, Verbatim, encode_command

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
    """Slot ranges and the node serving each, then its replicas not flagged FAIL."""
    me = _node(c)
    cluster = me.cluster
    reply = []
    for node in cluster.masters():
        replicas = [_node_entry(r) for r in cluster.replicas_of(node) if not r.failed]
        for first, last in slot_ranges(node.slots()):
            reply.append([first, last, _node_entry(node), *replicas])
    reply.sort(key=lambda entry: entry[0])
    return reply


@command("shards", arity=2, flags="stale", parent="cluster", group=G)
def cluster_shards(c, argv):
    """Each shard's slots and nodes."""
    me = _node(c)
    cluster = me.cluster
    shards = []
    for master in cluster.masters():
        slots = []
        for first, last in slot_ranges(master.slots()):
            slots += [first, last]
        nodes = []
        for node in [master, *cluster.replicas_of(master)]:
            host = node.host.encode()
            nodes.append({
                b"id": node.id.encode(), b"port": node.port, b"ip": host, b"endpoint": host,
                b"role": b"replica" if node.master is not None else b"master",
                b"replication-offset": 0, b"health": b"fail" if node.failed else b"online"})
        shards.append({b"slots": slots, b"nodes": nodes})
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
        ("cluster_state", "fail" if me.down else "ok"),
        ("cluster_slots_assigned", assigned),
        ("cluster_slots_ok", assigned - failed),
        ("cluster_slots_pfail", 0),
        ("cluster_slots_fail", failed),
        ("cluster_known_nodes", len(cluster.nodes)),
        ("cluster_size", sum(1 for node in cluster.nodes if node.slots())),
        ("cluster_current_epoch", cluster.current_epoch),
        ("cluster_my_epoch", (me.master or me).config_epoch),  # (nodeEpoch: a replica's master's)
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


def _slot(raw: bytes) -> int:
    """getSlotOrReply."""
    try:
        slot = parse_int(raw)
    except RedisError:
        slot = -1
    if not 0 <= slot < SLOTS:
        raise RedisError(errors.CLUSTER_SLOT_OUT_OF_RANGE)
    return slot


def _layout_control(c, argv) -> ClusterNode:
    """A subcommand that changes the layout: allowed with --cluster-control, as the tools that
    reshard a cluster (redis-cli --cluster) send it."""
    me = _node(c)
    if not me.cluster.control:
        raise RedisError(errors.CLUSTER_LAYOUT_CONTROL.format(argv[1].decode(errors="replace").upper()))
    return me


@command("setslot", arity=-4, flags="admin stale no_async_loading", parent="cluster", group=G)
def cluster_setslot(c, argv):
    """Bind a hash slot to a specific node."""
    me = _layout_control(c, argv)
    if me.master is not None:
        raise RedisError(errors.SETSLOT_ON_REPLICA)
    slot = _slot(argv[2])
    action = argv[3].lower()
    if action in (b"migrating", b"importing", b"node") and len(argv) == 5:
        me.cluster.set_slot(me, slot, action, argv[4])
    elif action == b"stable" and len(argv) == 4:
        me.cluster.set_slot(me, slot, action, None)
    else:
        raise RedisError(errors.SETSLOT_SYNTAX)
    return OK


@command("meet", arity=-4, flags="admin stale no_async_loading", parent="cluster", group=G)
def cluster_meet(c, argv):
    """Force a node cluster to handshake with another node."""
    me = _layout_control(c, argv)
    try:
        port = parse_int(argv[3])
        if len(argv) > 4:
            parse_int(argv[4])
    except RedisError:
        raise RedisError(errors.CLUSTER_INVALID_PORT.format(argv[3].decode(errors="replace"))) from None
    me.cluster.meet(me, port)
    return OK


def _add_slots(c, argv, slots: list[int]) -> str:
    me = _layout_control(c, argv)
    cluster = me.cluster
    seen = set()
    for slot in slots:
        if cluster.slots[slot] is not None:
            raise RedisError(errors.CLUSTER_SLOT_BUSY.format(slot))
        if slot in seen:
            raise RedisError(errors.CLUSTER_SLOT_REPEATED.format(slot))
        seen.add(slot)
    for slot in slots:
        cluster.slots[slot] = me
        me.importing.pop(slot, None)
    cluster.update_coverage()
    cluster.save_layout()
    return OK


@command("addslots", arity=-3, flags="admin stale no_async_loading", parent="cluster", group=G)
def cluster_addslots(c, argv):
    """Assign new hash slots to receiving node."""
    return _add_slots(c, argv, [_slot(raw) for raw in argv[2:]])


@command("addslotsrange", arity=-4, flags="admin stale no_async_loading", parent="cluster",
         group=G)
def cluster_addslotsrange(c, argv):
    """Assign new hash slots to receiving node."""
    if len(argv) % 2:
        raise errors.wrong_arity("cluster|addslotsrange")
    slots: list[int] = []
    for first_raw, last_raw in zip(argv[2::2], argv[3::2]):
        first, last = _slot(first_raw), _slot(last_raw)
        if first > last:
            raise RedisError(errors.CLUSTER_SLOT_RANGE_ORDER.format(first, last))
        slots.extend(range(first, last + 1))
    return _add_slots(c, argv, slots)


@command("replicate", arity=3, flags="admin stale no_async_loading", parent="cluster", group=G)
def cluster_replicate(c, argv):
    """Configure a node as replica of a master node."""
    me = _layout_control(c, argv)
    cluster = me.cluster
    master = cluster.node_by_id(argv[2])
    if master is None:
        raise RedisError(errors.SETSLOT_UNKNOWN_NODE.format(argv[2].decode(errors="replace")))
    if master is me:
        raise RedisError(errors.CLUSTER_REPLICATE_MYSELF)
    if master.master is not None:
        raise RedisError(errors.CLUSTER_REPLICATE_REPLICA)
    if me.master is None and (me.slots() or len(me.db)):
        raise RedisError(errors.CLUSTER_REPLICATE_NOT_EMPTY)
    cluster.follow(me, master)
    cluster.save_layout()
    return OK


def _unsupported(c, argv):
    """A subcommand of a real cluster's bus and replication that minired does not model."""
    _node(c)
    raise RedisError(errors.CLUSTER_UNSUPPORTED.format(argv[1].decode(errors="replace").upper()))


# Declared, so that COMMAND and ACL know them as Redis does (ACL SETUSER ... +cluster|forget),
# but refused.
for _name, _arity, _flags in (
        ("bumpepoch", 2, "admin stale no_async_loading"),
        ("count-failure-reports", 3, "admin stale"),
        ("delslots", -3, "admin stale no_async_loading"),
        ("delslotsrange", -4, "admin stale no_async_loading"),
        ("failover", -2, "admin stale no_async_loading"),
        ("flushslots", 2, "admin stale no_async_loading"),
        ("forget", 3, "admin stale no_async_loading"),
        ("reset", -2, "admin noscript stale"),
        ("saveconfig", 2, "admin stale no_async_loading"),
        ("set-config-epoch", 3, "admin stale no_async_loading")):
    command(_name, arity=_arity, flags=_flags, parent="cluster", group=G,
            summary=f"CLUSTER {_name.upper()}")(_unsupported)


def _replicas(c, argv):
    me = _node(c)
    master = me.cluster.node_by_id(argv[2])
    if master is None:
        raise RedisError(errors.SETSLOT_UNKNOWN_NODE.format(argv[2].decode(errors="replace")))
    if master.master is not None:
        raise RedisError(errors.CLUSTER_NOT_A_MASTER)
    now = c.server.clock.ms()
    return [node_line(me, node, now).encode() for node in me.cluster.replicas_of(master)]


command("replicas", arity=3, flags="admin stale", parent="cluster", group=G,
        summary="List replica nodes of the specified master node")(_replicas)
command("slaves", arity=3, flags="admin stale", parent="cluster", group=G,
        summary="List replica nodes of the specified master node")(_replicas)


# --- MIGRATE between the process's nodes --------------------------------------------------------

_MIGRATE_SKIPPED = {b"copy": 0, b"replace": 0, b"auth": 1, b"auth2": 2}


def _migrate_keys(argv: list) -> list[int]:
    """migrateGetKeys: the key argument, or every argument after KEYS (AUTH's and AUTH2's
    values skipped; none when KEYS comes with a key argument)."""
    index = 6
    while index < len(argv):
        option = argv[index].lower()
        if option == b"keys":
            return [] if argv[3] else list(range(index + 1, len(argv)))
        index += _MIGRATE_SKIPPED.get(option, 0) + 1
    return [3]


@command("migrate", arity=-6, flags="write", keys=(3, 3, 1), key_finder=_migrate_keys,
         group="generic")
def migrate(c, argv):
    """Atomically transfer a key from a Redis instance to another one (migrateCommand)."""
    copy = replace = False
    password = username = None
    keys = [argv[3]]
    j = 6
    while j < len(argv):
        option = argv[j].lower()
        if option == b"copy":
            copy = True
        elif option == b"replace":
            replace = True
        elif option == b"auth" and j + 1 < len(argv):
            password = argv[j + 1]
            j += 1
        elif option == b"auth2" and j + 2 < len(argv):
            username, password = argv[j + 1], argv[j + 2]
            j += 2
        elif option == b"keys":
            if argv[3]:
                raise RedisError(errors.MIGRATE_KEYS_NEED_EMPTY_KEY)
            keys = argv[j + 1:]
            break
        else:
            raise RedisError(errors.SYNTAX)
        j += 1
    timeout = parse_int(argv[5])
    dbid = parse_int(argv[4])
    if timeout <= 0:
        timeout = 1000
    present = []
    for key in keys:
        value = c.db.read(key)
        if value is not None:
            present.append((key, value))
    # Neither MIGRATE nor a COPY is propagated: the keys it deleted are, as one DEL.
    c.changes = 0
    if not present:
        return Status(b"NOKEY")  # (often a key that expired meanwhile: not an error)
    me = c.server.cluster
    if me is not None:
        target = me.cluster.node_at(migrate_io.atoi(argv[2]))
        if target is not None:
            return _migrate_in_process(c, me, target, [key for key, _ in present], dbid, copy,
                                       username, password, replace)
    return _migrate_over_network(c, argv[1], argv[2], present, dbid, timeout, copy, replace,
                                 username, password)


def _migrate_over_network(c, host: bytes, port: bytes, present: list, dbid: int, timeout: int,
                          copy: bool, replace: bool, username: bytes | None,
                          password: bytes | None):
    """Send AUTH, SELECT (unless the cached connection has dbid selected) and one RESTORE (in
    cluster mode RESTORE-ASKING) per key with its DUMP payload and remaining TTL, then read the
    replies; each key the target acknowledged is deleted here unless COPY. A socket error
    other than a timeout before any RESTORE reply was read is retried once on a new
    connection, as migrateCommand does."""
    cache = migrate_io.sockets(c.server)
    restore = b"RESTORE-ASKING" if c.server.cluster is not None else b"RESTORE"
    db = c.db
    may_retry = True
    while True:
        conn = cache.get(host, port, timeout)
        request = []
        if password is not None:
            request.append([b"AUTH", password] if username is None
                           else [b"AUTH", username, password])
        select = conn.last_dbid != dbid
        if select:
            request.append([b"SELECT", b"%d" % dbid])
        sent = []
        now = c.server.clock.ms()
        for key, value in present:
            ttl = 0
            deadline = db.expiry(key)
            if deadline is not None:
                ttl = deadline - now
                if ttl < 0:
                    continue  # expired since the lookup: not sent
                ttl = max(ttl, 1)
            record = [restore, key, b"%d" % ttl, server_dump(c.server, value)]
            if replace:
                record.append(b"REPLACE")
            request.append(record)
            sent.append(key)
        try:
            conn.send(b"".join(map(encode_command, request)), timeout)
            auth_reply = conn.read_line(timeout) if password is not None else b""
            select_reply = conn.read_line(timeout) if select else b""
        except migrate_io.TransferError as exc:
            cache.close(host, port)
            if may_retry and not exc.timed_out:
                may_retry = False
                continue
            raise RedisError(errors.MIGRATE_IO.format("writing" if exc.writing else "reading"))
        target_error = None
        socket_error = None
        deleted = []
        read = 0
        for key in sent:
            try:
                reply = conn.read_line(timeout)
            except migrate_io.TransferError as exc:
                socket_error = exc
                break
            read += 1
            if auth_reply[:1] == b"-" or select_reply[:1] == b"-" or reply[:1] == b"-":
                if target_error is None:  # the first error is the reply
                    conn.last_dbid = -1
                    target_error = (auth_reply if auth_reply[:1] == b"-" else
                                    select_reply if select_reply[:1] == b"-" else reply)[1:]
            elif not copy:
                db.delete(key)
                if db.notifier is not None:
                    notify(db, GENERIC, b"del", key)
                deleted.append(key)
        if socket_error is not None:
            cache.close(host, port)
            if (target_error is None and read == 0 and may_retry
                    and not socket_error.timed_out):
                may_retry = False  # nothing was acknowledged: a well-behaved retry
                continue
        if deleted:
            _propagate_deletion(c, deleted)
        if target_error is not None:
            raise RedisError(errors.MIGRATE_TARGET_ERROR.format(
                target_error.decode("utf-8", "surrogateescape")))
        if socket_error is not None:
            raise RedisError(errors.MIGRATE_IO.format("reading"))
        conn.last_dbid = dbid
        return OK


def _propagate_deletion(c, keys: list) -> None:
    """MIGRATE is logged (AOF, replicas) as the DEL of the keys it moved away, one change per
    key (server.dirty), inside the caller's MULTI or script like any of its writes."""
    c.db.dirty += len(keys)
    if c.server.propagate is not None:
        c.server.propagate(c, COMMANDS[b"del"], [b"DEL", *keys], len(keys))


def _migrate_in_process(c, me: ClusterNode, target: ClusterNode, present: list, dbid: int,
                        copy: bool, username: bytes | None, password: bytes | None,
                        replace: bool):
    """MIGRATE to a node of this process's cluster: the keys move without the network, with
    the replies, events and files' records a RESTORE-ASKING exchange would give."""
    if target.server is None:
        raise RedisError(errors.MIGRATE_CONNECT)
    auth_error, authenticated = _target_auth(target.server, username, password)
    # In cluster mode the target refuses SELECT but for 0, and its RESTOREs still run, in db 0.
    select_error = errors.SELECT_IN_CLUSTER if dbid != 0 else None
    first_error = None
    moved = False
    for key in present:
        # Each key as the target's RESTORE-ASKING answers it. A key restored leaves the source
        # unless AUTH or SELECT failed; the reply is the first error (migrateCommand).
        restore_error = (_restore_refusal(target, key, replace) if authenticated
                         else errors.NOAUTH)
        if restore_error is None:
            me.cluster.move_key(me, target, key, copy or bool(auth_error or select_error))
            moved = True
        error = auth_error or select_error or restore_error
        if first_error is None:
            first_error = error
    if moved:
        target.redirect_blocked()
    if first_error is not None:
        raise RedisError(errors.MIGRATE_TARGET_ERROR.format(first_error))
    return OK


def _target_auth(server, username, password) -> tuple[str | None, bool]:
    """What the target answers MIGRATE's AUTH with (None without AUTH or when it succeeds), and
    whether the connection may then run commands."""
    if password is not None:
        users = users_of(server)
        if username is None and users.default.nopass:
            # AUTH <password> (not AUTH2) to a default user without one: authCommand's refusal.
            return errors.AUTH_NOT_CONFIGURED, True
        if users.authenticate(Client(server), username or b"default", password, b"auth"):
            return None, True
        return errors.WRONGPASS, not auth_required(server)
    return None, not auth_required(server)


def _restore_refusal(target: ClusterNode, key: bytes, replace: bool) -> str | None:
    """What the target answers `RESTORE-ASKING key ...` with: its redirection (the slot is
    neither its own nor being imported) or BUSYKEY."""
    refusal = target.route_key(key)
    if refusal is not None:
        return refusal
    if not replace and target.db.get(key) is not None:
        return errors.BUSYKEY
    return None


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
        if target.master is not None:
            raise RedisError(errors.CLUSTER_TARGET_NOT_MASTER)
        option = argv[5].lower() if len(argv) > 5 else None
        if option == b"finish" and len(argv) == 6:
            moved = cluster.finish_migration(slot, target)
            for node in cluster.nodes:
                node.redirect_blocked()
            return moved
        if cluster.slots[slot] is target:
            raise RedisError(errors.CLUSTER_ALREADY_SERVED.format(slot, target.address))
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
        if action == b"failover":
            cluster.kill(node)
        else:
            cluster.recover(node)
        return OK
    raise RedisError(errors.SYNTAX)
