"""The command line: flags named like redis-server's, then serving until stopped. Entered
through __main__.py (`minired`, `python -m minired`), which owns the start-up GC setting."""
from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys

from minired import REDIS_VERSION, __version__
from minired.engine.config import DEFAULTS, Config, ConfigError

log = logging.getLogger("minired")


def _unmeasured_formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=80)


def build_parser() -> argparse.ArgumentParser:
    # argparse makes a help formatter for every add_argument (to check the metavar), and the
    # default one imports shutil to measure the terminal (~2 ms of start-up). While building,
    # a fixed-width one does that check; help and usage errors get the measuring default.
    parser = argparse.ArgumentParser(
        prog="minired", formatter_class=_unmeasured_formatter,
        description="In-memory Redis-protocol server. Any redis-server option can be given as "
                    "--name value; the ones below are the common ones.")
    parser.add_argument("--port", type=int, default=6379, help="TCP port (0 picks a free one)")
    parser.add_argument("--bind", default="127.0.0.1", help="addresses to listen on (space-separated)")
    parser.add_argument("--unixsocket", default="", help="also listen on this Unix socket path")
    parser.add_argument("--databases", type=int, default=16)
    parser.add_argument("--requirepass", default="")
    parser.add_argument("--maxclients", type=int, default=10000)
    parser.add_argument("--protected-mode", default="yes", choices=["yes", "no"])
    parser.add_argument("--time-control", nargs="?", const="yes", default="no", choices=["yes", "no"],
                        help="enable MINIRED ADVANCE <ms> to move the server clock (tests only)")
    parser.add_argument("--fault-injection", nargs="?", const="yes", default="no",
                        choices=["yes", "no"],
                        help="enable MINIRED FAULT to make chosen commands fail (tests only)")
    parser.add_argument("--cluster", type=int, default=0, metavar="N",
                        help="serve a Redis Cluster of N masters, on --port and the next N-1 "
                             "ports (free ones with --port 0)")
    parser.add_argument("--cluster-control", action="store_true",
                        help="enable MINIRED CLUSTER MIGRATE/FAILOVER/RECOVER (tests only)")
    parser.add_argument("--cluster-replicas", type=int, default=0, metavar="R",
                        help="give each --cluster master R replicas, on the ports after the "
                             "masters'")
    parser.add_argument("--cluster-spares", type=int, default=0, metavar="S",
                        help="S more cluster nodes, in no cluster yet (for redis-cli --cluster "
                             "add-node), on the ports after the others")
    parser.add_argument("--loglevel", default="notice",
                        choices=["debug", "verbose", "notice", "warning"])
    parser.add_argument("--no-uvloop", action="store_true", help="use asyncio's default event loop")
    parser.add_argument("--version", "-v", action="version",
                        version=f"minired {__version__} (Redis {REDIS_VERSION} compatible)")
    parser.formatter_class = argparse.HelpFormatter
    return parser


def parse_config(argv: list[str]) -> tuple[Config, argparse.Namespace]:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.cluster < 0:
        parser.error("--cluster takes the number of masters (1 or more)")
    if args.cluster_replicas < 0 or (args.cluster_replicas and not args.cluster):
        parser.error("--cluster-replicas takes the number of replicas per --cluster master")
    if args.cluster_spares < 0 or (args.cluster_spares and not args.cluster):
        parser.error("--cluster-spares takes a number of nodes to add to --cluster")
    overrides: dict[str, object] = {
        "port": args.port, "bind": args.bind, "unixsocket": args.unixsocket,
        "databases": args.databases, "requirepass": args.requirepass,
        "maxclients": args.maxclients, "protected-mode": args.protected_mode,
        "time-control": args.time_control, "fault-injection": args.fault_injection,
        "loglevel": args.loglevel,
    }
    # Any other redis-server style option: --name value (a value may be empty, e.g. --save "").
    i = 0
    while i < len(rest):
        token = rest[i]
        if not token.startswith("--"):
            parser.error(f"unexpected argument {token!r}")
        name = token[2:]
        if "=" in name:
            name, value = name.split("=", 1)
            i += 1
        elif i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            value = rest[i + 1]
            i += 2
        else:
            value = "yes"
            i += 1
        canonical = Config.canonical(name)
        if canonical not in DEFAULTS:
            parser.error(f"unknown option --{name}")
        overrides[canonical] = value
    try:
        return Config(**overrides), args
    except ConfigError as exc:
        parser.error(f"bad configuration {exc}")


