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
from minired.engine.config_values import output_buffer_limits, shown_directory
from minired.protocol.resp import ProtocolError, split_inline

log = logging.getLogger("minired")

# Parameters taking several words (Redis's MULTI_ARG_CONFIG): `save 900 1 300 10`.
# (`replicaof <host> <port>` too: loadServerConfigFromString reads its two words itself.)
MULTI_ARG = frozenset(("save", "bind", "client-output-buffer-limit", "oom-score-adj-values",
                       "latency-tracking-info-percentiles", "shutdown-on-sigint",
                       "shutdown-on-sigterm", "replicaof"))
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
                    last_has_value = True
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

    def __init__(self, command_names, chdir: bool = False) -> None:
        self.result = LoadedConfig(Config())
        # `dir` moves the process there as it is read, as Redis's chdir: the paths read after
        # it (logfile, include, ...) are relative to it, and CONFIG GET dir is the absolute
        # path. (Off when a configuration is only parsed, as the tests do in-process.)
        self.chdir = chdir
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
        logfile = self.result.config.get("logfile")
        if logfile and self.chdir:  # (the process's own start-up: Redis opens it here)
            try:
                open(logfile, "a").close()
            except OSError as exc:
                raise FatalConfigError(f"Can't open the log file: {exc.strerror}") from None
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
            if any(words[0] == args[0] for words in self.result.users):
                raise ConfigError(f"Error in user declaration '{args[0]}': Duplicate user found. "
                                  "A user can only be defined once in config files")
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
            # (`save ""` empties the list whenever it comes: resetServerSaveParams)
            if self.reading_file and self.save_loaded and args != [""]:
                value = " ".join(filter(None, (config.get("save"), value)))
            self.save_loaded = self.save_loaded or self.reading_file
        elif name == "client-output-buffer-limit":
            value = output_buffer_limits(value, config.get(name))
        elif name == "dir" and self.chdir:
            try:
                os.chdir(value)
            except OSError as exc:
                raise ConfigError(exc.strerror or str(exc)) from None
            value = os.getcwd()
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


def load(argv: list[str], command_names, stdin=None, chdir: bool = False) -> LoadedConfig:
    """The configuration redis-server's argv describes (FatalConfigError, UnreadableConfigFile
    when Redis would stop); with chdir, `dir` moves the process as in Redis."""
    return ConfigLoader(command_names, chdir).load(parse_argv(argv), stdin)


# --- CONFIG REWRITE ------------------------------------------------------------------------------

SIGNATURE = "# Generated by CONFIG REWRITE"
# Written whatever their value, as Redis does (dir: the absolute path; the percentiles: a quirk
# of Redis 7.0's rewrite, which forces them).
_ALWAYS_WRITTEN = frozenset(("dir", "latency-tracking-info-percentiles"))
# Strings that Redis keeps as "not set" when empty: an empty one is left out of the file.
_EMPTY_KEPT = frozenset(("logfile", "aclfile", "ignore-warnings", "syslog-ident",
                         "dbfilename", "appendfilename", "appenddirname",
                         "cluster-config-file", "proc-title-template"))
_QUOTED_TYPES = ("text", "keyspace_events", "hostname", "proc_title_template")


def format_memory(number: int) -> str:
    """rewriteConfigFormatMemory: the largest of gb, mb, kb dividing it, else bytes."""
    for unit, size in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if number and number % size == 0:
            return f"{number // size}{unit}"
    return str(number)


def _takes_units(param) -> bool:
    """A memory parameter: its normalizer reads "<default>b" as its default (an integer one
    refuses the unit, a string one keeps the 'b')."""
    try:
        return param.default.isdigit() and param.normalize(param.default + "b") == param.default
    except ConfigError:
        return False


