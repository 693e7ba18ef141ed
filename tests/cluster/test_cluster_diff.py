"""minired --cluster 3 against a real 3-master Redis Cluster: the same commands through each
node, replies compared after naming nodes by their index (the two clusters' ports and node
ids differ; their slot ranges are the same)."""
from __future__ import annotations

import time
from contextlib import contextmanager

import pytest

from tests.cluster.conftest import flush_nodes, mini_ports, real_ports
from tests.support.differential import _canonical
from tests.support.respclient import Err, RawClient

# Keys by the node serving them (slot in brackets): the slots are fixed by CRC16, so these
# hold on both clusters.
ON_0 = "b"      # 3300
ON_1 = "{user}x"  # 5474
ON_2 = "foo"    # 12182
ON_2_TOO = "a"  # 15495: another slot of node 2
MOVED_SLOT = 12182  # the slot the tests move from node 2 to node 0, and give back


class ClusterDiff:
    def __init__(self, real_cluster, mini_cluster) -> None:
        self.real_ports = real_ports(real_cluster)
        self.mini_ports = mini_ports(mini_cluster)
        self.real = [RawClient(port) for port in self.real_ports]
        self.mini = [RawClient(port) for port in self.mini_ports]
        self.real_ids = [self.real[i].call("CLUSTER", "MYID") for i in range(3)]
        self.mini_ids = [self.mini[i].call("CLUSTER", "MYID") for i in range(3)]

    def close(self) -> None:
        for client in self.real + self.mini:
            client.close()

    def _names(self, ports: list[int], ids: list[bytes]) -> list[tuple]:
        names = []
        for i, (port, node_id) in enumerate(zip(ports, ids)):
            names.append((f"127.0.0.1:{port}", f"<node{i}>"))
            names.append((f"@{port + 10000}", f"@<bus{i}>"))
            names.append((node_id.decode(), f"<id{i}>"))
        return names

    def normalize(self, reply, real: bool):
        ports = self.real_ports if real else self.mini_ports
        names = self._names(ports, self.real_ids if real else self.mini_ids)

        def walk(value):
            if isinstance(value, Err):
                text = value.message
                for old, new in names:
                    text = text.replace(old, new)
                return Err(text)
            if isinstance(value, bytes):
                text = value.decode("latin-1")
                for old, new in names:
                    text = text.replace(old, new)
                return type(value)(text.encode("latin-1")) if type(value) is not bytes \
                    else text.encode("latin-1")
            if isinstance(value, int) and not isinstance(value, bool) and value in ports:
                return f"<port{ports.index(value)}>"
            if isinstance(value, list):
                return type(value)([walk(item) if not isinstance(item, tuple)
                                    else tuple(walk(x) for x in item) for item in value])
            return value

        return walk(reply)

    def both(self, node: int, *args):
        return self.real[node].call(*args), self.mini[node].call(*args)

    def check(self, node: int, *args, unordered: bool = False):
        expected, actual = self.both(node, *args)
        expected_n = _canonical(self.normalize(expected, True), unordered)
        actual_n = _canonical(self.normalize(actual, False), unordered)
        assert actual_n == expected_n, (
            f"node {node} {args!r}\n  redis:   {expected!r}\n  minired: {actual!r}")
        return expected

    def check_all(self, *args, unordered: bool = False) -> None:
        for node in range(3):
            self.check(node, *args, unordered=unordered)

    def give_real_slot_back(self, slot: int, owner: int = 2) -> None:
        """The real cluster as it was before a test moved `slot`: flushed, the slot stable and
        `owner`'s on every node.

        Telling each node is not enough by itself: the node that imported the slot bumped its
        config epoch, and a ping it sent before letting go can reach the owner after the owner
        took the slot back; the higher epoch wins and the owner then redirects to a node that
        redirects back. So the assignment is repeated until every node has named the owner
        three times in a row, 100 ms apart (pings leave every 100 ms)."""
        for client in self.real:
            client.call("FLUSHALL")
            client.call("CLUSTER", "SETSLOT", slot, "STABLE")
        deadline = time.monotonic() + 10
        agreed = 0
        while agreed < 3:
            assert time.monotonic() < deadline, f"the real nodes disagree on slot {slot}"
            for client in self.real:
                if _owner_of(client, slot) != self.real_ids[owner]:
                    agreed = 0
                    assert client.call("CLUSTER", "SETSLOT", slot, "NODE",
                                       self.real_ids[owner]) == b"OK"
            agreed += 1
            time.sleep(0.1)


