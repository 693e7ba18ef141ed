"""Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT ..."""
from __future__ import annotations

import cython

from minired import REDIS_VERSION
from minired.engine import client_reply
from minired.engine.args import parse_c_int, parse_int
from minired.engine.client import Client
from minired.engine.client_info import client_info_line
from minired.engine.table import command, container_command, lookup, stats_of
from minired.features import client_eviction, pause, security, shutdown_wait
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, PONG, Status, Verbatim

G = "connection"


@command("ping", arity=-1, flags="fast sentinel", group=G)
@cython.locals(c=Client, argv=list)
def ping(c, argv):
    if len(argv) > 2:
        raise errors.wrong_arity("ping")
    if c.config.writes_refused_on_disk:  # (Redis refuses PING too: a health check sees it)
        raise RedisError(c.config.write_refusal())
    if c.protocol == 2 and (c.channels or c.patterns or c.shard_channels):
        return [b"pong", argv[1] if len(argv) == 2 else b""]
    return argv[1] if len(argv) == 2 else PONG


@command("echo", arity=2, flags="loading stale fast", group=G)
def echo(c, argv):
    return argv[1]


def _authenticate(c, username: bytes, password: bytes, command_name: bytes) -> None:
    """Log the client in as the user (AUTH, HELLO AUTH), or raise WRONGPASS."""
    if not security.users_of(c.server).authenticate(c, username, password, command_name):
        raise RedisError(errors.WRONGPASS)


@command("auth", arity=-2, flags="noscript loading stale fast no_auth allow_busy", group=G)
def auth(c, argv):
    if len(argv) > 3:
        raise RedisError(errors.SYNTAX)
    if len(argv) == 2:
        users = security.users_of(c.server)
        users.sync_requirepass()
        if users.default.nopass:
            raise RedisError(errors.AUTH_NOT_CONFIGURED)
        _authenticate(c, b"default", argv[1], argv[0])
    else:
        _authenticate(c, argv[1], argv[2], argv[0])
    return OK


@command("hello", arity=-1, flags="noscript loading stale fast no_auth allow_busy", group=G)
def hello(c, argv):
    protocol = c.protocol
    if len(argv) >= 2:
        # (string2ll, as getLongLongFromObjectOrReply: no space, sign or leading zero)
        protocol = parse_int(argv[1], errors.HELLO_PROTOCOL_NOT_INTEGER)
        if protocol not in (2, 3):
            raise RedisError(errors.NOPROTO)
    i = 2
    while i < len(argv):
        option = argv[i].lower()
        remaining = len(argv) - i - 1
        if option == b"auth" and remaining >= 2:
            # As in Redis 7.0, AUTH takes effect as it is parsed: a later bad option leaves
            # the client authenticated.
            _authenticate(c, argv[i + 1], argv[i + 2], argv[0])
            i += 3
        elif option == b"setname" and remaining >= 1:
            # Named as it is parsed too: a later bad option or failed AUTH keeps the name.
            c.name = _valid_name(argv[i + 1])
            i += 2
        else:
            raise RedisError(errors.HELLO_SYNTAX.format(argv[i].decode(errors="replace")))
    if not c.authenticated and security.auth_required(c.server):
        raise RedisError(errors.HELLO_NOAUTH)
    c.protocol = protocol
    return {
        b"server": b"redis", b"version": REDIS_VERSION.encode(), b"proto": protocol,
        b"id": c.id, b"mode": b"standalone" if c.server.cluster is None else b"cluster",
        b"role": b"master", b"modules": [],
    }


@command("select", arity=2, flags="loading stale fast", group=G)
def select(c, argv):
    index = parse_c_int(argv[1])
    if index != 0 and c.server.cluster is not None:
        raise RedisError(errors.SELECT_IN_CLUSTER)
    if not 0 <= index < len(c.server.keyspace):
        raise RedisError(errors.DB_INDEX_OUT_OF_RANGE)
    c.select(index)
    return OK


@command("quit", arity=-1, flags="noscript loading stale fast no_auth allow_busy", group=G)
def quit_(c, argv):
    c.close_after_reply = True
    return OK


@command("reset", arity=1, flags="noscript loading stale fast no_auth allow_busy", group=G)
def reset(c, argv):
    server = c.server
    c.multi = None
    c.multi_failed = False
    c.unwatch_all()
    for hook in server.hooks.disconnect:
        hook(c)  # drops subscriptions and the like, as if the client had gone
    c.select(0)
    c.protocol = 2
    c.name = b""
    client_reply.reset(c)
    security.users_of(server).reset_client(c)
    return Status(b"RESET")