_LEVELS = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.INFO,
           "warning": logging.WARNING}


def install_event_loop_policy(use_uvloop: bool = True) -> str:
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            return "asyncio"
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        return "uvloop"
    return "asyncio"


async def serve(config: Config, ready_line: bool = True, cluster: int = 0,
                cluster_control: bool = False, cluster_replicas: int = 0,
                cluster_spares: int = 0) -> None:
    from minired.engine.server import Server, banner
    from minired.startup import prepare_server

    host = config.get("bind") or "127.0.0.1"
    if cluster:
        await serve_cluster(config, host, cluster, cluster_control, ready_line, cluster_replicas,
                            cluster_spares)
        return
    server = Server(config)
    prepare_server(server)
    await server.start(host, int(config.get("port")), config.get("unixsocket") or None)
    _stop_on_signals(server.request_shutdown)
    # Start-up is over (__main__ turned the cyclic collector off while it ran). What it built
    # lives as long as the process, so it is frozen out of the collector's sight first: else
    # the first pass would re-scan all of it, right when the first clients arrive. The price
    # is the little garbage start-up leaves (~300 objects, ~80 KB: the argparse parser).
    gc.freeze()
    gc.enable()
    if ready_line:
        # The ready line is the contract for `--port 0` users: it names the chosen port.
        print(banner(server), flush=True)
    log.info("%s", banner(server))
    await server.serve_until_stopped()


def _stop_on_signals(stop) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop)
        except (NotImplementedError, RuntimeError):
            pass


async def serve_cluster(config: Config, host: str, masters: int, control: bool,
                        ready_line: bool, replicas: int = 0, spares: int = 0) -> None:
    """`--cluster N`: N masters in this process (minired/features/cluster.py). The process serves them
    all until a signal or any node's SHUTDOWN stops every one."""
    from minired.engine.server import banner
    from minired.startup import node_configs, start_cluster

    servers = await start_cluster(node_configs(config, masters * (1 + replicas) + spares), host,
                                  control, replicas, spares)

    def stop_all() -> None:
        for server in servers:
            server.request_shutdown()

    _stop_on_signals(stop_all)
    gc.freeze()
    gc.enable()
    # The first address is where banner() puts a single server's: readers of that line find
    # the startup node where they find a server's port.
    line = banner(servers[0]).replace(
        f" ready on {servers[0].host}:{servers[0].port} ",
        f" ready on {' '.join(f'{s.host}:{s.port}' for s in servers)} "
        f"(cluster of {masters} masters" + (f", {masters * replicas} replicas" if replicas else "")
        + (f", {spares} spare nodes" if spares else "") + ") ")
    if ready_line:
        print(line, flush=True)
    log.info("%s", line)
    waits = [asyncio.ensure_future(server.serve_until_stopped()) for server in servers]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    stop_all()
    await asyncio.gather(*waits, return_exceptions=True)


def run(argv: list[str]) -> int:
    config, args = parse_config(argv)
    logging.basicConfig(
        level=_LEVELS[args.loglevel], stream=sys.stderr,
        format=f"{os.getpid()}:M %(asctime)s.%(msecs)03d %(levelname)s %(message)s",
        datefmt="%d %b %Y %H:%M:%S")
    loop_name = install_event_loop_policy(not args.no_uvloop)
    log.info("minired %s starting (event loop: %s, pid %d)", __version__, loop_name, os.getpid())
    from minired.features.persistence import LoadError

    try:
        asyncio.run(serve(config, cluster=args.cluster, cluster_control=args.cluster_control,
                          cluster_replicas=args.cluster_replicas,
                          cluster_spares=args.cluster_spares))
    except LoadError as exc:
        # Data on disk that cannot be loaded in full: stop, as Redis does, and leave it alone.
        log.error("%s", exc)
        return 1
    except OSError as exc:
        log.error("could not start: %s", exc)
        return 1
    except KeyboardInterrupt:
        pass
    log.info("minired stopped")
    return 0
