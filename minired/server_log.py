"""The server's log, written as Redis's serverLog writes it: `pid:role dd Mon yyyy hh:mm:ss.mmm
<level> message`, with the level shown as `.` (debug), `-` (verbose), `*` (notice) or `#`
(warning), filtered by `loglevel` and going to stdout when `logfile` is "" and appended to that
file otherwise (opened per line, as Redis does, so a rotated or truncated log is picked up).
Subsystems log through the standard `logging` module, logger "minired": info is notice, debug is
debug, VERBOSE is verbose, warning and above are warnings."""
from __future__ import annotations

import logging
import os
import sys
import time

from minired import LOG_VERBOSE, REDIS_VERSION

VERBOSE = LOG_VERBOSE
logging.addLevelName(VERBOSE, "VERBOSE")

LOG_LEVELS = {"debug": logging.DEBUG, "verbose": VERBOSE, "notice": logging.INFO,
              "warning": logging.WARNING}


def level_char(levelno: int) -> str:
    if levelno >= logging.WARNING:
        return "#"
    if levelno >= logging.INFO:
        return "*"
    return "-" if levelno >= VERBOSE else "."


def timestamp(now: float | None = None) -> str:
    now = time.time() if now is None else now
    return time.strftime("%d %b %Y %H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"


class RedisLogHandler(logging.Handler):
    """Formats and writes every record of the "minired" logger as Redis does. `config` is read on
    every record: CONFIG SET loglevel applies to the next line. `role` is 'C' until the server
    is initialised (Redis logs its first lines before it knows its own pid) and 'M' after; a
    forked child (a background save) logs as 'C' too."""

    def __init__(self, config) -> None:
        super().__init__(logging.DEBUG)
        self.config = config
        self.role = "C"
        self.main_pid = os.getpid()

    def enabled(self, levelno: int) -> bool:
        return levelno >= LOG_LEVELS.get(self.config.get("loglevel") or "notice", logging.INFO)

    def emit(self, record: logging.LogRecord) -> None:
        if not self.enabled(record.levelno):
            return
        try:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + logging.Formatter().formatException(record.exc_info)
        except Exception:
            self.handleError(record)
            return
        pid = os.getpid()
        role = self.role if pid == self.main_pid else "C"
        self.write(f"{pid}:{role} {timestamp(record.created)} {level_char(record.levelno)} "
                   f"{message}\n")

    def write(self, text: str) -> None:
        """Raw text to the log (the logo is written this way, as Redis's LL_RAW)."""
        path = self.config.get("logfile") or ""
        try:
            if path:
                with open(path, "a") as handle:
                    handle.write(text)
            else:
                sys.stdout.write(text)
                sys.stdout.flush()
        except (OSError, ValueError):
            pass  # as Redis: a log that cannot be written is skipped


def install(config) -> RedisLogHandler:
    """Send the "minired" logger's records to a Redis-format handler reading `config`."""
    logger = logging.getLogger("minired")
    for old in [h for h in logger.handlers if isinstance(h, RedisLogHandler)]:
        logger.removeHandler(old)
    handler = RedisLogHandler(config)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    return handler


def uninstall(handler: RedisLogHandler) -> None:
    """Undo install (main() run in a process that goes on, as the tests do)."""
    logger = logging.getLogger("minired")
    logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)


def signal_line(message: str) -> str:
    """What Redis's signal handler logs (serverLogFromHandler): no role, no date."""
    return f"{os.getpid()}:signal-handler ({int(time.time())}) {message}\n"


_LOGO = (
    "                _._                                                  \n"
    "           _.-``__ ''-._                                             \n"
    "      _.-``    `.  `_.  ''-._           Redis {version} (00000000/0) 64 bit\n"
    "  .-`` .-```.  ```\\/    _.,_ ''-._                                  \n"
    " (    '      ,       .-`  | `,    )     Running in {mode} mode\n"
    " |`-._`-...-` __...-.``-._|'` _.-'|     Port: {port}\n"
    " |    `-._   `._    /     _.-'    |     PID: {pid}\n"
    "  `-._    `-._  `-./  _.-'    _.-'                                   \n"
    " |`-._`-._    `-.__.-'    _.-'_.-'|                                  \n"
    " |    `-._`-._        _.-'_.-'    |           https://redis.io       \n"
    "  `-._    `-._`-.__.-'_.-'    _.-'                                   \n"
    " |`-._`-._    `-.__.-'    _.-'_.-'|                                  \n"
    " |    `-._`-._        _.-'_.-'    |                                  \n"
    "  `-._    `-._`-.__.-'_.-'    _.-'                                   \n"
    "      `-._    `-.__.-'    _.-'                                       \n"
    "          `-._        _.-'                                           \n"
    "              `-.__.-'                                               \n\n")


def show_art(handler: RedisLogHandler, mode: str, port: int) -> None:
    """redisAsciiArt: the logo (a notice) when always-show-logo is yes or stdout is a terminal
    the log goes to, else the one-line 'Running mode=...' notice."""
    config = handler.config
    to_terminal = not config.get("logfile") and sys.stdout.isatty()
    if config.get("always-show-logo") == "yes" or to_terminal:
        if handler.enabled(logging.INFO):
            handler.write(_LOGO.format(version=REDIS_VERSION, mode=mode, port=port,
                                       pid=os.getpid()))
    else:
        logging.getLogger("minired").info("Running mode=%s, port=%d.", mode, port)


# Signals Redis's sigsegvHandler reports on before dying of them.
CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT")


def crash_report(handler: RedisLogHandler, signum: int, stacks: str) -> None:
    """The bug report Redis logs when a crash signal arrives (the sender and registers are
    not known to Python: the stack trace is the Python threads')."""
    log = logging.getLogger("minired")
    handler.write("\n\n=== REDIS BUG REPORT START: Cut & paste starting from here ===\n")
    log.warning("Redis %s crashed by signal: %d, si_code: 0", REDIS_VERSION, signum)
    handler.write(f"\n------ STACK TRACE ------\n{stacks}\n")
    handler.write("=== REDIS BUG REPORT END. Make sure to include from START to END. ===\n\n"
                  "       Please report the crash by opening an issue on github:\n\n"
                  "           http://github.com/redis/redis/issues\n\n")