def _owner_of(client: RawClient, slot: int) -> bytes | None:
    """The id of the node `client`'s server says serves `slot`."""
    for start, end, master, *_ in client.call("CLUSTER", "SLOTS"):
        if start <= slot <= end:
            return master[2]
    return None


@contextmanager
def cluster_diff(real_cluster, fresh_mini):
    """A ClusterDiff over the real cluster, flushed, and the fresh minired cluster; closed after."""
    flush_nodes(real_ports(real_cluster))
    pair = ClusterDiff(real_cluster, fresh_mini)
    if any(_owner_of(client, MOVED_SLOT) != pair.real_ids[2] for client in pair.real):
        pair.give_real_slot_back(MOVED_SLOT)  # (a late ping after the last test's cleanup)
    try:
        yield pair
    finally:
        pair.close()


@pytest.fixture
def cdiff(real_cluster, fresh_mini):
    with cluster_diff(real_cluster, fresh_mini) as pair:
        yield pair


def test_layout_replies_through_every_node(cdiff):
    for protocol in (2, 3):
        for node in range(3):
            cdiff.both(node, "HELLO", protocol)
        cdiff.check_all("CLUSTER", "SLOTS")
        cdiff.check_all("CLUSTER", "SHARDS", unordered=True)
        cdiff.check_all("CLUSTER", "MYID")
        cdiff.check_all("INFO", "cluster")
        cdiff.check_all("CLUSTER", "KEYSLOT", "{user}1000")
        cdiff.check_all("CLUSTER", "HELP")


def test_cluster_nodes_and_info_match_but_for_timing_fields(cdiff):
    for node in range(3):
        real, mini = cdiff.both(node, "CLUSTER", "NODES")
        real_lines = sorted(cdiff.normalize(real, True).decode().splitlines())
        mini_lines = sorted(cdiff.normalize(mini, False).decode().splitlines())

        def masked(line: str) -> list[str]:
            fields = line.split()
            fields[5] = "<pong>"  # the last pong's time
            return fields

        assert [masked(x) for x in mini_lines] == [masked(x) for x in real_lines]
        real, mini = cdiff.both(node, "CLUSTER", "INFO")
        deterministic = [line for line in real.decode().splitlines()
                         if not line.startswith("cluster_stats_messages")]
        mini_lines = [line for line in mini.decode().splitlines()
                      if not line.startswith("cluster_stats_messages")]
        assert mini_lines == deterministic


def test_keys_are_served_by_their_slot_owner_and_redirected_elsewhere(cdiff):
    for key in (ON_0, ON_1, ON_2, ON_2_TOO, "{user}y", "", "{}", "{a}b"):
        cdiff.check_all("SET", key, "v")
        cdiff.check_all("GET", key)
        cdiff.check_all("CLUSTER", "KEYSLOT", key)
    for node in range(3):
        for key in (ON_0, ON_1, ON_2):
            slot = cdiff.check(node, "CLUSTER", "KEYSLOT", key)
            cdiff.check(node, "CLUSTER", "COUNTKEYSINSLOT", slot)
            cdiff.check(node, "CLUSTER", "GETKEYSINSLOT", slot, 10)
    cdiff.check_all("SET", "{user}z", "v")
    cdiff.check(1, "CLUSTER", "GETKEYSINSLOT", 5474, 10)
    cdiff.check(1, "CLUSTER", "GETKEYSINSLOT", 5474, 1)
    cdiff.check_all("DBSIZE")
    cdiff.check_all("KEYS", "*", unordered=True)


def test_multi_key_commands_need_one_slot(cdiff):
    cdiff.check_all("MSET", "{t}1", "a", "{t}2", "b")
    cdiff.check_all("MSET", ON_0, "a", ON_2, "b")
    cdiff.check_all("MSET", ON_2, "a", ON_2_TOO, "b")  # one node, two slots
    cdiff.check_all("MGET", "{t}1", "{t}2", "{t}3")
    cdiff.check_all("DEL", ON_2, ON_2_TOO)
    cdiff.check_all("DEL", ON_2, ON_2)  # the same key twice is one slot
    cdiff.check_all("RENAME", "{t}1", "{t}9")
    cdiff.check_all("RENAME", "{t}9", "x")
    cdiff.check_all("BLPOP", ON_2, ON_0, 0)
    cdiff.check_all("XREAD", "STREAMS", ON_0, ON_2, "0", "0")
    cdiff.check_all("SSUBSCRIBE", "ch", ON_2)
    cdiff.check_all("SUNIONSTORE", "{t}d", "{t}s1", "{t}s2")
    cdiff.check_all("EVAL", "return 1", 2, ON_2, ON_2_TOO)
    cdiff.check_all("FCALL", "nope", 1, ON_2)
    cdiff.check_all("OBJECT", "ENCODING", ON_1)
    cdiff.check_all("WATCH", ON_1)
    cdiff.check_all("UNWATCH")


