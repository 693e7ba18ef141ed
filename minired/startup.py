"""Wiring done once per server before it listens: subsystems attach their per-server state."""
from __future__ import annotations

import importlib

from . import dispatch
from .config import Config
from .server import Server

# Modules exposing `attach(server)`, in order. Each owns one subsystem's per-server state
# (pub/sub registry, persistence, ...). The script engine is not among them: it attaches on
# first use (scripting.engine_of), so lupa and the Lua runtime load with the first script
# instead of delaying every start-up; the commands that reach it are registered regardless.
SUBSYSTEMS = ("minired.notifications", "minired.pubsub", "minired.persistence",
              "minired.security", "minired.metrics")


def prepare_server(server: Server) -> Server:
    for name in SUBSYSTEMS:
        importlib.import_module(name).attach(server)
    if server.config.get("fault-injection") == "yes":  # (off: the module is never imported)
        importlib.import_module("minired.faults").attach(server)
    persistence = server.persistence
    if persistence is not None and persistence.pending_functions:
        # The data loaded holds function libraries: they need the script engine now.
        from .scripting import engine_of

        engine_of(server)
    return server


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
        # Each node persists to files of its own in the shared --dir (dump-0.rdb, ...), as
        # cluster nodes sharing a directory must: by index, so a restart finds them again.
        for name in ("dbfilename", "appenddirname", "appendfilename"):
            stem, dot, extension = config.get(name).rpartition(".")
            node.set(name, f"{stem}-{i}.{extension}" if dot else f"{extension}-{i}")
        configs.append(node)
    return configs


async def start_cluster(configs: list[Config], host: str, control: bool = False) -> list[Server]:
    """Cluster mode: one master per config, each on its own port (its config's, 0 for a free
    one), all on the running loop and one clock, joined into one cluster (minired/cluster.py).
    `control` allows MINIRED CLUSTER MIGRATE/FAILOVER/RECOVER."""
    from .cluster import form
    from .keyspace import Clock

    clock = Clock()
    servers = [prepare_server(Server(config, clock)) for config in configs]
    try:
        for server, config in zip(servers, configs):
            await server.start(host, int(config.get("port")))
    except BaseException:
        for server in servers:
            server.request_shutdown()
        raise
    form(servers, control)
    for server in servers:
        engine = server.scripting  # (made early if a loaded file had functions)
        if engine is not None:
            engine.cluster = server.cluster
    dispatch.use_extras()  # from now on dispatch asks each node about every command
    return servers
