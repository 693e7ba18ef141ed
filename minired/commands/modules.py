"""MODULE: minired loads no modules. LIST answers an empty list (clients call it to detect
features), and LOAD/LOADEX/UNLOAD answer as a Redis without modules does: refused while
enable-module-command forbids them, else the load or unload fails."""
from __future__ import annotations

from minired.engine.table import command, container_command, help_reply
from minired.protocol import errors
from minired.protocol.errors import RedisError

G = "server"

container_command("module", G, summary="A container for module commands")


@command("list", arity=2, flags="admin noscript", parent="module", group=G)
def module_list(c, argv):
    """List all modules loaded by the server"""
    return []


@command("load", arity=-3, flags="admin noscript no_async_loading protected", parent="module",
         group=G)
def module_load(c, argv):
    """Load a module"""
    raise RedisError(errors.MODULE_LOAD_FAILED)


@command("loadex", arity=-3, flags="admin noscript no_async_loading protected",
         parent="module", group=G)
def module_loadex(c, argv):
    """Load a module with extended parameters"""
    # parseLoadexArguments: CONFIG name value pairs, then optionally ARGS and the rest.
    i = 3
    while i < len(argv):
        word = argv[i].lower()
        if word == b"config" and i + 2 < len(argv):
            i += 3
        elif word == b"args" and i + 1 < len(argv):
            break
        else:
            raise RedisError(errors.MODULE_LOADEX_ARGUMENTS)
    raise RedisError(errors.MODULE_LOAD_FAILED)


@command("unload", arity=3, flags="admin noscript no_async_loading protected", parent="module",
         group=G)
def module_unload(c, argv):
    """Unload a module"""
    raise RedisError(errors.MODULE_NOT_LOADED)


@command("help", arity=2, flags="loading stale", parent="module", group=G)
def module_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply(
        "MODULE",
        "LIST",
        "    Return a list of loaded modules.",
        "LOAD <path> [<arg> ...]",
        "    Load a module library from <path>, passing to it any optional arguments.",
        "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        "    Load a module library from <path>, while passing it module configurations and "
        "optional arguments.",
        "UNLOAD <name>",
        "    Unload a module.",
    )