# --- CLIENT ------------------------------------------------------------------------------------

container_command("client", G, flags="sentinel", summary="A container for client connection commands.")


def _valid_name(name: bytes) -> bytes:
    if any(ch <= 32 or ch > 126 for ch in name):
        raise RedisError(errors.CLIENT_NAME_INVALID)
    return name


@command("id", arity=2, flags="noscript loading stale", parent="client", group=G)
def client_id(c, argv):
    return c.id


@command("setname", arity=3, flags="noscript loading stale", parent="client", group=G)
def client_setname(c, argv):
    c.name = _valid_name(argv[2])
    return OK


@command("getname", arity=2, flags="noscript loading stale", parent="client", group=G)
def client_getname(c, argv):
    return c.name or None


@command("setinfo", arity=4, flags="noscript loading stale", parent="client", group=G)
def client_setinfo(c, argv):
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise RedisError(errors.CLIENT_SETINFO_UNKNOWN_OPTION.format(argv[2].decode(errors="replace")))
    if any(ch < 33 or ch > 126 for ch in argv[3]):
        raise RedisError(errors.CLIENT_SETINFO_INVALID.format(attr.decode()))
    if attr == b"lib-name":
        c.lib_name = argv[3]
    else:
        c.lib_ver = argv[3]
    return OK


@command("info", arity=2, flags="noscript loading stale", parent="client", group=G)
def client_info(c, argv):
    return Verbatim((client_info_line(c, c, "client|info", argv) + "\n").encode())


@command("list", arity=-2, flags="admin noscript loading stale", parent="client", group=G)
def client_list(c, argv):
    clients = list(c.server.clients.values())
    if len(argv) > 2:
        option = argv[2].lower()
        if option == b"id" and len(argv) > 3:
            wanted = set()
            for raw in argv[3:]:
                wanted.add(parse_int(raw, errors.CLIENT_INVALID_ID))
            clients = [x for x in clients if x.id in wanted]
        elif option == b"type" and len(argv) == 4:
            kind = argv[3].lower()
            if kind not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise RedisError(errors.CLIENT_UNKNOWN_TYPE.format(argv[3].decode(errors="replace")))
            clients = [x for x in clients if _client_type(x) == _TYPE_ALIASES.get(kind, kind)]
        else:
            raise RedisError(errors.SYNTAX)
    return Verbatim("".join(client_info_line(x, c, "client|list", argv) + "\n"
                            for x in clients).encode())


@command("kill", arity=-3, flags="admin noscript loading stale", parent="client", group=G)
def client_kill(c, argv):
    clients = list(c.server.clients.values())
    link = c.server.features.replication.link if c.server.features.replication is not None else None
    if link is not None and link.state == "connected":
        clients.append(link.master_client)  # (killing it drops the link, which reconnects)
    if len(argv) == 3:  # old form: CLIENT KILL addr:port
        addr = argv[2].decode(errors="replace")
        for other in clients:
            if other.addr == addr:
                if other is c:  # answered first, then closed (CLIENT_CLOSE_AFTER_REPLY)
                    c.close_after_reply = True
                else:
                    other.kill()
                return OK
        raise RedisError(errors.CLIENT_NO_SUCH_CLIENT)
    if len(argv) % 2 != 0:
        raise RedisError(errors.SYNTAX)
    skipme = True
    filters = []
    for i in range(2, len(argv), 2):
        option, value = argv[i].lower(), argv[i + 1]
        if option == b"id":
            wanted_id = parse_int(value, errors.CLIENT_KILL_ID_NOT_POSITIVE)
            if wanted_id <= 0:
                raise RedisError(errors.CLIENT_KILL_ID_NOT_POSITIVE)
            filters.append(lambda x, v=wanted_id: x.id == v)
        elif option == b"addr":
            filters.append(lambda x, v=value.decode(errors="replace"): x.addr == v)
        elif option == b"laddr":
            filters.append(lambda x, v=value.decode(errors="replace"): x.laddr == v)
        elif option == b"type":
            kind = value.lower()
            if kind not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise RedisError(errors.CLIENT_UNKNOWN_TYPE.format(value.decode(errors="replace")))
            filters.append(lambda x, k=_TYPE_ALIASES.get(kind, kind): _client_type(x) == k)
        elif option == b"user":
            users = security.users_of(c.server)
            user = users.by_name.get(value)
            if user is None:
                raise RedisError(errors.CLIENT_KILL_NO_USER.format(value.decode(errors="replace")))
            filters.append(lambda x, u=user: users.user_of(x) is u)
        elif option == b"skipme":
            if value.lower() not in (b"yes", b"no"):
                raise RedisError(errors.SYNTAX)
            skipme = value.lower() == b"yes"
        else:
            raise RedisError(errors.SYNTAX)
    killed = 0
    for other in clients:
        if skipme and other is c:
            continue
        if all(f(other) for f in filters):
            if other is c:
                c.close_after_reply = True
            else:
                other.kill()
            killed += 1
    return killed


