"""ACL and its subcommands: users (SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI), DRYRUN,
LOG, CAT, GENPASS, LOAD/SAVE, as Redis 7.0 answers them. The model is minired/features/acl.py, the
server's users and the log are security.Users."""
from __future__ import annotations

import os

from minired.engine.args import parse_int
from minired.engine.categories import ACL_CATEGORIES, acl_categories
from minired.engine.table import COMMANDS, all_specs, command, container_command, help_reply
from minired.features import acl, security
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, OrderedSet

G = "server"

container_command("acl", G, flags="sentinel",
                  summary="A container for Access List Control commands")

_ADMIN = "admin noscript loading stale sentinel"
_GENPASS_MAX_BITS = 4096


def _users(c) -> security.Users:
    users = security.users_of(c.server)
    users.sync_requirepass()
    return users


def _text(raw: bytes) -> str:
    return raw.decode(errors="replace")


@command("setuser", arity=-3, flags=_ADMIN, parent="acl", group=G)
def acl_setuser(c, argv):
    """Modify or create the rules for a specific ACL user"""
    users = _users(c)
    name = argv[2]
    if acl.has_spaces(name):
        raise RedisError(errors.ACL_USERNAME_SPACES)
    rules, unclosed = acl.merge_selector_arguments(argv[3:])
    if unclosed != -1:
        raise RedisError(errors.ACL_UNMATCHED_PARENTHESIS.format(_text(argv[3 + unclosed])))
    pubsub_all = users.pubsub_default_all()
    existing = users.by_name.get(name)
    staged = existing.copy() if existing is not None else acl.User(name, pubsub_all)
    for rule in rules:
        try:
            staged.apply(rule, pubsub_all)
        except acl.RuleError as exc:
            raise RedisError(errors.ACL_RULE_ERROR.format(_text(rule), exc)) from None
    if existing is None:
        users.by_name[name] = staged
    else:
        users.kill_pubsub_clients_if_needed(staged, existing)
        existing.take_rules_of(staged)
        users.refresh(existing)
    return OK


def _selector_fields(selector: acl.Selector) -> dict:
    return {b"commands": acl.describe_commands(selector), b"keys": selector.describe_keys(),
            b"channels": selector.describe_channels()}


@command("getuser", arity=3, flags=_ADMIN, parent="acl", group=G)
def acl_getuser(c, argv):
    """Get the rules for a specific ACL user"""
    user = _users(c).by_name.get(argv[2])
    if user is None:
        return None
    return {
        b"flags": OrderedSet(flag.encode() for flag in user.ordered_flags()),
        b"passwords": [digest.encode() for digest in user.passwords],
        **_selector_fields(user.root),
        b"selectors": [_selector_fields(selector) for selector in user.selectors[1:]],
    }


@command("deluser", arity=-3, flags=_ADMIN, parent="acl", group=G)
def acl_deluser(c, argv):
    """Remove the specified ACL users and the associated rules"""
    users = _users(c)
    if b"default" in argv[2:]:
        raise RedisError(errors.ACL_DELETE_DEFAULT)
    return sum(users.delete(c, name) for name in argv[2:])


def _described(user: acl.User) -> bytes:
    return b"user " + user.name + b" " + user.describe()


@command("list", arity=2, flags=_ADMIN, parent="acl", group=G)
def acl_list(c, argv):
    """List the current ACL rules in ACL config file format"""
    users = _users(c)
    return [_described(users.by_name[name]) for name in sorted(users.by_name)]


@command("users", arity=2, flags=_ADMIN, parent="acl", group=G)
def acl_users(c, argv):
    """List the username of all the configured ACL rules"""
    return sorted(_users(c).by_name)


@command("whoami", arity=2, flags="noscript loading stale sentinel", parent="acl", group=G)
def acl_whoami(c, argv):
    """Return the name of the user associated to the current connection"""
    return _users(c).user_of(c).name


@command("cat", arity=-2, flags="noscript loading stale sentinel", parent="acl", group=G)
def acl_cat(c, argv):
    """List the ACL categories or the commands inside a category"""
    if len(argv) == 2:
        return [category.encode() for category in ACL_CATEGORIES]
    if len(argv) > 3:
        raise RedisError(errors.ACL_CAT_ARITY)
    category = argv[2].lower().decode(errors="replace")
    if category not in ACL_CATEGORIES:
        raise RedisError(errors.ACL_UNKNOWN_CATEGORY.format(_text(argv[2][:128])))
    return [spec.full_name.encode() for spec in all_specs()
            if category in acl_categories(spec)]


