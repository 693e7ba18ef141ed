"""The command line, taken as redis-server takes it: `minired [config-file | -] [--name value ...]`
(config_file.py reads both), `-v`/`--version`, `-h`/`--help`; then start-up in Redis's order and
with Redis's log (server_log.py): configuration, daemonize, bind, pid file, logo, "Server
initialized", loading, "Ready to accept connections"; and Redis's shutdown. Entered through
__main__.py (`minired`, `python -m minired`), which owns the start-up GC setting.

Port 0: Redis opens no TCP listener for it, which with `unixsocket` set is a server reached
through the socket only, and without one a server that exits ("Configured to not listen
anywhere"). minired keeps the first meaning and gives the second a use: with no unix socket,
port 0 picks a free port, and only then is the line `minired ... ready on HOST:PORT pid=N`
printed on stdout, naming it (SubprocessServer and other `--port 0` users read it)."""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import sys

from minired import REDIS_VERSION, __version__

log = logging.getLogger("minired")

# minired's own flags, not redis-server options: taken out of argv before Redis's parsing.
_OWN_SWITCHES = ("--no-uvloop", "--cluster-control")
_OWN_YES_NO = ("--time-control", "--fault-injection")  # settings that may be given bare

USAGE = """\
Usage: ./redis-server [/path/to/redis.conf] [options] [-]
       ./redis-server - (read config from stdin)
       ./redis-server -v or --version
       ./redis-server -h or --help
       ./redis-server --test-memory <megabytes>
       ./redis-server --check-system

Examples:
       ./redis-server (run the server with default conf)
       echo 'maxmemory 128mb' | ./redis-server -
       ./redis-server /etc/redis/6379.conf
       ./redis-server --port 7777
       ./redis-server --port 7777 --replicaof 127.0.0.1 8888
       ./redis-server /etc/myredis.conf --loglevel verbose -
       ./redis-server /etc/myredis.conf --loglevel verbose

Sentinel mode:
       ./redis-server /etc/sentinel.conf --sentinel

minired's own options: --cluster N (a cluster of N masters on consecutive ports),
--cluster-replicas R (R replicas per master), --cluster-spares S (S nodes in no cluster yet),
--cluster-control, --time-control, --fault-injection (tests only), --no-uvloop.
"""


def version_line() -> str:
    """redis-server -v's line (what tools parse: `v=` names the Redis release), minired's after."""
    return (f"Redis server v={REDIS_VERSION} sha=00000000:0 malloc=libc bits=64 "
            f"build=0000000000000000 minired={__version__}")


class StartupExit(Exception):
    """Start-up stops with this exit code (what to say was already said)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def split_own_flags(argv: list[str]) -> tuple[dict, list[str]]:
    """minired's own flags out of argv; bare --time-control / --fault-injection mean yes."""
    own = {"cluster": 0, "cluster_control": False, "no_uvloop": False, "cluster_replicas": 0,
           "cluster_spares": 0}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        following = argv[i + 1] if i + 1 < len(argv) else None
        if arg in _OWN_SWITCHES:
            own[arg[2:].replace("-", "_")] = True
        elif arg in ("--cluster", "--cluster-replicas", "--cluster-spares") and following is not None:
            own[arg[2:].replace("-", "_")] = int(following) if following.isdigit() else -1
            i += 1
        elif arg in _OWN_YES_NO and (following is None or following.startswith("--")):
            rest += [arg, "yes"]
        else:
            rest.append(arg)
        i += 1
    return own, rest


def install_event_loop_policy(use_uvloop: bool = True) -> str:
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            return "asyncio"
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        return "uvloop"
    return "asyncio"


def daemonize() -> None:
    """Redis's daemonize(): the parent exits, the child leaves the terminal's session and its
    standard streams go to /dev/null."""
    if os.fork():
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


