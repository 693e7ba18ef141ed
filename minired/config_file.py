"""redis-server's command line and configuration files, read as Redis 7.0.15 reads them.

`minired [config-file | -] [--name value ...]`: the options are turned into config lines and
appended to the file's text (and stdin's, for `-`), then the whole is parsed line by line with
Redis's argument splitting (sdssplitargs: quotes, escapes), so the last setting of a parameter
wins (main() and loadServerConfig in Redis's server.c/config.c). A line Redis would refuse stops
start-up with Redis's `*** FATAL CONFIG FILE ERROR ***` block on stderr and exit code 1.
"""
from __future__ import annotations

import logging
import os
import sys

from minired import REDIS_VERSION
from minired.engine.config import PARAMS, Config, ConfigError
from minired.engine.config_values import output_buffer_limits
from minired.protocol.resp import ProtocolError, split_inline

log = logging.getLogger("minired")

# Parameters taking several words (Redis's MULTI_ARG_CONFIG): `save 900 1 300 10`.
MULTI_ARG = frozenset(("save", "bind", "client-output-buffer-limit", "oom-score-adj-values",
                       "latency-tracking-info-percentiles"))
# Names Redis 7.0 still accepts in a file and ignores (deprecated_configs).
DEPRECATED = frozenset(("list-max-ziplist-entries", "list-max-ziplist-value",
                        "lua-replicate-commands"))

BAD_DIRECTIVE = "Bad directive or wrong number of arguments"


class FatalConfigError(Exception):
    """A line Redis refuses: `report()` is the text Redis prints on stderr before exiting 1."""

    def __init__(self, message: str, line_number: int = 0, line: str = "") -> None:
        super().__init__(message)
        self.message, self.line_number, self.line = message, line_number, line

    def report(self) -> str:
        where = (f"Reading the configuration file, at line {self.line_number}\n>>> '{self.line}'\n"
                 if self.line_number else "")
        return f"\n*** FATAL CONFIG FILE ERROR (Redis {REDIS_VERSION}) ***\n{where}{self.message}\n"


class UnreadableConfigFile(Exception):
    """A config file (or included one) that cannot be opened: Redis logs it and exits 1."""


class Invocation:
    """What redis-server's argv asks for: the config file (absolute), whether stdin is read
    too, and the options as config lines."""

    def __init__(self) -> None:
        self.config_file: str | None = None
        self.from_stdin = False
        self.options = ""


def repr_arg(value: str) -> str:
    """sdscatrepr: a quoted, escaped argument that sdssplitargs reads back unchanged."""
    out = ['"']
    for ch in value:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch in "\n\r\t\a\b":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\a": "\\a", "\b": "\\b"}[ch])
        elif ch.isprintable() and ord(ch) < 128:
            out.append(ch)
        else:
            out.extend(f"\\x{byte:02x}" for byte in ch.encode("utf-8", "surrogateescape"))
    out.append('"')
    return "".join(out)


def split_args(line: str) -> list[str] | None:
    """sdssplitargs: the words of a line, or None for unbalanced quotes."""
    try:
        words = split_inline(line.encode("utf-8", "surrogateescape"))
    except ProtocolError:
        return None
    return [word.decode("utf-8", "surrogateescape") for word in words]


def parse_argv(argv: list[str]) -> Invocation:
    """redis-server's main(): argv (without the program name) into an Invocation. --version
    and --help are the caller's (they only count as the first argument)."""
    invocation = Invocation()
    j = 0
    if argv and not argv[0].startswith("-"):
        invocation.config_file = os.path.abspath(argv[0])
        j = 1
    options: list[str] = []
    last_has_value = True
    while j < len(argv):
        arg = argv[j]
        last = j == len(argv) - 1
        if arg == "-" and (j == 0 or last):
            invocation.from_stdin = True
        elif last_has_value and arg.startswith("--"):
            # An option name, perhaps with its value(s) in the same argument ("--save 900 1").
            if options:
                options.append("\n")
            options.append(arg[2:] + " ")
            words = split_args(arg)
            if words is not None and len(words) == 1:
                last_has_value = False
                next_is_option = not last and argv[j + 1].startswith("--")
                if arg.lower() == "--save" and (next_is_option or last):
                    # `--save` with no value: an empty save list, as before Redis 7.0.1.
                    options.append('""')
                    last_has_value = next_is_option or last
                elif arg.lower() == "--sentinel" and (next_is_option or last):
                    last_has_value = True
            else:
                last_has_value = True
        else:
            options.append(repr_arg(arg) + " ")
            last_has_value = True
        j += 1
    invocation.options = "".join(options)
    return invocation