_TYPE_ALIASES = {b"slave": b"replica"}


def _client_type(x) -> bytes:
    """getClientType: the master link, a replica (not a monitor), a subscriber, or normal."""
    if x.flags == "M":
        return b"master"
    if x.flags == "S":
        return b"replica"
    return b"pubsub" if x.channels or x.patterns else b"normal"


def _last_option(argv: list, choices: tuple, error: str) -> bytes | None:
    """CLIENT UNBLOCK's reason or CLIENT PAUSE's mode, the optional fourth argument: Redis
    checks it before the third."""
    if len(argv) > 4:
        raise errors.unknown_subcommand_or_arity(argv[1], "client")
    if len(argv) < 4:
        return None
    option = argv[3].lower()
    if option not in choices:
        raise RedisError(error)
    return option


@command("unblock", arity=-3, flags="admin noscript loading stale", parent="client", group=G)
def client_unblock(c, argv):
    with_error = _last_option(argv, (b"timeout", b"error"), errors.UNBLOCK_REASON) == b"error"
    target_id = parse_int(argv[2])
    target = c.server.clients.get(target_id)
    if target is None or pause.is_held(target) or shutdown_wait.is_waiting(target):
        # A command held by CLIENT PAUSE, or a SHUTDOWN waiting for the replicas, is not
        # blocked on anything (Redis 7.0 crashes here; later versions answer 0, as minired).
        return 0
    if not c.server.blocking.unblock(target, with_error):
        return 0
    if with_error:
        # The error reply it made counts as this command's failure too: Redis's call() sees
        # the error count grow while CLIENT UNBLOCK runs.
        stats_of(c.server, lookup(argv)).failed_calls += 1
    return 1


def _on_off(c, argv):
    if argv[2].lower() not in (b"on", b"off"):
        raise RedisError(errors.SYNTAX)
    return OK


command("no-touch", arity=3, flags="admin noscript loading stale", parent="client",
        group=G)(_on_off)


@command("no-evict", arity=3, flags="admin noscript loading stale", parent="client", group=G)
def client_no_evict(c, argv):
    _on_off(c, argv)
    eviction = client_eviction.of(c.server)
    on = argv[2].lower() == b"on"
    eviction.set_no_evict(c, on)
    if not on:
        eviction.check()  # (Redis evicts before it next sleeps, or runs a command)
    return OK


@command("reply", arity=3, flags="noscript loading stale", parent="client", group=G)
def client_reply_(c, argv):
    mode = argv[2].lower()
    if mode == b"on":
        return client_reply.turn_on(c)
    if mode == b"off":
        return client_reply.turn_off(c)
    if mode == b"skip":
        return client_reply.skip_next(c)
    raise RedisError(errors.SYNTAX)


@command("pause", arity=-3, flags="admin noscript loading stale", parent="client", group=G)
def client_pause(c, argv):
    everything = _last_option(argv, (b"write", b"all"), errors.CLIENT_PAUSE_MODE) != b"write"
    timeout_ms = parse_int(argv[2], errors.TIMEOUT_NOT_INTEGER)
    if timeout_ms < 0:
        raise RedisError(errors.TIMEOUT_NEGATIVE)
    pause.pause(c.server, everything, timeout_ms)
    return OK


@command("unpause", arity=2, flags="admin noscript loading stale", parent="client", group=G)
def client_unpause(c, argv):
    pause.unpause(c.server)
    return OK


@command("help", arity=2, flags="loading stale", parent="client", group=G)
def client_help(c, argv):
    return [Status(line.encode()) for line in (
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ID", "INFO", "LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]",
        "KILL <ip:port> | KILL <option> <value> [<option> <value> [...]]",
        "SETNAME <name>", "GETNAME", "SETINFO <LIB-NAME|LIB-VER> <value>",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]", "NO-EVICT (ON|OFF)", "NO-TOUCH (ON|OFF)",
        "PAUSE <timeout> [WRITE|ALL]", "UNPAUSE", "REPLY (ON|OFF|SKIP)", "HELP",
    )]
