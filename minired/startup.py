"""Wiring done before a server listens: the command table is filled from every command module,
and the features attach their per-server state."""
from __future__ import annotations

import importlib

from minired.data.keyspace import Clock
from minired.engine import dispatch
from minired.engine.config import Config
from minired.engine.server import Server
from minired.engine.table import COMMANDS
from minired.features import persistence as persistence_feature

# Every module that declares commands, each imported once and only here (no module registers
# another by importing it). The order is the command table's, which COMMAND and COMMAND DOCS list.
COMMAND_MODULES = tuple(f"minired.{name}" for name in (
    "commands.connection", "commands.keys_dump", "commands.keys_object", "commands.keys",
    "commands.strings_bits", "commands.strings", "commands.lists", "commands.hashes",
    "commands.sets", "commands.zsets", "commands.zsets_algebra", "commands.streams",
    "commands.stream_groups", "commands.pubsub", "commands.transactions",
    "scripting.commands",
    "commands.server", "commands.introspection", "commands.info", "commands.diagnostics",
    "commands.clock", "commands.sort", "commands.bitfield", "commands.geo",
    "commands.hyperloglog", "commands.client_tracking", "commands.acl", "commands.faults",
    "commands.replication", "commands.modules", "commands.cluster",
))


def load_commands() -> dict:
    """Fill the command table: import every command module (registering its commands once)."""
    for name in COMMAND_MODULES:
        importlib.import_module(name)
    return COMMANDS


load_commands()

# Modules exposing `attach(server)`, in order. Each owns one subsystem's per-server state
# (pub/sub registry, persistence, ...). The script engine is not among them: it attaches on
# first use (scripting.feature.engine_of), so lupa and the Lua runtime load with the first script
# instead of delaying every start-up; the commands that reach it are registered regardless.
SUBSYSTEMS = ("minired.features.notifications", "minired.features.pubsub",
              "minired.features.persistence", "minired.features.security",
              "minired.features.output_limits", "minired.features.client_eviction",
              "minired.features.metrics", "minired.features.eviction")


def prepare_server(server: Server, load: bool = True) -> Server:
    """Attach the features and, with `load`, load the data on disk (the command line leaves it
    to load_while_serving, once the server listens, as Redis's start-up order has it)."""
    for name in SUBSYSTEMS:
        importlib.import_module(name).attach(server)
    # Expired and evicted values, for INFO lazyfreed_objects (the command modules are
    # imported by load_commands only, in the command table's order).
    importlib.import_module("minired.commands.keys").watch_lazy_freeing(server)
    if server.config.get("fault-injection") == "yes":  # (off: the module is never imported)
        importlib.import_module("minired.features.faults").attach(server)
    if server.config.get("timeout") not in ("0", ""):  # (closing idle clients: the same)
        importlib.import_module("minired.features.idle_clients").attach(server)
    if server.config.get("replicaof"):
        # replicaof in the config file or on the command line: a read-only replica from the
        # start, its data loaded as usual, connecting to its master once the data is loaded
        # (the replication ID and offset of dump.rdb are the history it asks to continue).
        server.config.note_replicating(True)
    if load:
        persistence_feature.load_at_start(server)
        start_loaded_functions(server)
        server.hooks.start.append(lambda: start_replicating(server))
    return server


async def load_while_serving(server: Server) -> None:
    """Redis's order: bind, then load while answering -LOADING, then ready (cli.py)."""
    await persistence_feature.load_while_serving(server)
    start_loaded_functions(server)
    start_replicating(server)


def start_replicating(server: Server) -> None:
    """replicaof configured: the link to the master starts, once the data is loaded."""
    master = server.config.get("replicaof")
    if master:
        from minired.features import replica_link

        host, port = master.rsplit(" ", 1)
        replica_link.replicate(server, host, int(port), at_start=True)


def start_loaded_functions(server: Server) -> None:
    persistence = server.features.persistence
    if persistence is not None and persistence.pending_functions:
        # The data loaded holds function libraries: they need the script engine now.
        from minired.scripting.feature import engine_of

        engine_of(server)


