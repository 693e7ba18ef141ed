"""Who may connect and as whom: ACL users (authentication, permission checks, the ACL log, ACL
files) and protected mode, as Redis 7.0 applies them. The ACL model itself (rules, selectors,
descriptions) is in acl.py; what a connection may cost in unsent replies, in output_limits.py.

The other limits live where the bytes are: `client-query-buffer-limit`, `proto-max-bulk-len`
and `maxclients` are checked by the connection itself (server.py, resp.py), `maxmemory` by
dispatch through `Server.memory_admission`; the AUTH and HELLO commands in
commands/connection.py, the ACL commands in commands/acl.py.

ACL users (`Users`, one per server): `requirepass` is the default user's password, as in Redis
(CONFIG SET requirepass x runs "resetpass >x" on it, "" runs "nopass"); the registry applies a
changed requirepass the next time it is asked. Each client has `user` (None until it connects:
the default user) and `user_restricted`, true when the user cannot run everything, so dispatch
pays one attribute check per command for the usual unrestricted user; it is recomputed for the
user's clients whenever ACL SETUSER changes the user.

Protected mode: with `protected-mode yes` and no password, a client connecting from anything
but the loopback interface or a Unix socket gets Redis's long DENIED error and is closed.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from minired.engine.client_info import client_info_line
from minired.engine.table import stats_of
from minired.features import acl
from minired.protocol import errors
from minired.protocol.errors import RedisError

if TYPE_CHECKING:
    from minired.engine.client import Client
    from minired.engine.server import Server

log = logging.getLogger("minired")



# --- protected mode ------------------------------------------------------------------------------

def is_local_address(addr: str) -> bool:
    """Whether a client address ("ip:port", as Client.addr holds it) is one Redis's connIsLocal
    accepts: IPv4 127.x.x.x, IPv6 ::1, or a Unix socket (no IP at all)."""
    host = addr.rsplit(":", 1)[0]
    if not host:
        return True
    # Every connection asks, so the usual loopback peers are answered without the ipaddress
    # module (~2 ms to import, which would otherwise delay the first reply). The kernel reports
    # IPv4 peers in dotted-quad form, so a "127." prefix is exactly 127.0.0.0/8.
    if host.startswith("127.") or host == "::1":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True  # a Unix socket path, never a network peer


def protected_mode_denies(server: "Server", client: "Client") -> bool:
    config = server.config
    return (config.get("protected-mode") == "yes" and users_of(server).default.nopass
            and not is_local_address(client.addr))


# --- wiring --------------------------------------------------------------------------------------

def attach(server: "Server") -> None:
    users = users_of(server)

    def on_connect(client: "Client") -> None:
        users.bind(client, users.default)
        client.authenticated = not users.auth_required()
        if protected_mode_denies(server, client):
            server.stats.rejected_connections += 1
            log.warning("Possible SECURITY ATTACK detected: a client from %s was refused by "
                        "protected mode", client.addr)
            client.send(errors.RedisError(errors.PROTECTED_MODE))
            client.close()

    server.hooks.connect.append(on_connect)


# --- ACL users -------------------------------------------------------------------------------

_LOG_GROUPING_MS = 60000
_LOG_MATCH_SCAN = 10
# Subcommands minired accepts that Redis 7.0.15 lacks (redis-py sends CLIENT SETINFO on every
# connect): to a user not allowed them, minired answers as 7.0.15 answers anyone.
_NEWER_THAN_7_0 = frozenset({"client|setinfo", "client|no-touch"})
_REASONS = {acl.DENIED_COMMAND: "command", acl.DENIED_KEY: "key",
            acl.DENIED_CHANNEL: "channel"}


class LogEntry:
    __slots__ = ("count", "reason", "context", "object", "username", "ctime", "client_info")

    def __init__(self, reason: str, context: str, obj: bytes, username: bytes, ctime: int,
                 client_info: str) -> None:
        self.count = 1
        self.reason = reason
        self.context = context
        self.object = obj
        self.username = username
        self.ctime = ctime
        self.client_info = client_info


class Users:
    """The server's ACL users, the default one first, and the ACL log (newest first)."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.default = acl.User(b"default")
        for rule in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            self.default.apply(rule, False)
        self.by_name: dict[bytes, acl.User] = {b"default": self.default}
        self.log: list[LogEntry] = []
        self._requirepass: str | None = None

    def pubsub_default_all(self) -> bool:
        return self.server.config.get("acl-pubsub-default") == "allchannels"

    def sync_requirepass(self) -> None:
        """ACLUpdateDefaultUserPassword for a requirepass changed since the last call (Redis's
        CONFIG SET applies nothing either when the value is the one already set)."""
        value = self.server.config.requirepass
        if value == self._requirepass:
            return
        self._requirepass = value
        self.default.apply(b"resetpass", False)
        self.default.apply(b">" + value.encode() if value else b"nopass", False)

    def auth_required(self) -> bool:
        """Whether a new connection must authenticate (Redis's authRequired)."""
        self.sync_requirepass()
        default = self.default
        return not default.nopass or not default.enabled

    def check_command(self, c: "Client", spec, argv: list) -> RedisError | None:
        """Dispatch's check for a restricted user's command, at the top level or as MULTI
        queues it: None if allowed, else Redis's NOPERM error (logged; dispatch refuses the
        command with it, as every refusal, and counts it)."""
        result, position = self.user_of(c).check(spec, argv)
        if result == acl.ALLOWED:
            return None
        if spec.full_name in _NEWER_THAN_7_0:
            # Redis 7.0.15 does not know the subcommand: it refuses it before any ACL check,
            # so the refusal is its unknown-subcommand error and the ACL log stays as it was.
            return errors.unknown_subcommand(spec.parent.name, argv[1])
        context = "multi" if c.multi is not None else "toplevel"
        self.add_log(c, _REASONS[result], context, _denial_object(spec, argv, result, position))
        if result == acl.DENIED_COMMAND:
            return RedisError(errors.NOPERM_COMMAND.format(spec.full_name))
        return RedisError(errors.NOPERM_KEY if result == acl.DENIED_KEY else errors.NOPERM_CHANNEL)

    def check_exec(self, c: "Client", spec, argv: list) -> RedisError | None:
        """A command EXEC runs for a restricted user, whose rules may have changed since it
        was queued."""
        return _check_nested(self, c, c, spec, argv, "multi", _EXEC_MESSAGES)

    def user_of(self, client: "Client") -> acl.User:
        return client.user if client.user is not None else self.default

    def bind(self, client: "Client", user: acl.User) -> None:
        client.user = user
        client.user_restricted = user.restricted

    def refresh(self, user: acl.User) -> None:
        """After a change of the user's rules: its clients' restricted flag."""
        restricted = user.restricted
        for client in self.server.clients.values():
            if self.user_of(client) is user:
                client.user_restricted = restricted

    def authenticate(self, client: "Client", username: bytes, password: bytes,
                     command_name: bytes) -> bool:
        """ACLAuthenticateUser: log the client in, or log the failure."""
        self.sync_requirepass()
        user = self.by_name.get(username)
        if user is not None and user.enabled and (user.nopass
                                                  or user.password_matches(password)):
            client.authenticated = True
            self.bind(client, user)
            return True
        context = "multi" if client.multi is not None or client.in_exec else "toplevel"
        self.add_log(client, "auth", context, command_name, username)
        return False

    def reset_client(self, client: "Client") -> None:
        """RESET: back to the default user, authenticated only if it needs no password."""
        self.bind(client, self.default)
        client.authenticated = not self.auth_required()

    def delete(self, current: "Client", name: bytes) -> bool:
        """ACL DELUSER of one user: its clients are disconnected, as in Redis."""
        user = self.by_name.pop(name, None)
        if user is None:
            return False
        for client in list(self.server.clients.values()):
            if client.user is user:
                client.user = self.default
                client.user_restricted = self.default.restricted
                client.authenticated = False
                if client is current:
                    client.close_after_reply = True
                else:
                    client.close()
        return True

    def kill_pubsub_clients_if_needed(self, new: acl.User, original: acl.User) -> None:
        """ACLKillPubsubClientsIfNeeded: subscribers whose channels the new rules revoke."""
        if any(selector.allchannels for selector in new.selectors):
            return
        upcoming = [pattern for selector in new.selectors for pattern in selector.channels]
        # (the old rules held every channel if a selector had allchannels: no superset then)
        if not any(selector.allchannels for selector in original.selectors) and all(
                pattern in upcoming for selector in original.selectors
                for pattern in selector.channels):
            return
        for client in list(self.server.clients.values()):
            if client.user is not original:
                continue
            revoked = any(not acl.channel_allowed(upcoming, pattern, True)
                          for pattern in client.patterns)
            revoked = revoked or any(not acl.channel_allowed(upcoming, channel, False)
                                     for channel in (*client.channels, *client.shard_channels))
            if revoked:
                client.close()

    # --- the ACL log ---------------------------------------------------------------------------

    def add_log(self, client: "Client", reason: str, context: str, obj: bytes,
                username: bytes | None = None) -> None:
        """addACLLogEntry: similar entries within a minute are counted in one."""

        now = self.server.clock.ms()
        if username is None:
            username = self.user_of(client).name
        entry = LogEntry(reason, context, obj, username, now, client_info_line(client))
        for position, old in enumerate(self.log[:_LOG_MATCH_SCAN]):
            if (old.reason == reason and old.context == context and old.object == obj
                    and old.username == username and abs(old.ctime - now) <= _LOG_GROUPING_MS):
                old.count += 1
                old.ctime = now
                old.client_info = entry.client_info
                self.log.insert(0, self.log.pop(position))
                return
        self.log.insert(0, entry)
        limit = int(self.server.config.get("acllog-max-len") or 128)
        del self.log[limit:]