class ConfigRewrite:
    """rewriteConfig: the old file's lines, each known option's lines replaced in place by its
    current value, new ones appended after the signature, leftover lines of rewritten options
    blanked; comments, include, rename-command and unknown lines kept."""

    def __init__(self, text: str, force_all: bool = False) -> None:
        self.force_all = force_all
        self.lines: list[str] = []
        self.option_lines: dict[str, list[int]] = {}
        self.processed: set[str] = set()
        self.needs_signature = True
        for raw in text.split("\n") if text else []:
            line = raw.strip("\r\n\t ")
            if not line or line.startswith("#"):
                if line == SIGNATURE:
                    self.needs_signature = False
                self.lines.append(line)
                continue
            words = split_args(line)
            if not words:
                self.lines.append(f"# ??? {line}")
                continue
            name = Config.canonical(words[0].lower())
            self.option_lines.setdefault(name, []).append(len(self.lines))
            self.lines.append(line)

    def line(self, name: str, line: str, force: bool) -> None:
        self.processed.add(name)
        free = self.option_lines.get(name)
        if free:
            self.lines[free.pop(0)] = line
        elif force or self.force_all:
            if self.needs_signature:
                self.lines.append(SIGNATURE)
                self.needs_signature = False
            self.lines.append(line)

    def content(self) -> str:
        for name in self.processed:
            for index in self.option_lines.get(name, ()):
                self.lines[index] = ""
        out: list[str] = []
        for line in self.lines:
            if line or not out or out[-1]:  # a run of empty lines becomes one
                out.append(line)
        return "".join(line + "\n" for line in out)

    def parameters(self, config: Config) -> None:
        for name, param in PARAMS.items():
            value = config.get(name)
            changed = value != param.default
            if name == "save":
                pairs = value.split()
                if not pairs:
                    self.line(name, 'save ""', True)
                for i in range(0, len(pairs), 2):
                    self.line(name, f"save {pairs[i]} {pairs[i + 1]}", True)
            elif name == "client-output-buffer-limit":
                self.buffer_limits(value, param.default)
            elif name == "replicaof" and value:
                self.line(name, f"replicaof {value}", True)  # (rewriteConfigReplicaOfOption)
            elif name == "replicaof" or (name == "bind" and not changed):
                self.processed.add(name)
            elif name == "dir":
                self.line(name, f"dir {repr_arg(shown_directory(value))}", True)
            elif value == "" and param.normalize.__name__ == "text" and name not in _EMPTY_KEPT:
                self.processed.add(name)
            else:
                if param.normalize.__name__ in _QUOTED_TYPES:
                    shown = repr_arg(value)
                elif _takes_units(param) and value.isdigit():
                    shown = format_memory(int(value))
                else:
                    shown = value
                self.line(name, f"{name} {shown}", changed or name in _ALWAYS_WRITTEN)

    def buffer_limits(self, value: str, default: str) -> None:
        words, defaults = value.split(), default.split()
        for i in range(0, len(words), 4):
            cls, hard, soft, seconds = words[i:i + 4]
            self.line("client-output-buffer-limit",
                      f"client-output-buffer-limit {cls} {format_memory(int(hard))} "
                      f"{format_memory(int(soft))} {seconds}", words[i:i + 4] != defaults[i:i + 4])

    def users(self, described: list[str] | None) -> None:
        """The ACL users as `user` lines, or none when they live in an aclfile (None)."""
        self.processed.add("user")
        for line in described or ():
            self.line("user", line, True)


def rewrite(path: str, config: Config, users: list[str] | None, force_all: bool = False) -> None:
    """CONFIG REWRITE into `path` (OSError as Redis's rewrite fails): written to a temporary
    file in the same folder, synced, and renamed over the old one. force_all (DEBUG
    CONFIG-REWRITE-FORCE-ALL) writes every option that has a line, defaults included."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = ""
    state = ConfigRewrite(text, force_all)
    state.parameters(config)
    state.users(None if config.get("aclfile") else users)
    folder = os.path.dirname(path) or "."
    temporary = os.path.join(folder, f"{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(state.content())
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.chmod(temporary, os.stat(path).st_mode & 0o7777)
        except FileNotFoundError:
            pass
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