class LoadedConfig:
    """A parsed configuration: the parameters, and the directives applied at start-up."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.config_file: str | None = None
        self.renames: list[tuple[str, str]] = []  # rename-command old new ("" removes)
        self.users: list[list[str]] = []  # each `user` line's words after `user`
        self.modules: list[str] = []  # loadmodule paths (minired has no modules)


class ConfigLoader:
    """loadServerConfig / loadServerConfigFromString, on a Config of Redis's defaults."""

    def __init__(self, command_names) -> None:
        self.result = LoadedConfig(Config())
        self.command_names = set(command_names)
        # Redis's reading_config_file: true until the first parsed text (an include, or the
        # whole) ends; while true, the first `save` line replaces the default and later ones
        # add to it, afterwards each `save` replaces.
        self.reading_file = False
        self.save_loaded = False

    def load(self, invocation: Invocation, stdin=None) -> LoadedConfig:
        text = self.read_file(invocation.config_file) if invocation.config_file else ""
        if invocation.from_stdin:
            log.warning("Reading config from stdin")
            text += (stdin or sys.stdin).read()
        if invocation.options:
            text += "\n" + invocation.options
        self.load_text(text)
        self.result.config_file = invocation.config_file
        return self.result

    @staticmethod
    def read_file(path: str) -> str:
        """A file's text, or for a glob pattern every match's (none: nothing)."""
        if any(ch in path for ch in "*?["):
            import glob  # (only patterns need it: kept off start-up)

            paths = sorted(glob.glob(path))
        else:
            paths = [path]
        texts = []
        for name in paths:
            try:
                with open(name, encoding="utf-8", errors="surrogateescape") as handle:
                    texts.append(handle.read())
            except OSError as exc:
                raise UnreadableConfigFile(
                    f"Fatal error, can't open config file '{name}': {exc.strerror}") from None
        return "".join(texts)

    def load_text(self, text: str) -> None:
        self.reading_file = True
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.strip(" \t\r\n")
            if not line or line.startswith("#"):
                continue
            words = split_args(line)
            if words is None:
                raise FatalConfigError("Unbalanced quotes in configuration line", number, line)
            if not words:
                continue
            try:
                self.apply(words[0].lower(), words[1:])
            except ConfigError as exc:
                raise FatalConfigError(str(exc), number, line) from None
        self.reading_file = False

    def apply(self, name: str, args: list[str]) -> None:
        canonical = Config.canonical(name)
        if canonical in PARAMS:
            if canonical not in MULTI_ARG and len(args) != 1:
                raise ConfigError("wrong number of arguments")
            if canonical in MULTI_ARG and len(args) == 1 and args[0]:
                args = split_args(args[0]) or []
            self.set(canonical, args)
        elif name in DEPRECATED and len(args) == 1:
            pass
        elif name == "include" and len(args) == 1:
            self.load_text(self.read_file(args[0]))
        elif name == "rename-command" and len(args) == 2:
            self.rename(args[0].lower(), args[1].lower())
        elif name == "user" and args:
            self.result.users.append(args)
        elif name == "loadmodule" and args:
            self.result.modules.append(args[0])
        elif name == "sentinel":
            raise ConfigError("sentinel directive while not in sentinel mode")
        else:
            raise ConfigError(BAD_DIRECTIVE)

    def set(self, name: str, args: list[str]) -> None:
        config = self.result.config
        value = " ".join(args)
        if name == "save":
            value = PARAMS[name].normalize("" if args == [""] else value)
            if self.reading_file and self.save_loaded:
                value = " ".join(filter(None, (config.get("save"), value)))
            self.save_loaded = self.save_loaded or self.reading_file
        elif name == "client-output-buffer-limit":
            value = output_buffer_limits(value, config.get(name))
        else:
            value = PARAMS[name].normalize(value)
        config.set(name, value)

    def rename(self, old: str, new: str) -> None:
        if old not in self.command_names:
            raise ConfigError("No such command in rename-command")
        if new and new in self.command_names:
            raise ConfigError("Target command name already exists")
        self.command_names.discard(old)
        if new:
            self.command_names.add(new)
        self.result.renames.append((old, new))


def load(argv: list[str], command_names, stdin=None) -> LoadedConfig:
    """The configuration redis-server's argv describes (FatalConfigError, UnreadableConfigFile
    when Redis would stop)."""
    return ConfigLoader(command_names).load(parse_argv(argv), stdin)