def test_commands_cluster_mode_refuses(cdiff):
    cdiff.check_all("SELECT", 0)
    cdiff.check_all("SELECT", 1)
    cdiff.check_all("SELECT", -1)
    cdiff.check_all("SELECT", "x")
    cdiff.check(0, "SWAPDB", 0, 1)
    cdiff.check(2, "MOVE", ON_2, 1)
    cdiff.check(2, "COPY", ON_2, "{foo}b", "DB", 1)
    cdiff.check(2, "COPY", ON_2, "{foo}b", "DB", 0)
    cdiff.check(0, "SORT", ON_0, "BY", "x*")
    cdiff.check(0, "SORT", ON_0, "BY", "nosort")
    cdiff.check(0, "SORT", ON_0, "GET", "#")
    cdiff.check(0, "EVAL", "#!lua flags=no-cluster\nreturn 1", 0)
    real, mini = cdiff.both(0, "HELLO", 2)
    assert real[8:10] == mini[8:10] == [b"mode", b"cluster"]
    cdiff.check_all("READONLY")
    cdiff.check_all("READWRITE")
    cdiff.check_all("ASKING")
    cdiff.check_all("CLUSTER", "COUNTKEYSINSLOT", -1)
    cdiff.check_all("CLUSTER", "COUNTKEYSINSLOT", 16384)
    cdiff.check_all("CLUSTER", "COUNTKEYSINSLOT", "x")
    cdiff.check_all("CLUSTER", "GETKEYSINSLOT", 1, -1)
    cdiff.check_all("CLUSTER", "GETKEYSINSLOT", 1, "x")
    cdiff.check_all("CLUSTER", "KEYSLOT")
    cdiff.check_all("CLUSTER", "NOSUCH")
    cdiff.check_all("CLUSTER")


def test_transactions_check_each_command_and_then_all_of_them(cdiff):
    cdiff.check_all("CONFIG", "RESETSTAT")
    cdiff.check(2, "MULTI")
    cdiff.check(2, "SET", ON_2, "1")
    cdiff.check(2, "SET", ON_0, "2")  # MOVED while queuing: the transaction fails
    cdiff.check(2, "EXEC")
    cdiff.check(2, "MULTI")
    cdiff.check(2, "SET", ON_2, "1")
    cdiff.check(2, "SET", ON_2_TOO, "2")  # each is served here, together they cross slots
    cdiff.check(2, "EXEC")
    cdiff.check(2, "EXEC")  # (discarded)
    cdiff.check(2, "MULTI")
    cdiff.check(2, "SET", ON_2, "1")
    cdiff.check(2, "GET", ON_2)
    cdiff.check(2, "EXEC")
    cdiff.check(0, "WATCH", ON_0)
    cdiff.check(0, "MULTI")
    cdiff.check(0, "GET", ON_0)
    cdiff.check(0, "EXEC")
    cdiff.check_all("INFO", "errorstats")