class PidFile:
    """createPidFile / the removal at shutdown (only if this process wrote it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.written = False

    def write(self) -> None:
        try:
            with open(self.path, "w") as handle:
                handle.write(f"{os.getpid()}\n")
            self.written = True
        except OSError as exc:
            log.warning("Failed to write PID file: %s", exc.strerror)

    def remove(self) -> None:
        if self.written:
            log.info("Removing the pid file.")
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _backlog_warning(backlog: int) -> None:
    """checkTcpBacklogSettings: the kernel silently caps a listen backlog at somaxconn, so
    Redis says when tcp-backlog asks for more."""
    try:
        with open("/proc/sys/net/core/somaxconn") as file:
            somaxconn = int(file.readline().strip() or 0)
    except (OSError, ValueError):
        return
    if 0 < somaxconn < backlog:
        log.warning("WARNING: The TCP backlog setting of %d cannot be enforced because "
                    "/proc/sys/net/core/somaxconn is set to the lower value of %d.",
                    backlog, somaxconn)


def bind_tcp(bind: str, port: int, backlog: int) -> list[socket.socket]:
    """Listening sockets on every address of `bind` (Redis's listenToPort), queueing `backlog`
    connections (tcp-backlog), with Redis's messages when one fails; StartupExit(1) then."""
    from minired.engine.server import OPTIONAL_BIND_FAILURES, listening_socket

    sockets = []
    for address in bind.split():
        optional = address.startswith("-")
        host = {"*": "0.0.0.0", "::*": "::"}.get(address.lstrip("-"), address.lstrip("-"))
        try:
            sockets.append(listening_socket(host, port, backlog))
            if port == 0:  # the first address picked a free port: the others take the same one
                port = sockets[0].getsockname()[1]
        except OSError as exc:
            if optional and exc.errno in OPTIONAL_BIND_FAILURES:  # skipped
                continue
            shown = "*" if host in ("0.0.0.0", "::") else host
            log.warning("Warning: Could not create server TCP listening socket %s:%d: bind: %s",
                        shown, port, os.strerror(exc.errno) if exc.errno else exc)
            log.warning("Failed listening on port %d (TCP), aborting.", port)
            for sock in sockets:
                sock.close()
            raise StartupExit(1) from None
    return sockets


async def serve(loaded, own: dict, handler) -> None:
    from minired.engine.server import Server, banner
    from minired.features import open_files
    from minired.features.oom_score import apply_oom_score
    from minired.server_log import show_art
    from minired.startup import (
        AclStartupError,
        load_users_at_start,
        load_while_serving,
        prepare_server,
    )

    config = loaded.config
    open_files.adjust_at_start(config)
    if own["cluster"]:
        await serve_cluster(config, config.get("bind").split()[0], own["cluster"],
                            own["cluster_control"], True, own["cluster_replicas"],
                            own["cluster_spares"])
        return
    unixsocket = config.get("unixsocket") or ""
    port = int(config.get("port"))
    # (port 0 with a unix socket: no TCP listener, as in Redis; without one: a free port)
    backlog = config.number("tcp-backlog")
    sockets = (bind_tcp(config.get("bind") or "127.0.0.1", port, backlog)
               if port or not unixsocket else [])
    pidfile = PidFile(config.get("pidfile") or "/var/run/redis.pid")
    if config.get("pidfile") or config.get("daemonize") == "yes":
        pidfile.write()
    bound_port = sockets[0].getsockname()[1] if sockets else port
    show_art(handler, "standalone", bound_port)
    _backlog_warning(backlog)
    log.warning("Server initialized")
    _memory_warnings()
    server = Server(config)
    prepare_server(server, load=False)
    apply_oom_score(config)  # (Redis's setOOMScoreAdj(-1) in main, once the config is read)
    if loaded.config_file:
        server.hooks.config_file = loaded.config_file
        server.hooks.rewrite_config = _rewriter(server, loaded.config_file)
    try:
        load_users_at_start(server, loaded.users)
    except AclStartupError as exc:
        for line in exc.args:
            log.warning("%s", line)
        raise StartupExit(1) from None
    await server.start(sockets[0].getsockname()[0] if sockets else "", -1,
                       unixsocket or None, sockets=sockets)
    _stop_on_signals(server)
    # Listening: the data loads now, commands answered -LOADING meanwhile (Redis's order).
    await load_while_serving(server)
    # Start-up is over (__main__ turned the cyclic collector off while it ran). What it built
    # lives as long as the process, so it is frozen out of the collector's sight first: else
    # the first pass would re-scan all of it, right when the first clients arrive.
    gc.freeze()
    gc.enable()
    if sockets:
        log.info("Ready to accept connections")
    if unixsocket:
        log.info("The server is now ready to accept connections at %s", unixsocket)
    if sockets and port == 0:
        # The ready line is the contract for `--port 0` users: it names the chosen port.
        print(banner(server), flush=True)
    try:
        await server.serve_until_stopped()
    finally:
        pidfile.remove()
        if unixsocket:
            log.info("Removing the unix socket file.")
            try:
                os.unlink(unixsocket)
            except OSError as exc:
                log.warning("Error removing the unix socket file: %s", exc.strerror)
        log.warning("Redis is now ready to exit, bye bye...")


def _memory_warnings() -> None:
    """linuxMemoryWarnings: Redis warns at start when memory overcommit is off (its fork for
    a background save may fail; minired forks for BGSAVE as well)."""
    try:
        with open("/proc/sys/vm/overcommit_memory") as handle:
            setting = handle.read().strip()
    except OSError:
        return
    if setting != "1":
        log.warning(
            "WARNING Memory overcommit must be enabled! Without it, a background save or "
            "replication may fail under low memory condition. Being disabled, it can can also "
            "cause failures without low memory condition, see "
            "https://github.com/jemalloc/jemalloc/issues/1328. To fix this issue add "
            "'vm.overcommit_memory = 1' to /etc/sysctl.conf and then reboot or run the command "
            "'sysctl vm.overcommit_memory=1' for this to take effect.")


def _rewriter(server, path: str):
    """CONFIG REWRITE's writer for the file the server was started from."""
    from minired import config_file

    def rewrite(force_all: bool = False) -> None:
        users = server.access
        described = None if users is None else [
            f"user {name.decode(errors='surrogateescape')} "
            f"{user.describe().decode(errors='surrogateescape')}"
            for name, user in sorted(users.by_name.items())]
        config_file.rewrite(path, server.config, described, force_all)
    return rewrite


def _stop_on_signals(server) -> None:
    """SIGTERM / SIGINT: Redis's signal-handler line, then its shutdown."""
    from minired.engine import dispatch

    loop = asyncio.get_running_loop()

    def stop(name: str) -> None:
        from minired.server_log import signal_line

        if server.shutdown_asap and name == "SIGINT":
            # sigShutdownHandler: a SIGINT while a signal's shutdown is pending or waiting.
            persistence = server.features.saver
            _insist(os.path.dirname(os.path.abspath(persistence.snapshot_path))
                    if persistence is not None else os.getcwd())
        handler = _redis_handler()
        if handler is not None:
            handler.write(signal_line(f"Received {name} scheduling shutdown..."))
        server.shutdown_asap = True
        shut_down_from_cron(name)

    def shut_down_from_cron(name: str) -> None:
        # As Redis's serverCron acts on shutdown_asap: not while DEBUG PAUSE-CRON holds it,
        # and not at all once SHUTDOWN ABORT has cleared it.
        if not server.shutdown_asap:
            return
        if dispatch.is_loading(server):
            # Redis shuts down at once while loading, saving nothing (whileBlockedCron's
            # prepareForShutdown(SHUTDOWN_NOSAVE)): the data on disk is what it was loading.
            log.warning("User requested shutdown...")
            log.warning("Redis is now ready to exit, bye bye...")
            os._exit(0)
        if server.debug.pause_cron:
            loop.call_later(0.1, shut_down_from_cron, name)
            return
        from minired.features import shutdown_wait

        if shutdown_wait.current(server) is not None:
            return  # a shutdown under way already (serverCron's isShutdownInitiated)
        # (shutdown_asap stays set while the shutdown waits for the replicas, as in Redis:
        # SHUTDOWN ABORT or a failure clears it)
        log.warning("User requested shutdown...")
        flags = server.config.get(f"shutdown-on-{name.lower()}").split()
        shutdown_wait.begin(server, lambda: _finish_on_signal(server, name),
                            now="now" in flags, force="force" in flags)

    for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
        try:
            loop.add_signal_handler(sig, stop, name)
        except (NotImplementedError, RuntimeError):
            pass
    from minired.server_log import CRASH_SIGNALS

    for name in CRASH_SIGNALS:
        try:
            signal.signal(getattr(signal, name), _crash)
        except (OSError, RuntimeError, ValueError):
            pass


def _finish_on_signal(server, name: str) -> bool:
    """finishShutdown for a signal: the final save, then the stop (False: the server goes
    on, as finishShutdown's error path)."""
    if not _save_before_exit(server, name):
        return False
    server.request_shutdown()
    return True


def _save_before_exit(server, name: str) -> bool:
    """prepareForShutdown's save for a signal, as shutdown-on-sigint/sigterm ask (by default:
    when save points are set); False when it failed and `force` was not among them."""
    from minired.protocol.errors import RedisError

    flags = server.config.get(f"shutdown-on-{name.lower()}").split()
    persistence = server.features.saver
    wants_save = "save" in flags or ("nosave" not in flags and bool(server.config.get("save")))
    if wants_save and persistence is not None:
        log.info("Saving the final RDB snapshot before exiting.")
        # The save runs on the loop, so the loop's own signal handling waits for it: a second
        # SIGINT meanwhile is Redis's "You insist", handled as it arrives.
        directory = os.path.dirname(os.path.abspath(persistence.snapshot_path))
        previous = signal.signal(signal.SIGINT, lambda signum, frame: _insist(directory))
        try:
            persistence.save(shutting_down=True)
        except RedisError:
            if "force" not in flags:
                log.warning("Error trying to save the DB, can't exit.")
                return False
        finally:
            signal.signal(signal.SIGINT, previous)
    server.features.shutdown_by_command = True  # saving is settled: persistence must not redo it
    return True


def _insist(directory: str) -> None:
    """sigShutdownHandler's SIGINT during a shutdown already under way: remove the snapshot's
    temporary file and exit at once, with an error (not a clean shutdown)."""
    from minired.server_log import signal_line

    handler = _redis_handler()
    if handler is not None:
        handler.write(signal_line("You insist... exiting now."))
    try:
        os.unlink(os.path.join(directory, f"temp-{os.getpid()}.rdb"))  # (rdbRemoveTempFile)
    except OSError:
        pass
    os._exit(1)


def _crash(signum: int, frame) -> None:
    """Redis's crash report, then death by the same signal (its default action)."""
    import traceback

    from minired.server_log import crash_report

    handler = _redis_handler()
    if handler is not None:
        crash_report(handler, signum, "".join(traceback.format_stack(frame)))
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _redis_handler():
    from minired.server_log import RedisLogHandler

    for handler in log.handlers:
        if isinstance(handler, RedisLogHandler):
            return handler
    return None


async def serve_cluster(config, host: str, masters: int, control: bool,
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

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop_all)
        except (NotImplementedError, RuntimeError):
            pass
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
    log.info("Ready to accept connections")
    waits = [asyncio.ensure_future(server.serve_until_stopped()) for server in servers]
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    stop_all()
    await asyncio.gather(*waits, return_exceptions=True)


def load_configuration(argv: list[str], handler):
    """The configuration argv describes, or StartupExit as redis-server would stop."""
    from minired import config_file
    from minired.engine.table import COMMANDS

    try:
        loaded = config_file.load(argv, (name.decode() for name in COMMANDS), chdir=True)
    except config_file.FatalConfigError as exc:
        sys.stderr.write(exc.report())
        sys.stderr.flush()
        raise StartupExit(1) from None
    except config_file.UnreadableConfigFile as exc:
        log.warning("%s", exc)
        raise StartupExit(1) from None
    handler.config = loaded.config
    return loaded


def run(argv: list[str]) -> int:
    if argv and argv[0] in ("-v", "--version"):
        print(version_line())
        return 0
    if argv and argv[0] in ("-h", "--help"):
        sys.stderr.write(USAGE)
        return 1
    from minired import server_log
    from minired.engine.config import Config

    handler = server_log.install(Config())
    try:
        return _start(argv, handler)
    finally:
        server_log.uninstall(handler)


def module_load_failure(path: str) -> str:
    """Why a `loadmodule` path is refused, worded as Redis's moduleLoad() logs it.

    Redis dlopen()s the file first, so a missing or broken library is reported with the
    dynamic loader's own message; only a real module reaches minired's missing module API.
    """
    import ctypes
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        pass  # Redis's check is best effort: dlopen() reports the missing file
    else:
        if not mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
            return f"Module {path} failed to load: It does not have execute permissions."
    try:
        library = ctypes.CDLL(path)
    except OSError as exc:
        return f"Module {path} failed to load: {exc}"
    if not hasattr(library, "RedisModule_OnLoad"):
        return f"Module {path} does not export RedisModule_OnLoad() symbol. Module not loaded."
    return f"Module {path} failed to load: minired has no module support"


def _start(argv: list[str], handler) -> int:
    own, argv = split_own_flags(argv)
    if own["cluster"] < 0:
        sys.stderr.write("--cluster takes the number of masters (1 or more)\n")
        return 1
    if own["cluster_replicas"] < 0 or (own["cluster_replicas"] and not own["cluster"]):
        sys.stderr.write("--cluster-replicas takes the number of replicas per --cluster master\n")
        return 1
    if own["cluster_spares"] < 0 or (own["cluster_spares"] and not own["cluster"]):
        sys.stderr.write("--cluster-spares takes a number of nodes to add to --cluster\n")
        return 1
    try:
        import minired.startup  # noqa: F401  (fills the command table rename-command checks)

        loaded = load_configuration(argv, handler)
        from minired.startup import apply_renames

        apply_renames(loaded.renames)
        config = loaded.config
        if config.get("daemonize") == "yes" and config.get("supervised") in ("no", ""):
            daemonize()
            handler.main_pid = os.getpid()
        log.warning("oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo")
        log.warning("Redis version=%s, bits=64, commit=00000000, modified=0, pid=%d, just started",
                    REDIS_VERSION, os.getpid())
        if loaded.config_file is None and not argv:
            log.warning("Warning: no config file specified, using the default config. In order "
                        "to specify a config file use %s /path/to/redis.conf", sys.argv[0])
        else:
            log.warning("Configuration loaded")
        handler.role = "M"
        for path in loaded.modules:
            log.warning("%s", module_load_failure(path))
            log.warning("Can't load module from %s: server aborting", path)
            return 1
        log.info("monotonic clock: POSIX clock_gettime")
        install_event_loop_policy(not own["no_uvloop"])
        from minired.features.persist_files import LoadError

        try:
            asyncio.run(serve(loaded, own, handler))
        except LoadError as exc:
            # Data on disk that cannot be loaded in full: stop, as Redis does, and leave it alone.
            for line in exc.args:
                log.warning("%s", line)
            return 1
        except OSError as exc:
            log.warning("could not start: %s", exc)
            return 1
        except KeyboardInterrupt:
            pass
    except StartupExit as stop:
        return stop.code
    return 0
