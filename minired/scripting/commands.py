"""Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT ..., FCALL, FCALL_RO, FUNCTION ...

The work happens in minired/scripting; these handlers parse arguments and reply.
"""
from __future__ import annotations

import cython

from minired.engine.client import Client
from minired.engine.table import command, container_command, help_reply, keys_after_numkeys
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK
from minired.scripting.feature import engine_of

G = "scripting"
_SCRIPT_RUN_FLAGS = "noscript stale skip_monitor no_mandatory_keys"
# EVAL, EVALSHA and FCALL may replicate (hidden in COMMAND INFO, as in Redis): a MONITOR client,
# a replica to Redis, may not run them.
_SCRIPT_RUN_MAY_REPLICATE = _SCRIPT_RUN_FLAGS + " may_replicate"


def _engine(server):
    """The server's script engine, for every handler here: looked up inline because engine_of
    (scripting/feature.py, loaded at the first script) runs as Python, a frame of the interpreter
    on every EVALSHA."""
    engine = server.features.scripting
    return engine if engine is not None else engine_of(server)


# --- EVAL family ---------------------------------------------------------------------------------

@command("eval", arity=-3, flags=_SCRIPT_RUN_MAY_REPLICATE, group=G,
         key_finder=keys_after_numkeys(2))
@cython.locals(c=Client, argv=list)
def eval_(c, argv):
    """Execute a Lua script server side"""
    return _engine(c.server).eval(c, argv, False, False)  # by_sha, read_only


@command("eval_ro", arity=-3, flags="readonly " + _SCRIPT_RUN_FLAGS, group=G,
         key_finder=keys_after_numkeys(2))
def eval_ro(c, argv):
    """Execute a read-only Lua script server side"""
    return _engine(c.server).eval(c, argv, False, True)  # by_sha, read_only


@command("evalsha", arity=-3, flags=_SCRIPT_RUN_MAY_REPLICATE, group=G,
         key_finder=keys_after_numkeys(2))
@cython.locals(c=Client, argv=list)
def evalsha(c, argv):
    """Execute a Lua script server side"""
    return _engine(c.server).eval(c, argv, True, False)  # by_sha, read_only


@command("evalsha_ro", arity=-3, flags="readonly " + _SCRIPT_RUN_FLAGS, group=G,
         key_finder=keys_after_numkeys(2))
def evalsha_ro(c, argv):
    """Execute a read-only Lua script server side"""
    return _engine(c.server).eval(c, argv, True, True)  # by_sha, read_only


# --- SCRIPT --------------------------------------------------------------------------------------

container_command("script", G, summary="A container for Lua scripts management commands")


@command("load", arity=3, flags="noscript stale", parent="script", group=G)
def script_load(c, argv):
    """Load a Lua script into the scripts cache, without executing it"""
    return _engine(c.server).load(argv[2]).sha


@command("exists", arity=-3, flags="noscript", parent="script", group=G)
def script_exists(c, argv):
    """Check existence of scripts in the script cache"""
    scripts = _engine(c.server).scripts
    return [1 if sha.lower() in scripts else 0 for sha in argv[2:]]


@command("flush", arity=-2, flags="noscript", parent="script", group=G)
def script_flush(c, argv):
    """Remove all the scripts from the script cache"""
    if len(argv) > 3 or (len(argv) == 3 and argv[2].lower() not in (b"sync", b"async")):
        raise RedisError(errors.SCRIPT_FLUSH_MODE)
    _engine(c.server).flush()
    return OK


@command("kill", arity=2, flags="noscript allow_busy", parent="script", group=G)
def script_kill(c, argv):
    """Kill the script currently in execution"""
    return _engine(c.server).kill(is_eval=True)


@command("debug", arity=3, flags="noscript", parent="script", group=G)
def script_debug(c, argv):
    """Set the debug mode for executed scripts"""
    if c.in_exec:  # (Redis: while replies wait in the client's buffer)
        raise RedisError(errors.SCRIPT_DEBUG_IN_PIPELINE)
    mode = argv[2].lower()
    if mode not in (b"no", b"yes", b"sync"):
        raise RedisError(errors.SCRIPT_DEBUG_USAGE)
    engine = _engine(c.server)
    if engine.debugger is None:
        from minired.scripting.debugger import LuaDebugger

        engine.debugger = LuaDebugger(engine)
    engine.debugger.set_mode(c, mode)
    return OK