def test_scripts_may_touch_only_keys_their_node_serves(cdiff):
    cdiff.check_all("CONFIG", "RESETSTAT")
    cdiff.check(2, "SET", ON_2, "1")
    cdiff.check(2, "EVAL", "return redis.call('get', KEYS[1])", 1, ON_2)
    # Undeclared keys: another slot of this node is allowed in 7.0, another node's is not.
    cdiff.check(2, "EVAL", "return redis.call('get', 'a')", 1, ON_2)
    cdiff.check(2, "EVAL", "redis.call('get', KEYS[1]); return redis.call('get', 'a')", 1, ON_2)
    cdiff.check(2, "EVAL", "return redis.call('get', 'b')", 0)
    cdiff.check(2, "EVAL", "return redis.pcall('get', 'b')", 0)
    cdiff.check(2, "EVAL", "return redis.call('mget', 'foo', 'a')", 0)
    cdiff.check(2, "EVAL", "return 1", 1, ON_0)
    cdiff.check(2, "EVAL", "#!lua flags=allow-cross-slot-keys\nreturn 1", 2, ON_2, ON_2_TOO)
    cdiff.check(2, "EVAL", "#!lua\nreturn redis.call('get', 'b')", 0)
    cdiff.check(2, "FUNCTION", "LOAD",
                "#!lua name=lib\nredis.register_function('f', function(k, a) "
                "return redis.call('get', a[1]) end)")
    cdiff.check(2, "FCALL", "f", 0, ON_2)
    cdiff.check(2, "FCALL", "f", 0, ON_0)
    cdiff.check(2, "FCALL", "f", 1, ON_0, ON_0)
    cdiff.check(2, "FUNCTION", "LOAD",
                "#!lua name=lib2\nredis.register_function{function_name='g', callback="
                "function() return 1 end, flags={'no-cluster'}}")
    cdiff.check(2, "FCALL", "g", 0)
    cdiff.check(2, "FCALL_RO", "f", 1, ON_0, ON_0)
    cdiff.check(2, "EVAL_RO", "return redis.call('get', KEYS[1])", 1, ON_1)
    cdiff.check(2, "INFO", "errorstats")


def test_publish_reaches_every_node_and_spublish_only_the_slot_owner(cdiff):
    subscribers = []
    for node in range(3):
        real = RawClient(cdiff.real_ports[node])
        mini = RawClient(cdiff.mini_ports[node])
        subscribers.append((real, mini))
        assert real.call("SUBSCRIBE", "news") == mini.call("SUBSCRIBE", "news")
    try:
        # PUBLISH counts this node's receivers; the bus delivers on the others.
        cdiff.check(0, "PUBLISH", "news", "hello")
        for real, mini in subscribers:
            assert real.read() == mini.read() == [b"message", b"news", b"hello"]
        # "ch" hashes to slot 13271, node 2's.
        cdiff.check(0, "SPUBLISH", "ch", "m")
        cdiff.check(2, "SPUBLISH", "ch", "m")
        real, mini = RawClient(cdiff.real_ports[2]), RawClient(cdiff.mini_ports[2])
        try:
            assert real.call("SSUBSCRIBE", "ch") == mini.call("SSUBSCRIBE", "ch")
            cdiff.check(2, "SPUBLISH", "ch", "sharded")
            assert real.read() == mini.read() == [b"smessage", b"ch", b"sharded"]
            cdiff.check(2, "PUBSUB", "SHARDCHANNELS")
            cdiff.check(0, "PUBSUB", "SHARDCHANNELS")
            cdiff.check(0, "PUBSUB", "NUMSUB", "news")
        finally:
            real.close()
            mini.close()
        real, mini = RawClient(cdiff.real_ports[0]), RawClient(cdiff.mini_ports[0])
        try:
            assert cdiff.normalize(real.call("SSUBSCRIBE", "ch"), True) == \
                cdiff.normalize(mini.call("SSUBSCRIBE", "ch"), False)
        finally:
            real.close()
            mini.close()
    finally:
        for real, mini in subscribers:
            real.close()
            mini.close()


def _open_real_migration(cdiff, slot: int, keys: list[str]) -> None:
    """What redis-cli --cluster reshard does to begin moving `slot` from node 2 to node 0, and
    the keys it has moved so far."""
    source, target = cdiff.real[2], cdiff.real[0]
    target.call("CLUSTER", "SETSLOT", slot, "IMPORTING", cdiff.real_ids[2])
    source.call("CLUSTER", "SETSLOT", slot, "MIGRATING", cdiff.real_ids[0])
    for key in keys:
        assert source.call("MIGRATE", "127.0.0.1", cdiff.real_ports[0], key, 0, 5000) == b"OK"


def _finish_real_migration(cdiff, slot: int) -> None:
    for client in cdiff.real:
        client.call("CLUSTER", "SETSLOT", slot, "NODE", cdiff.real_ids[0])