@command("genpass", arity=-2, flags="noscript loading stale sentinel", parent="acl", group=G)
def acl_genpass(c, argv):
    """Generate a pseudorandom secure password to use for ACL users"""
    if len(argv) > 3:
        raise errors.unknown_subcommand_or_arity(argv[1], "acl")
    bits = parse_int(argv[2]) if len(argv) == 3 else 256
    if bits <= 0 or bits > _GENPASS_MAX_BITS:
        raise RedisError(errors.ACL_GENPASS_BITS)
    chars = (bits + 3) // 4
    return os.urandom((chars + 1) // 2).hex()[:chars].encode()


@command("log", arity=-2, flags=_ADMIN, parent="acl", group=G)
def acl_log(c, argv):
    """List latest events denied because of ACLs in place"""
    if len(argv) > 3:
        raise errors.unknown_subcommand_or_arity(argv[1], "acl")
    users = _users(c)
    count = 10
    if len(argv) == 3:
        if argv[2].lower() == b"reset":
            users.log.clear()
            return OK
        count = max(parse_int(argv[2]), 0)
    now = c.server.clock.ms()
    return [{
        b"count": entry.count, b"reason": entry.reason.encode(),
        b"context": entry.context.encode(), b"object": entry.object,
        b"username": entry.username, b"age-seconds": (now - entry.ctime) / 1000,
        b"client-info": entry.client_info.encode(),
    } for entry in users.log[:count]]


@command("dryrun", arity=-4, flags=_ADMIN, parent="acl", group=G)
def acl_dryrun(c, argv):
    """Returns whether the user can execute the given command without executing the command."""
    user = _users(c).by_name.get(argv[2])
    if user is None:
        raise RedisError(errors.ACL_DRYRUN_NO_USER.format(_text(argv[2])))
    target = argv[3:]
    spec = _lookup_command(target)
    if spec is None:
        raise RedisError(errors.ACL_DRYRUN_NO_COMMAND.format(_text(argv[3])))
    if not spec.arity_ok(len(target)):
        raise errors.wrong_arity(spec.full_name)
    result, position = user.check(spec, target)
    if result == acl.DENIED_COMMAND:
        return errors.ACL_DRYRUN_DENIED_COMMAND.format(spec.full_name).encode()
    if result == acl.DENIED_KEY:
        return errors.ACL_DRYRUN_DENIED_KEY.format(_text(target[position])).encode()
    if result == acl.DENIED_CHANNEL:
        return errors.ACL_DRYRUN_DENIED_CHANNEL.format(_text(target[position])).encode()
    return OK


def _lookup_command(argv: list):
    """Redis's lookupCommand: a container with an argument resolves to its subcommand."""
    spec = COMMANDS.get(argv[0].lower())
    if spec is None or len(argv) == 1 or not spec.subcommands:
        return spec
    return spec.subcommands.get(argv[1].lower())


def _acl_file(c) -> str:
    path = c.server.config.get("aclfile") or ""
    if not path:
        raise RedisError(errors.ACL_NO_FILE)
    return path


@command("save", arity=2, flags=_ADMIN, parent="acl", group=G)
def acl_save(c, argv):
    """Save the current ACL rules in the configured ACL file"""
    path = _acl_file(c)
    users = _users(c)
    text = b"".join(_described(users.by_name[name]) + b"\n" for name in sorted(users.by_name))
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "wb") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError:
        raise RedisError(errors.ACL_SAVE_FAILED) from None
    return OK


@command("load", arity=2, flags=_ADMIN, parent="acl", group=G)
def acl_load(c, argv):
    """Reload the ACLs from the configured ACL file"""
    path = _acl_file(c)
    problems = security.load_acl_file(_users(c), c, path)
    if problems:
        raise RedisError(errors.ACL_LOAD_FAILED.format(problems))
    return OK


@command("help", arity=2, flags="loading stale sentinel", parent="acl", group=G)
def acl_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply(
        "ACL",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the "
        "command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
    )