def node_configs(config: Config, masters: int) -> list[Config]:
    """One config per cluster node: `config` with consecutive ports from its own (7000, 7001,
    ... as in Redis's cluster tutorial), or free ports for port 0."""
    base = int(config.get("port"))
    configs = []
    for i in range(masters):
        node = Config()
        node.values.update(config.values)
        node.set("port", base + i if base else 0)  # (set derives the typed fields again)
        node.set("cluster-enabled", "yes")
        # Each node persists to files of its own in the shared --dir (dump-0.rdb, nodes-0.conf,
        # ...), as cluster nodes sharing a directory must: by index, so a restart finds them.
        for name in ("dbfilename", "appenddirname", "appendfilename", "cluster-config-file"):
            stem, dot, extension = config.get(name).rpartition(".")
            node.set(name, f"{stem}-{i}.{extension}" if dot else f"{extension}-{i}")
        configs.append(node)
    return configs


async def start_cluster(configs: list[Config], host: str, control: bool = False,
                        replicas: int = 0, spares: int = 0) -> list[Server]:
    """Cluster mode: one master per config, each on its own port (its config's, 0 for a free
    one), all on the running loop and one clock, joined into one cluster (minired/features/cluster.py).
    `control` allows MINIRED CLUSTER MIGRATE/FAILOVER/RECOVER; with `replicas` per master, the
    configs after the masters' are their replicas', the last `spares` nodes of no cluster yet."""
    from minired.features.cluster import form

    clock = Clock()
    servers = [prepare_server(Server(config, clock)) for config in configs]
    try:
        for server, config in zip(servers, configs):
            await server.start(host, int(config.get("port")))
        form(servers, control, replicas, spares)  # (may refuse a layout on disk that does not fit)
    except BaseException:
        for server in servers:
            server.request_shutdown()
        raise
    for server in servers:
        engine = server.features.scripting  # (made early if a loaded file had functions)
        if engine is not None:
            engine.cluster = server.cluster
    dispatch.use_extras()  # from now on dispatch asks each node about every command
    return servers


def apply_renames(renames: list[tuple[str, str]]) -> None:
    """rename-command lines, in order: the command answers to its new name only ("" removes
    it). The table is the process's: only a server process started from a config does this."""
    for old, new in renames:
        spec = COMMANDS.pop(old.encode())
        if new:
            COMMANDS[new.encode()] = spec


class AclStartupError(Exception):
    """ACL rules in the configuration that Redis refuses at start-up: it logs each of the
    exception's arguments as a warning line and exits 1."""


_ACL_CRITICAL = "Critical error while loading ACLs. Exiting."


def load_users_at_start(server: Server, user_lines: list[list[str]]) -> None:
    """ACLLoadUsersAtStartup: the config's `user` lines, or the aclfile's users (not both)."""
    from minired.features import acl
    from minired.features.security import load_acl_file, users_of

    aclfile = server.config.get("aclfile") or ""
    if user_lines and aclfile:
        raise AclStartupError(
            "Configuring Redis with users defined in redis.conf and at the same setting an ACL "
            "file path is invalid. This setup is very likely to lead to configuration errors and "
            "security holes, please define either an ACL file or declare users directly in your "
            "redis.conf, but not both.")
    users = users_of(server)
    pubsub_all = users.pubsub_default_all()
    for words in user_lines:
        name = words[0].encode("utf-8", "surrogateescape")
        if name == b"default":
            user = users.default
            user.apply(b"reset", pubsub_all)
        elif name in users.by_name:
            raise AclStartupError(f"Error loading ACLs, user '{words[0]}' specified multiple "
                                  "times", _ACL_CRITICAL)
        else:
            user = users.by_name[name] = acl.User(name, pubsub_all)
        rules, _ = acl.merge_selector_arguments(
            [word.encode("utf-8", "surrogateescape") for word in words[1:]])
        for rule in rules:
            try:
                user.apply(rule, pubsub_all)
            except acl.RuleError as exc:
                raise AclStartupError(
                    f"Error loading ACL rule '{rule.decode(errors='replace')}' for the user "
                    f"named '{words[0]}': {exc}", _ACL_CRITICAL) from None
        users.refresh(user)
    if aclfile:
        problems = load_acl_file(users, None, aclfile)
        if problems:
            raise AclStartupError(f"Aborting Redis startup because of ACL errors: {problems}")