def users_of(server: "Server") -> Users:
    users = server.access
    if users is None:
        users = server.access = Users(server)
        users.sync_requirepass()
    return users


def auth_required(server: "Server") -> bool:
    """Whether an unauthenticated client must still authenticate."""
    return users_of(server).auth_required()


def _denial_object(spec, argv: list, result: int, position: int) -> bytes:
    return spec.full_name.encode() if result == acl.DENIED_COMMAND else argv[position]


def permits(c: "Client", spec, argv: list) -> bool:
    """Whether the client's user may run argv (redis.acl_check_cmd): asked, not attempted, so
    nothing is logged or counted."""
    return users_of(c.server).user_of(c).check(spec, argv)[0] == acl.ALLOWED


_EXEC_MESSAGES = tuple(errors.NOPERM_EXEC.format(reason) for reason in (
    errors.NOPERM_EXEC_COMMAND, errors.NOPERM_EXEC_KEY, errors.NOPERM_EXEC_CHANNEL))
_SCRIPT_MESSAGES = (errors.SCRIPT_ACL_COMMAND, errors.SCRIPT_ACL_KEY, errors.SCRIPT_ACL_CHANNEL)
_MESSAGE_INDEX = {acl.DENIED_COMMAND: 0, acl.DENIED_KEY: 1, acl.DENIED_CHANNEL: 2}