def test_a_slot_in_the_middle_of_a_move(cdiff):
    slot = 12182  # ON_2's slot, moved from node 2 to node 0
    keys = ["{foo}1", "{foo}2", "{foo}3"]
    for key in keys:
        cdiff.check(2, "SET", key, key)
    try:
        _open_real_migration(cdiff, slot, keys[:1])
        assert cdiff.mini[0].call("MINIRED", "CLUSTER", "MIGRATE", slot,
                                  cdiff.mini_ports[0], "COUNT", 1) == 1
        cdiff.check(2, "GET", keys[0])            # moved: ASK
        cdiff.check(2, "GET", keys[1])            # still here: served
        cdiff.check(2, "SET", "{foo}new", "v")    # not here: ASK (a new key goes to the target)
        cdiff.check(2, "MGET", keys[1], keys[2])  # all here: served
        cdiff.check(2, "MGET", keys[0], keys[1])  # some moved: TRYAGAIN
        cdiff.check(2, "MGET", keys[0], "{foo}new")  # all gone: ASK
        cdiff.check(2, "DEL", keys[0], "{foo}new")   # (a write too)
        cdiff.check(0, "GET", keys[0])            # target without ASKING: MOVED to the owner
        cdiff.check(0, "ASKING")
        cdiff.check(0, "GET", keys[0])            # with ASKING: served
        cdiff.check(0, "GET", keys[0])            # (ASKING was good for one command)
        cdiff.check(0, "ASKING")
        cdiff.check(0, "MGET", keys[0], keys[1])  # TRYAGAIN there too
        cdiff.check(0, "ASKING")
        cdiff.check(0, "MULTI")
        cdiff.check(0, "GET", keys[0])
        cdiff.check(0, "EXEC")                    # ASKING lasts the whole transaction
        cdiff.check(2, "CLUSTER", "COUNTKEYSINSLOT", slot)
        cdiff.check(0, "CLUSTER", "COUNTKEYSINSLOT", slot)
        for node in (0, 2):
            real, mini = cdiff.both(node, "CLUSTER", "NODES")
            own = [line for line in cdiff.normalize(real, True).decode().splitlines()
                   if "myself" in line][0]
            mine = [line for line in cdiff.normalize(mini, False).decode().splitlines()
                    if "myself" in line][0]
            assert mine.split()[8:] == own.split()[8:]  # slots, then [slot->-id] / [slot-<-id]
        # The source gives a slot away once it has moved every key of it.
        for key in keys[1:]:
            cdiff.real[2].call("MIGRATE", "127.0.0.1", cdiff.real_ports[0], key, 0, 5000)
        _finish_real_migration(cdiff, slot)
        assert cdiff.mini[0].call("MINIRED", "CLUSTER", "MIGRATE", slot, cdiff.mini_ports[0],
                                  "FINISH") == 2
        cdiff.check(2, "GET", keys[1])            # MOVED
        cdiff.check(0, "MGET", *keys)
        cdiff.check(1, "GET", keys[0])            # MOVED to node 0
        cdiff.check_all("CLUSTER", "SLOTS")
    finally:  # the real cluster as it was, for the next tests
        cdiff.give_real_slot_back(slot)


def test_a_client_blocked_on_a_slot_that_moves_away_is_redirected(cdiff):
    slot = 12182
    real, mini = RawClient(cdiff.real_ports[2]), RawClient(cdiff.mini_ports[2])
    try:
        real.send("BLPOP", "{foo}q", 0)
        mini.send("BLPOP", "{foo}q", 0)
        cdiff.check(2, "CLIENT", "LIST", "TYPE", "pubsub")  # (a round trip: both are blocked)
        cdiff.real[0].call("CLUSTER", "SETSLOT", slot, "IMPORTING", cdiff.real_ids[2])
        cdiff.real[2].call("CLUSTER", "SETSLOT", slot, "MIGRATING", cdiff.real_ids[0])
        _finish_real_migration(cdiff, slot)
        cdiff.mini[0].call("MINIRED", "CLUSTER", "MIGRATE", slot, cdiff.mini_ports[0], "FINISH")
        # (Redis redirects it from its clients cron, within a second)
        assert cdiff.normalize(real.read(), True) == cdiff.normalize(mini.read(), False) == \
            Err("MOVED 12182 <node0>")
    finally:
        real.close()
        mini.close()
        cdiff.give_real_slot_back(slot)