@command("help", arity=2, flags="loading stale", parent="script", group=G)
def script_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply("SCRIPT",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
    )


# --- FCALL / FUNCTION ----------------------------------------------------------------------------

@command("fcall", arity=-3, flags=_SCRIPT_RUN_MAY_REPLICATE, group=G,
         key_finder=keys_after_numkeys(2))
def fcall(c, argv):
    """Invoke a function"""
    return _engine(c.server).functions.fcall(c, argv, read_only=False)


@command("fcall_ro", arity=-3, flags="readonly " + _SCRIPT_RUN_FLAGS, group=G,
         key_finder=keys_after_numkeys(2))
def fcall_ro(c, argv):
    """Invoke a read-only function"""
    return _engine(c.server).functions.fcall(c, argv, read_only=True)


container_command("function", G, summary="A container for function commands")


@command("load", arity=-3, flags="write denyoom noscript", parent="function", group=G)
def function_load(c, argv):
    """Create a function with the given arguments (name, code, description)"""
    replace = False
    index = 2
    while index < len(argv) - 1:
        if argv[index].lower() != b"replace":
            raise RedisError(errors.FUNCTION_LOAD_UNKNOWN_OPTION.format(
                argv[index].decode("utf-8", "replace")))
        replace = True
        index += 1
    if index != len(argv) - 1:
        raise RedisError(errors.FUNCTION_NO_CODE)
    return _engine(c.server).functions.load(argv[index], replace)


@command("delete", arity=3, flags="write noscript", parent="function", group=G)
def function_delete(c, argv):
    """Delete a function by name"""
    _engine(c.server).functions.delete(argv[2])
    return OK


@command("flush", arity=-2, flags="write noscript", parent="function", group=G)
def function_flush(c, argv):
    """Deleting all functions"""
    if len(argv) > 3:
        raise errors.unknown_subcommand_or_arity(argv[1], "function")
    if len(argv) == 3 and argv[2].lower() not in (b"sync", b"async"):
        raise RedisError(errors.FUNCTION_FLUSH_MODE)
    _engine(c.server).functions.flush()
    return OK


@command("list", arity=-2, flags="noscript", parent="function", group=G)
def function_list(c, argv):
    """List information about all the functions"""
    pattern = None
    with_code = False
    index = 2
    while index < len(argv):
        option = argv[index].lower()
        if option == b"withcode" and not with_code:
            with_code = True
            index += 1
        elif option == b"libraryname" and pattern is None:
            if index + 1 >= len(argv):
                raise RedisError(errors.FUNCTION_LIBRARYNAME_MISSING)
            pattern = argv[index + 1]
            index += 2
        else:
            raise RedisError(errors.FUNCTION_UNKNOWN_ARGUMENT.format(argv[index].decode("utf-8", "replace")))
    return _engine(c.server).functions.list(pattern, with_code)


@command("dump", arity=2, flags="noscript", parent="function", group=G)
def function_dump(c, argv):
    """Dump all functions into a serialized binary payload"""
    return _engine(c.server).functions.dump()


@command("restore", arity=-3, flags="write denyoom noscript", parent="function", group=G)
def function_restore(c, argv):
    """Restore all the functions on the given payload"""
    if len(argv) > 4:
        raise errors.unknown_subcommand_or_arity(argv[1], "function")
    policy = argv[3].lower() if len(argv) == 4 else b"append"
    _engine(c.server).functions.restore(argv[2], policy)
    return OK


@command("kill", arity=2, flags="noscript allow_busy", parent="function", group=G)
def function_kill(c, argv):
    """Kill the function currently in execution."""
    return _engine(c.server).kill(is_eval=False)


@command("stats", arity=2, flags="noscript allow_busy", parent="function", group=G)
def function_stats(c, argv):
    """Return information about the function currently running (name, description, duration)"""
    return _engine(c.server).functions.stats()


@command("help", arity=2, flags="loading stale", parent="function", group=G)
def function_help(c, argv):
    """Show helpful text about the different subcommands"""
    return help_reply("FUNCTION",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
    )