def check_script_call(caller: "Client", script_client: "Client", spec,
                      argv: list) -> RedisError | None:
    """A script's redis.call, run for a restricted caller: checked against the caller's user
    (the script engine asks, before running it on its script client)."""
    error = _check_nested(users_of(caller.server), caller, script_client, spec, argv, "lua",
                          _SCRIPT_MESSAGES)
    if error is not None:
        stats_of(caller.server, spec).rejected_calls += 1  # as Redis's scriptCall counts it
    return error


def _check_nested(users: Users, real: "Client", c: "Client", spec, argv: list, context: str,
                  messages: tuple) -> RedisError | None:
    """A nested command (run by EXEC, or by a script for `real`, its caller) checked against
    real's user; counted on c's server as an error reply, as Redis counts it."""
    user = users.user_of(real)
    result, position = user.check(spec, argv)
    if result == acl.ALLOWED:
        return None
    users.add_log(real, _REASONS[result], context, _denial_object(spec, argv, result, position),
                  user.name)
    message = messages[_MESSAGE_INDEX[result]]
    c.server.stats.count_error(message)  # an error reply, as Redis counts it
    return RedisError(message)


def load_acl_file(users: Users, current: "Client", path: str) -> str:
    """ACLLoadFromFile: replace every user by the file's, or change nothing and return the
    problems found (Redis's text), "" on success."""
    try:
        with open(path, "rb") as handle:
            lines = handle.read().split(b"\n")
    except OSError as exc:
        return f"Error loading ACLs, opening file '{path}': {exc.strerror}"
    pubsub_all = users.pubsub_default_all()
    loaded: dict[bytes, acl.User] = {}
    problems = []
    for number, line in enumerate(lines, 1):
        words = [word for word in line.strip(b" \t\r\n").split(b" ") if word]
        if not words:
            continue
        if words[0] != b"user" or len(words) < 2:
            problems.append(f"{path}:{number} should start with user keyword followed by the "
                            "username. ")
            continue
        name = words[1]
        if acl.has_spaces(name):
            problems.append(f"'{path}:{number}: username '{name.decode(errors='replace')}' "
                            "contains invalid characters. ")
            continue
        if name in loaded:
            problems.append(f"WARNING: Duplicate user '{name.decode(errors='replace')}' found "
                            f"on line {number}. ")
            continue
        user = loaded[name] = acl.User(name, pubsub_all)
        rules, unclosed = acl.merge_selector_arguments(words[2:])
        if unclosed != -1:
            problems.append(f"{path}:{number}: Unmatched parenthesis in selector definition.")
        for rule in rules:
            try:
                user.apply(rule.strip(b"\t\r\n"), pubsub_all)
            except acl.RuleError as exc:
                problems.append(f"{path}:{number}: {exc}. ")
    if problems:
        return "".join(problems) + ("WARNING: ACL errors detected, no change to the previously "
                                    "active ACL rules was performed")
    new_default = loaded.pop(b"default", None)
    if new_default is None:
        new_default = acl.User(b"default")
        for rule in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            new_default.apply(rule, False)
    for name in [name for name in users.by_name if name != b"default"]:
        users.delete(current, name)
    users.default.take_rules_of(new_default)
    users.refresh(users.default)
    users.by_name.update(loaded)
    return ""