def test_a_server_without_cluster_mode_answers_as_redis_does(diff):
    for args in (("CLUSTER", "INFO"), ("CLUSTER", "KEYSLOT", "foo"), ("CLUSTER", "SLOTS"),
                 ("CLUSTER", "HELP"), ("CLUSTER", "SETSLOT", 1, "STABLE"), ("READONLY",),
                 ("READWRITE",), ("ASKING",), ("CLUSTER", "KEYSLOT"), ("CLUSTER",),
                 ("CLUSTER", "NOSUCH"), ("CLUSTER", "GETKEYSINSLOT", 1, 1)):
        diff.check(*args)
    diff.check("INFO", "cluster")
    # (unordered: Redis lists subcommands in its hash table's order)
    diff.check("COMMAND", "INFO", "cluster", "asking", "readonly", "readwrite", unordered=True)
    diff.check("ACL", "SETUSER", "ops", "+cluster|info", "+readonly", "-cluster|setslot")
    diff.check("ACL", "SETUSER", "ops", "on", "nopass", "+cluster|info")
    diff.check("ACL", "DRYRUN", "ops", "CLUSTER", "INFO")
    diff.check("ACL", "DRYRUN", "ops", "CLUSTER", "SLOTS")
    diff.check("ACL", "DELUSER", "ops")
    diff.check("SORT", "nolist", "BY", "x*")


def _keyspace_events(client: RawClient, until_key: str) -> list:
    """The (event, key) pairs a PSUBSCRIBEd client got, up to a SET of `until_key` on the same
    node (its own events close the list: events are delivered in order)."""
    events = []
    while True:
        message = client.read()
        channel, key = message[2].decode(), message[3].decode()
        if channel.startswith("__keyevent@0__:"):
            if key == until_key:
                return events
            events.append((channel.split(":", 1)[1], key))


def test_moving_keys_sends_the_events_of_migrate(cdiff):
    slot = 12182
    keys = ["{foo}1", "{foo}2"]
    watchers = []
    try:
        for node in (0, 2):
            cdiff.check(node, "CONFIG", "SET", "notify-keyspace-events", "KEA")
        for key in keys:
            cdiff.check(2, "SET", key, key)
        for node in (0, 2):
            for client in (RawClient(cdiff.real_ports[node]), RawClient(cdiff.mini_ports[node])):
                client.call("PSUBSCRIBE", "__keyevent@0__:*")
                watchers.append((node, client))
        _open_real_migration(cdiff, slot, keys[:1])
        assert cdiff.mini[0].call("MINIRED", "CLUSTER", "MIGRATE", slot,
                                  cdiff.mini_ports[0], "COUNT", 1) == 1
        for node, marker in ((0, "b"), (2, "a")):  # b and a: keys each node serves
            cdiff.check(node, "SET", marker, "1")
        seen = [(node, _keyspace_events(client, "b" if node == 0 else "a"))
                for node, client in watchers]
        assert seen == [(0, [("restore", keys[0])]), (0, [("restore", keys[0])]),
                        (2, [("del", keys[0])]), (2, [("del", keys[0])])]
    finally:
        for _, client in watchers:
            client.close()
        for node in (0, 2):
            cdiff.check(node, "CONFIG", "SET", "notify-keyspace-events", "")
        cdiff.give_real_slot_back(slot)


def test_finishing_a_move_at_its_source_undoes_it(fresh_mini):
    """MIGRATE <slot> <the owner's port> FINISH on an open move brings the moved keys back."""
    ports = mini_ports(fresh_mini)
    source, target = RawClient(ports[2]), RawClient(ports[0])
    try:
        keys = ["{foo}1", "{foo}2", "{foo}3"]
        for key in keys:
            source.call("SET", key, key)
        assert target.call("MINIRED", "CLUSTER", "MIGRATE", 12182, ports[0], "COUNT", 2) == 2
        assert source.call("MINIRED", "CLUSTER", "MIGRATE", 12182, ports[2], "FINISH") == 2
        assert source.call("MGET", *keys) == [key.encode() for key in keys]
        assert target.call("CLUSTER", "COUNTKEYSINSLOT", 12182) == 0
        assert "[" not in source.call("CLUSTER", "NODES").decode()
        assert target.call("GET", keys[0]) == Err(f"MOVED 12182 127.0.0.1:{ports[2]}")
        # A move re-aimed at another node first brings back what the first one moved.
        source.call("MINIRED", "CLUSTER", "MIGRATE", 12182, ports[0], "COUNT", 1)
        assert source.call("MINIRED", "CLUSTER", "MIGRATE", 12182, ports[1], "COUNT", 0) == 0
        assert target.call("CLUSTER", "COUNTKEYSINSLOT", 12182) == 0
        assert source.call("CLUSTER", "COUNTKEYSINSLOT", 12182) == 3
    finally:
        source.close()
        target.close()
