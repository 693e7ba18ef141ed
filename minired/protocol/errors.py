"""Every error text minired sends, in one place, worded exactly as Redis 7 words it."""
from __future__ import annotations


class RedisError(Exception):
    """An error reply. Raised by commands or returned as a reply value; its text is the whole line."""

    __slots__ = ("message", "counted")

    def __init__(self, message: str, counted: bool = False) -> None:
        # hiredis drops the connection on an error that spans lines, so errors are always one line.
        if "\n" in message or "\r" in message:
            message = message.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
        self.message = message
        # Already counted in INFO's error stats: a script's outcome that is the error of a
        # command it ran (Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE), so not counted again.
        self.counted = counted
        super().__init__(message)

    def __repr__(self) -> str:
        return f"RedisError({self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RedisError) and other.message == self.message

    def __hash__(self) -> int:
        return hash(self.message)


WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_FLOAT = "ERR value is not a valid float"
OVERFLOW = "ERR increment or decrement would overflow"
INCR_FLOAT_NAN = "ERR increment would produce NaN or Infinity"
NO_SUCH_KEY = "ERR no such key"
INDEX_OUT_OF_RANGE = "ERR index out of range"
DB_INDEX_OUT_OF_RANGE = "ERR DB index is out of range"
INVALID_EXPIRE = "ERR invalid expire time in '{}' command"
SAME_OBJECT = "ERR source and destination objects are the same"
OFFSET_OUT_OF_RANGE = "ERR offset is out of range"
BIT_OFFSET = "ERR bit offset is not an integer or out of range"
BIT_VALUE = "ERR bit is not an integer or out of range"
STRING_TOO_LONG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
MUST_BE_POSITIVE = "ERR value is out of range, must be positive"
TIMEOUT_NOT_FLOAT = "ERR timeout is not a float or out of range"
TIMEOUT_NEGATIVE = "ERR timeout is negative"
TIMEOUT_OUT_OF_RANGE = "ERR timeout is out of range"
TIMEOUT_NOT_INTEGER = "ERR timeout is not an integer or out of range"

# Strings and bitmaps.
DECREMENT_OVERFLOW = "ERR decrement would overflow"
BIT_ARGUMENT = "ERR The bit argument must be 1 or 0."
LCS_NOT_STRINGS = "ERR The specified keys must contain string values"
LCS_IDX_AND_LEN = "ERR If you want both the length and indexes, please just use IDX."
LCS_TOO_MUCH_MEMORY = (
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
)

# Keys and expiry.
INVALID_CURSOR = "ERR invalid cursor"
EXPIRE_UNSUPPORTED_OPTION = "ERR Unsupported option {}"
EXPIRE_NX_CONFLICT = "ERR NX and XX, GT or LT options at the same time are not compatible"
EXPIRE_GT_LT_CONFLICT = "ERR GT and LT options at the same time are not compatible"
INVALID_FIRST_DB = "ERR invalid first DB index"
INVALID_SECOND_DB = "ERR invalid second DB index"
BUSYKEY = "BUSYKEY Target key name already exists."
DUMP_PAYLOAD_INVALID = "ERR DUMP payload version or checksum are wrong"
BAD_DATA_FORMAT = "ERR Bad data format"
RESTORE_INVALID_TTL = "ERR Invalid TTL value, must be >= 0"
RESTORE_INVALID_IDLETIME = "ERR Invalid IDLETIME value, must be >= 0"
RESTORE_INVALID_FREQ = "ERR Invalid FREQ value, must be >= 0 and <= 255"
_POLICY_SWITCH_NOTE = (
    "Please note that when switching between policies at runtime LRU and LFU data will take "
    "some time to adjust."
)
OBJECT_FREQ_NOT_LFU = (
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
    + _POLICY_SWITCH_NOTE
)
OBJECT_IDLETIME_LFU = (
    "ERR An LFU maxmemory policy is selected, idle time not tracked. " + _POLICY_SWITCH_NOTE
)

# Hashes, sets and sorted sets.
HASH_NOT_INTEGER = "ERR hash value is not an integer"
HASH_NOT_FLOAT = "ERR hash value is not a float"
NAN_OR_INFINITY = "ERR value is NaN or Infinity"
VALUE_OUT_OF_RANGE = "ERR value is out of range"
VALUE_NOT_BETWEEN = "ERR value is out of range, value must between {} and {}"
NUMKEYS_NOT_POSITIVE = "ERR numkeys should be greater than 0"
NUMKEYS_EXCEED_ARGS = "ERR Number of keys can't be greater than number of args"
COUNT_NOT_POSITIVE = "ERR count should be greater than 0"
LIMIT_NEGATIVE = "ERR LIMIT can't be negative"
ZADD_XX_AND_NX = "ERR XX and NX options at the same time are not compatible"
ZADD_GT_LT_NX = "ERR GT, LT, and/or NX options at the same time are not compatible"
ZADD_INCR_SINGLE_PAIR = "ERR INCR option supports a single increment-element pair"
ZSCORE_NAN = "ERR resulting score is not a number (NaN)"
ZRANGE_SCORE_NOT_FLOAT = "ERR min or max is not a float"
ZRANGE_LEX_INVALID = "ERR min or max not valid string range item"
ZRANGE_LIMIT_NEEDS_BY = (
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
)
ZRANGE_WITHSCORES_BYLEX = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
ZSETOP_NEEDS_KEY = "ERR at least 1 input key is needed for '{}' command"
WEIGHT_NOT_FLOAT = "ERR weight value is not a float"

# Lists and blocking.
LPOS_RANK_ZERO = (
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
    "or use negative to start from the end of the list"
)
LPOS_COUNT_NEGATIVE = "ERR COUNT can't be negative"
LPOS_MAXLEN_NEGATIVE = "ERR MAXLEN can't be negative"
UNBLOCKED = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
# A blocked command when its server becomes a replica (disconnectAllBlockedClients).
UNBLOCKED_ROLE_CHANGED = ("UNBLOCKED force unblock from blocking operation, instance state "
                          "changed (master -> replica?)")
UNBLOCK_REASON = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"

UNKNOWN_COMMAND = "ERR unknown command '{}', with args beginning with: {}"
UNKNOWN_SUBCOMMAND = "ERR unknown subcommand '{}'. Try {} HELP."
WRONG_ARITY = "ERR wrong number of arguments for '{}' command"

NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
AUTH_NOT_CONFIGURED = (
    "ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?"
)
NOPROTO = "NOPROTO unsupported protocol version"

MULTI_NESTED = "ERR MULTI calls can not be nested"
EXEC_WITHOUT_MULTI = "ERR EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "ERR DISCARD without MULTI"
WATCH_IN_MULTI = "ERR WATCH inside MULTI is not allowed"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
EXECABORT_BECAUSE = "EXECABORT Transaction discarded because of: {}"
# The code of an error reply that has none of its own (Redis's addReplyError adds it; EXECABORT
# quotes the reason without it).
GENERIC = "ERR "
# A handler that raised a Python exception: minired's own (Redis has no such path); the command
# gets an error reply and the server goes on.
INTERNAL_ERROR = "ERR internal error in '{}': {}: {}"
NOREPLICAS = "NOREPLICAS Not enough good replicas to write."
# SYNC/PSYNC to a replica whose link to its master is not up (syncCommand).
NOMASTERLINK = "NOMASTERLINK Can't SYNC while not connected with my master"
# SYNC/PSYNC to a master failing over to one of its replicas (syncCommand).
NOMASTERLINK_FAILING_OVER = "NOMASTERLINK Can't SYNC while failing over"
WAIT_ON_REPLICA = ("ERR WAIT cannot be used with replica instances. Please also note that since "
                   "Redis 4.0 if a replica is configured to be writable (which is not the "
                   "default) writes to replicas are just local and are not propagated.")
# A write (or PING) after a failed background save, with stop-writes-on-bgsave-error yes and
# save points set (shared.bgsaveerr).
MISCONF_BGSAVE = ("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
                  "persist to disk. Commands that may modify the data set are disabled, because "
                  "this instance is configured to report errors during writes if RDB snapshotting "
                  "fails (stop-writes-on-bgsave-error option). Please check the Redis logs for "
                  "details about the RDB error.")
# A write (or PING) while the AOF cannot be written (writeCommandsGetDiskErrorMessage): strerror.
MISCONF_AOF = "MISCONF Errors writing to the AOF file: {}"
COMMAND_NOT_ALLOWED_IN_MULTI = "ERR Command not allowed inside a transaction"

SUBSCRIBE_CONTEXT = (
    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
    "are allowed in this context"
)

# Streams.
STREAM_ID_INVALID = "ERR Invalid stream ID specified as stream command argument"
STREAM_ID_TOO_SMALL = (
    "ERR The ID specified in XADD is equal or smaller than the target stream top item"
)
STREAM_XADD_ID_ZERO = "ERR The ID specified in XADD must be greater than 0-0"
STREAM_EXHAUSTED = (
    "ERR The stream has exhausted the last possible ID, unable to add more items"
)
STREAM_MAXLEN_NEGATIVE = "ERR The MAXLEN argument must be >= 0."
STREAM_LIMIT_NEGATIVE = "ERR The LIMIT argument must be >= 0."
STREAM_MAXLEN_MINID_TOGETHER = (
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
)
STREAM_LIMIT_WITHOUT_STRATEGY = (
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
)
STREAM_LIMIT_WITHOUT_APPROX = "ERR syntax error, LIMIT cannot be used without the special ~ option"
STREAM_XTRIM_WITHOUT_STRATEGY = "ERR syntax error, XTRIM must be called with a trimming strategy"
STREAM_BAD_START = "ERR invalid start ID for the interval"
STREAM_BAD_END = "ERR invalid end ID for the interval"
# Redis 7.0 words this the same for XREADGROUP.
STREAM_UNBALANCED = (
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
)
STREAM_ELEMENTS_TOO_LARGE = "ERR Elements are too large to be stored"
STREAM_GROUP_IN_XREAD = (
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
)
STREAM_NOACK_IN_XREAD = (
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
)
STREAM_GT_ID_IN_XREAD = (
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    "<consumer> option."
)
STREAM_BLOCK_IN_SCRIPT = "ERR {} command is not allowed with BLOCK option from scripts"
STREAM_SETID_TOO_SMALL = (
    "ERR The ID specified in XSETID is smaller than the target stream top item"
)
STREAM_ENTRIES_ADDED_NEGATIVE = "ERR entries_added must be positive"
STREAM_ENTRIES_ADDED_TOO_SMALL = (
    "ERR The entries_added specified in XSETID is smaller than the target stream length"
)
STREAM_MAXDELETED_TOO_BIG = (
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
)
# Stream consumer groups (key and group names are filled in with str.format).
STREAM_NOGROUP = "NOGROUP No such key '{}' or consumer group '{}'"
STREAM_NOGROUP_XREADGROUP = (
    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option"
)
STREAM_NOGROUP_FOR_KEY = "NOGROUP No such consumer group '{}' for key name '{}'"
STREAM_BLOCKED_GROUP_GONE = (
    "NOGROUP the consumer group this client was blocked on no longer exists"
)
STREAM_BLOCKED_KEY_GONE = "UNBLOCKED the stream key no longer exists"
STREAM_BUSYGROUP = "BUSYGROUP Consumer Group name already exists"
STREAM_XGROUP_NEEDS_KEY = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want "
    "to use the MKSTREAM option to create an empty stream automatically."
)
STREAM_ENTRIES_READ_NEGATIVE = "ERR value for ENTRIESREAD must be positive or -1"
STREAM_MISSING_GROUP = "ERR Missing GROUP option for XREADGROUP"
STREAM_DOLLAR_IN_XREADGROUP = (
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
    "would just return an empty result set."
)
STREAM_XCLAIM_MIN_IDLE = "ERR Invalid min-idle-time argument for XCLAIM"
STREAM_XAUTOCLAIM_MIN_IDLE = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
STREAM_XCLAIM_IDLE = "ERR Invalid IDLE option argument for XCLAIM"
STREAM_XCLAIM_TIME = "ERR Invalid TIME option argument for XCLAIM"
STREAM_XCLAIM_RETRYCOUNT = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
STREAM_XCLAIM_UNKNOWN_OPTION = "ERR Unrecognized XCLAIM option '{}'"
STREAM_COUNT_NOT_POSITIVE = "ERR COUNT must be > 0"
STREAM_XAUTOCLAIM_COUNT_TOO_HIGH = (
    "ERR Insufficient memory, failed allocating transient memory, COUNT too high."
)

NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."
BUSY = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
NOTBUSY = "NOTBUSY No scripts in execution right now."
UNKILLABLE = (
    "UNKILLABLE Sorry the script already executed write commands against the dataset. "
    "You can either wait the script termination or kill the server in a hard way using "
    "the SHUTDOWN NOSAVE command."
)
BUSY_FUNCTION = (
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)
# Scripting: EVAL / FCALL and what scripts meet inside redis.call.
NUMKEYS_GREATER = "ERR Number of keys can't be greater than number of args"
NUMKEYS_NEGATIVE = "ERR Number of keys can't be negative"
FCALL_BAD_NUMKEYS = "ERR Bad number of keys provided"
SCRIPT_COMPILE = "ERR Error compiling script (new function): {}"
SCRIPT_KILLED = "ERR Script killed by user with SCRIPT KILL..."
SCRIPT_RO_WITH_WRITE_FLAG = "ERR Can not execute a script with write flag using *_ro command."
REPLICA_KEYSPACE = "ERR Replica can't interact with the keyspace"
# The master's errors to a replica's first PING that the handshake goes on after (syncWithMaster):
# it asks for a password, which AUTH then gives; "operation not permitted" is older Redis's NOAUTH.
PING_AUTH_ERRORS = ("-NOAUTH", "-NOPERM", "-ERR operation not permitted")
MONITOR_DENY_BLOCKING = "ERR MONITOR isn't allowed for DENY BLOCKING client"
SCRIPT_OUT_OF_MEMORY = "ERR not enough memory"  # minired's cap on a Lua runtime
SCRIPT_OOM = "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"
SCRIPT_FLUSH_MODE = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
SCRIPT_DEBUG_IN_PIPELINE = "ERR SCRIPT DEBUG must be called outside a pipeline"
LDB_EVALSHA = "ERR Please use EVAL instead of EVALSHA for debugging"
LDB_FORK_FAILED = "ERR Fork() failed: can't run EVAL in debugging mode: {}"
SHEBANG_INVALID = "ERR Invalid script shebang"
SHEBANG_NO_ENGINE = "ERR Invalid engine in script shebang"
SHEBANG_ENGINE = "ERR Unexpected engine in script shebang: {}"
SHEBANG_FLAG = "ERR Unexpected flag in script shebang: {}"
SHEBANG_OPTION = "ERR Unknown lua shebang option: {}"
# Inside redis.call (Lua sees them as error tables; "ERR " is added like luaPushError does).
SCRIPT_CALL_NO_ARGS = "ERR Please specify at least one argument for this redis lib call"
SCRIPT_CALL_BAD_ARG = "ERR Lua redis lib command arguments must be strings or integers"
SCRIPT_CALL_UNKNOWN = "ERR Unknown Redis command called from script"
SCRIPT_CALL_ARITY = "ERR Wrong number of args calling Redis command from script"
SCRIPT_CALL_NOSCRIPT = "ERR This Redis command is not allowed from script"
SCRIPT_CALL_STALE = "ERR Can not execute the command on a stale replica"
SCRIPT_CALL_WRITE_IN_RO = "ERR Write commands are not allowed from read-only scripts."
SCRIPT_CALL_OUTSIDE = "ERR redis.call/pcall can only be called inside a script invocation"
SCRIPT_ACL_UNKNOWN = "ERR Invalid command passed to redis.acl_check_cmd()"
# Functions.
FUNCTION_NOT_FOUND = "ERR Function not found"
FUNCTION_LIBRARY_EXISTS = "ERR Library '{}' already exists"
FUNCTION_RESTORE_LIBRARY_EXISTS = "ERR Library {} already exists"
FUNCTION_EXISTS = "ERR Function {} already exists"
FUNCTION_EXISTS_IN_LIBRARY = "ERR Function already exists in the library"
FUNCTION_NONE_REGISTERED = "ERR No functions registered"
FUNCTION_BAD_NAME = (
    "ERR Library names can only contain letters, numbers, or underscores(_) and must be at "
    "least one character long"
)
FUNCTION_COMPILE = "ERR Error compiling function: {}"
FUNCTION_REGISTERING = "ERR Error registering functions: {}"
FUNCTION_LOAD_TIMEOUT = "ERR FUNCTION LOAD timeout"
FUNCTION_MISSING_METADATA = "ERR Missing library metadata"
FUNCTION_INVALID_METADATA = "ERR Invalid library metadata"
FUNCTION_ENGINE_NOT_FOUND = "ERR Engine '{}' not found"
FUNCTION_NO_NAME = "ERR Library name was not given"
FUNCTION_NAME_TWICE = "ERR Invalid metadata value, name argument was given multiple times"
FUNCTION_BAD_METADATA = "ERR Invalid metadata value given: {}"
FUNCTION_LIBRARY_NOT_FOUND = "ERR Library not found"
FUNCTION_UNKNOWN_ARGUMENT = "ERR Unknown argument {}"
FUNCTION_LOAD_UNKNOWN_OPTION = "ERR Unknown option given: {}"
FUNCTION_LIBRARYNAME_MISSING = "ERR library name argument was not given"
FUNCTION_FLUSH_MODE = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
FUNCTION_RESTORE_PAYLOAD = "ERR DUMP payload version or checksum are wrong"
FUNCTION_RESTORE_POLICY = "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
FUNCTION_RESTORE_BAD_DATA = "ERR given type is not a function"
FUNCTION_REGISTER_OUTSIDE_LOAD = "ERR redis.register_function can only be called on FUNCTION LOAD command"
FUNCTION_UNKNOWN_FLAG = "ERR unknown flag given"
FUNCTION_NO_CODE = "ERR Function code was not given"
SCRIPT_DEBUG_USAGE = "ERR Use SCRIPT DEBUG YES/SYNC/NO"
# A Python helper called from Lua failed (lua_safe): nothing of the failure may reach the script.
SCRIPT_INTERNAL_ERROR = "ERR internal error"
# End of scripting.

OOM = "OOM command not allowed when used memory > 'maxmemory'."
MAX_CLIENTS = "ERR max number of clients reached"
PROTECTED_MODE = (
    "DENIED Redis is running in protected mode because protected mode is enabled and no password "
    "is set for the default user. In this mode connections are only accepted from the loopback "
    "interface. If you want to connect from external computers to Redis you may adopt one of the "
    "following solutions: 1) Just disable protected mode sending the command 'CONFIG SET "
    "protected-mode no' from the loopback interface by connecting to Redis from the same host the "
    "server is running, however MAKE SURE Redis is not publicly accessible from internet if you do "
    "so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable "
    "the protected mode by editing the Redis configuration file, and setting the protected mode "
    "option to 'no', and then restarting the server. 3) If you started the server manually just "
    "for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication "
    "password for the default user. NOTE: You only need to do one of the above things in order "
    "for the server to start accepting connections from the outside."
)

PROTOCOL_INVALID_MULTIBULK = "ERR Protocol error: invalid multibulk length"
PROTOCOL_INVALID_BULK = "ERR Protocol error: invalid bulk length"
PROTOCOL_EXPECTED_DOLLAR = "ERR Protocol error: expected '$', got '{}'"
PROTOCOL_BIG_MBULK = "ERR Protocol error: too big mbulk count string"
PROTOCOL_BIG_BULK = "ERR Protocol error: too big bulk count string"
PROTOCOL_UNAUTHENTICATED_MULTIBULK = "ERR Protocol error: unauthenticated multibulk length"
PROTOCOL_UNAUTHENTICATED_BULK = "ERR Protocol error: unauthenticated bulk length"
PROTOCOL_BIG_INLINE = "ERR Protocol error: too big inline request"
PROTOCOL_UNBALANCED_QUOTES = "ERR Protocol error: unbalanced quotes in request"

CLOCK_BACKWARDS = "ERR the clock only moves forward"
TIME_CONTROL_DISABLED = (
    "ERR clock control is disabled; start minired with --time-control to use MINIRED ADVANCE and MINIRED CLOCK"
)
FAULT_INJECTION_DISABLED = (
    "ERR fault injection is disabled; start minired with --fault-injection to use MINIRED FAULT"
)
FAULT_SYNTAX = "ERR MINIRED FAULT ADD: {}"
FAULT_UNKNOWN_ACTION = "ERR MINIRED FAULT ADD: unknown action '{}' (one of {})"
FAULT_UNKNOWN_COMMAND = "ERR MINIRED FAULT ADD: unknown command '{}' in COMMAND"
FAULT_IN_SCRIPT_ERROR_ONLY = (
    "ERR MINIRED FAULT ADD: only ERROR applies to commands scripts call (IN-SCRIPT yes)"
)
FAULT_STALL_TOO_LONG = (
    "ERR MINIRED FAULT ADD: STALL is at most {} ms (it stops the whole server); "
    "use DELAY or HANG to wait longer")
FAULT_LOADING_MS = "ERR MINIRED FAULT LOADING needs ms >= 0"
FAULT_NUMBER = "ERR MINIRED FAULT ADD: {} must be an integer from {} to {}, got '{}'"
FAULT_NEEDS_ARGUMENTS = "ERR MINIRED FAULT ADD: {} needs {}"
FAULT_OPTION_NOT_FOR = "ERR MINIRED FAULT ADD: {} does not apply to {}"
FAULT_CONNECTION_MATCH = (
    "ERR MINIRED FAULT ADD: {} acts on new connections, before any command: "
    "only COUNT, AFTER, PROBABILITY, SEED and FOR apply"
)
FAULT_UNBOUNDED = "ERR MINIRED FAULT ADD: {} needs {} (it must end by itself)"
FAULT_SEED_ALONE = "ERR MINIRED FAULT ADD: SEED goes with PROBABILITY or JITTER"
FAULT_KILL_TYPE = "ERR MINIRED FAULT KILL-CLIENTS: TYPE is normal or pubsub"
LOADING = "LOADING Redis is loading the dataset in memory"

CONFIG_SET_UNKNOWN = "ERR Unknown option or number of arguments for CONFIG SET - '{}'"
CONFIG_SET_FAILED = "ERR CONFIG SET failed (possibly related to argument '{}') - {}"
CONFIG_SET_AOF_FAILED = "Unable to turn on AOF. Check server logs."
# (updateOOMScoreAdj, for oom-score-adj and oom-score-adj-values, when /proc refuses the write)
CONFIG_SET_OOM_FAILED = "Failed to set current oom_score_adj. Check server logs."
# (updateMaxclients: the open files limit could not be raised that far; the maxclients it allows)
CONFIG_SET_MAXCLIENTS = ("The operating system is not able to handle the specified number of "
                         "clients, try with {}")
DEBUG_NOT_ALLOWED = (
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server."
)
NO_PERSISTENCE = "ERR minired keeps data in memory only: no persistence is configured to save to"
SAVE_FAILED = "ERR"  # Redis answers a failed SAVE with a bare ERR; the reason goes to the log
BGSAVE_IN_PROGRESS = "ERR Background save already in progress"
BGSAVE_AOF_REWRITE_IN_PROGRESS = ("ERR Another child process is active (AOF?): can't BGSAVE "
                                  "right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE "
                                  "whenever possible.")
AOF_REWRITE_IN_PROGRESS = "ERR Background append only file rewriting already in progress"
DEBUG_RELOAD_OPTIONS = "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."
DEBUG_RELOAD_FAILED = "ERR Error trying to load the RDB dump"
DEBUG_LOADAOF_FAILED = "ERR Error trying to load the AOF files, check server logs."
DEBUG_NOT_HASH_TABLE = (
    "ERR The value stored at the specified key is not represented using an hash table")
DEBUG_NOT_LISTPACK = "ERR Not a listpack encoded object."
DEBUG_NOT_SDS = "ERR Not an sds encoded string."
DEBUG_NOT_QUICKLIST = "ERR Not a quicklist encoded object."
DEBUG_OUT_OF_RANGE_DB = "ERR Out of range database"
DEBUG_PACKED_THRESHOLD = "ERR argument must be a memory value bigger than 1 and smaller than 4gb"
DEBUG_PROTOCOL_RESP2_PUSH = "ERR RESP2 is not supported by this command"
DEBUG_PROTOCOL_TYPE = (
    "ERR Wrong protocol type name. Please use one of the following: "
    "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false")
DEBUG_CLIENT_EVICTION_OFF = "ERR maxmemory-clients is disabled."
DEBUG_RESTART_FAILED = "ERR failed to restart the server. Check server logs."
DEBUG_CLUSTER_ONLY = "ERR Debug option only available for cluster mode enabled setup!"
UNKNOWN_SUBCOMMAND_OR_ARITY = (
    "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP."
)


def wrong_arity(name: str) -> RedisError:
    return RedisError(WRONG_ARITY.format(name))


def unknown_command(argv: list[bytes]) -> RedisError:
    name = argv[0].decode("utf-8", "replace")
    args = "".join(f"'{a.decode('utf-8', 'replace')[:128]}' " for a in argv[1:21])
    return RedisError(UNKNOWN_COMMAND.format(name[:128], args))


def unknown_subcommand(container: str, sub: bytes) -> RedisError:
    return RedisError(UNKNOWN_SUBCOMMAND.format(sub.decode("utf-8", "replace")[:128], container.upper()))


def unknown_subcommand_or_arity(sub: bytes, container: str) -> RedisError:
    return RedisError(UNKNOWN_SUBCOMMAND_OR_ARITY.format(sub.decode("utf-8", "replace")[:128],
                                                         container.upper()))


# SORT, SORT_RO, BITOP, BITFIELD, BITFIELD_RO.
SORT_SCORE_NOT_DOUBLE = "ERR One or more scores can't be converted into double"
BITOP_NOT_SINGLE_SOURCE = "ERR BITOP NOT must be called with a single source key."
BITFIELD_INVALID_TYPE = (
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but "
    "i64 is."
)
BITFIELD_INVALID_OVERFLOW = "ERR Invalid OVERFLOW type specified"
BITFIELD_RO_GET_ONLY = "ERR BITFIELD_RO only supports the GET subcommand"


# GEOADD, GEODIST, GEOHASH, GEOPOS, GEORADIUS(_RO), GEORADIUSBYMEMBER(_RO), GEOSEARCH(STORE).
GEO_INVALID_LONLAT = "ERR invalid longitude,latitude pair {:f},{:f}"
GEO_UNSUPPORTED_UNIT = "ERR unsupported unit provided. please use M, KM, FT, MI"
GEO_NEED_NUMERIC_RADIUS = "ERR need numeric radius"
GEO_RADIUS_NEGATIVE = "ERR radius cannot be negative"
GEO_NEED_NUMERIC_WIDTH = "ERR need numeric width"
GEO_NEED_NUMERIC_HEIGHT = "ERR need numeric height"
GEO_BOX_NEGATIVE = "ERR height or width cannot be negative"
GEO_MEMBER_NOT_FOUND = "ERR could not decode requested zset member"
GEO_COUNT_NOT_POSITIVE = "ERR COUNT must be > 0"
GEO_ANY_WITHOUT_COUNT = "ERR the ANY argument requires COUNT argument"
GEO_STORE_WITH_REPLY_OPTIONS = (
    "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
GEO_FROM_REQUIRED = "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}"
GEO_BY_REQUIRED = "ERR exactly one of BYRADIUS and BYBOX can be specified for {}"


# PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.
HLL_WRONGTYPE = "WRONGTYPE Key is not a valid HyperLogLog string value."
HLL_CORRUPTED = "INVALIDOBJ Corrupted HLL object detected"
PFDEBUG_NO_SUCH_KEY = "ERR The specified key does not exist"
PFDEBUG_NOT_SPARSE = "ERR HLL encoding is not sparse"
PFDEBUG_UNKNOWN_SUBCOMMAND = "ERR Unknown PFDEBUG subcommand '{}'"
HLL_TEST_REGISTER = "TESTFAILED Register {} should be {} but is {}"
HLL_TEST_SPARSE_NOT_USED = "TESTFAILED sparse encoding not used"
HLL_TEST_DISAGREE = "TESTFAILED dense/sparse disagree"
HLL_TEST_ERROR = "TESTFAILED Too big error. card:{} abserr:{}"


# CLIENT TRACKING and CLIENT CACHING.
TRACKING_ONE_REDIRECT = "ERR A client can only redirect to a single other client"
TRACKING_NO_SUCH_REDIRECT = "ERR The client ID you want redirect to does not exist"
TRACKING_PREFIX_NEEDS_BCAST = "ERR PREFIX option requires BCAST mode to be enabled"
TRACKING_BCAST_SWITCH = (
    "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
    "then re-enabling it with a different mode."
)
TRACKING_OPTS_WITH_BCAST = "ERR OPTIN and OPTOUT are not compatible with BCAST"
TRACKING_OPTIN_AND_OPTOUT = "ERR You can't specify both OPTIN mode and OPTOUT mode"
TRACKING_OPT_SWITCH = (
    "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
    "then re-enabling it with a different mode."
)
TRACKING_PREFIX_OVERLAPS_EXISTING = (
    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must "
    "not overlap."
)
TRACKING_PREFIX_OVERLAPS_GIVEN = (
    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client "
    "must not overlap."
)
CACHING_NEEDS_TRACKING = (
    "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
    "OPTOUT mode enabled"
)
CACHING_YES_NEEDS_OPTIN = (
    "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
CACHING_NO_NEEDS_OPTOUT = (
    "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")

# ACL: ACL SETUSER/GETUSER/DELUSER/DRYRUN/LOG/GENPASS/LOAD/SAVE, AUTH against users, and the
# NOPERM permission checks (ACL).
ACL_RULE_ERROR = "ERR Error in ACL SETUSER modifier '{}': {}"
ACL_RULE_UNKNOWN_COMMAND = "Unknown command or category name in ACL"
ACL_RULE_SYNTAX = "Syntax error"
ACL_RULE_KEYS_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns")
ACL_RULE_CHANNELS_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels")
ACL_RULE_NO_SUCH_PASSWORD = "The password you are trying to remove from the user does not exist"
ACL_RULE_BAD_HASH = ("The password hash must be exactly 64 characters and contain only "
                     "lowercase hexadecimal characters")
ACL_RULE_FIRSTARG_OF_SUBCOMMAND = "Allowing first-arg of a subcommand is not supported"
ACL_USERNAME_SPACES = "ERR Usernames can't contain spaces or null characters"
ACL_UNMATCHED_PARENTHESIS = "ERR Unmatched parenthesis in acl selector starting at '{}'."
ACL_DELETE_DEFAULT = "ERR The 'default' user cannot be removed"
ACL_NO_SUCH_USER = "ERR Can not find user '{}' in ACL"
ACL_DRYRUN_NO_USER = "ERR User '{}' not found"
ACL_DRYRUN_NO_COMMAND = "ERR Command '{}' not found"
ACL_DRYRUN_DENIED_COMMAND = "This user has no permissions to run the '{}' command"
ACL_DRYRUN_DENIED_KEY = "This user has no permissions to access the '{}' key"
ACL_DRYRUN_DENIED_CHANNEL = "This user has no permissions to access the '{}' channel"
ACL_NO_FILE = (
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "Redis configuration file set) in order to store users in the Redis configuration.")
ACL_SAVE_FAILED = ("ERR There was an error trying to save the ACLs. Please check the server "
                   "logs for more information")
ACL_GENPASS_BITS = ("ERR ACL GENPASS argument must be the number of bits for the output "
                    "password, a positive number up to 4096")
ACL_CAT_ARITY = "ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP."
ACL_UNKNOWN_CATEGORY = "ERR Unknown category '{}'"
NOPERM_COMMAND = "NOPERM this user has no permissions to run the '{}' command"
NOPERM_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"
NOPERM_CHANNEL = ("NOPERM this user has no permissions to access one of the channels used as "
                  "arguments")
NOPERM_EXEC = (
    "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
    "call. This command is no longer allowed for the following reason: {}")
NOPERM_EXEC_COMMAND = "no permission to execute the command or subcommand"
NOPERM_EXEC_KEY = "no permission to touch the specified keys"
NOPERM_EXEC_CHANNEL = "no permission to access one of the channels used as arguments"
SCRIPT_ACL_COMMAND = "ERR The user executing the script can't run this command or subcommand"
SCRIPT_ACL_KEY = ("ERR The user executing the script can't access at least one of the keys "
                  "mentioned in the command arguments")
SCRIPT_ACL_CHANNEL = ("ERR The user executing the script can't publish to the channel "
                      "mentioned in the command")
CLIENT_KILL_NO_USER = "ERR No such user '{}'"
CLIENT_NO_SUCH_CLIENT = "ERR No such client"
CLIENT_INVALID_ID = "ERR Invalid client ID"
CLIENT_KILL_ID_NOT_POSITIVE = "ERR client-id should be greater than 0"
CLIENT_UNKNOWN_TYPE = "ERR Unknown client type '{}'"
CLIENT_NAME_INVALID = "ERR Client names cannot contain spaces, newlines or special characters."
CLIENT_SETINFO_UNKNOWN_OPTION = "ERR Unrecognized option '{}'"
CLIENT_SETINFO_INVALID = "ERR {} cannot contain spaces, newlines or special characters."

# HELLO.
HELLO_PROTOCOL_NOT_INTEGER = "ERR Protocol version is not an integer or out of range"
HELLO_SYNTAX = "ERR Syntax error in HELLO option '{}'"
HELLO_NOAUTH = ("NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
                "the RESP protocol version at the same time")

# COMMAND GETKEYS / GETKEYSANDFLAGS.
GETKEYS_INVALID_COMMAND = "ERR Invalid command specified"
GETKEYS_NO_KEYS = "ERR The command has no key arguments"
GETKEYS_BAD_ARITY = "ERR Invalid number of arguments specified for command"
GETKEYS_INVALID_ARGUMENTS = "ERR Invalid arguments specified for command"

# SHUTDOWN, CONFIG REWRITE, SLOWLOG GET, ACL LOAD.
SHUTDOWN_NOT_IN_PROGRESS = "ERR No shutdown in progress."
SHUTDOWN_FAILED = "ERR Errors trying to SHUTDOWN. Check logs."
SHUTDOWN_DENY_BLOCKING = "ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client"
SLOWLOG_COUNT_RANGE = "ERR count should be greater than or equal to -1"
ACL_LOAD_FAILED = "ERR {}"  # the problems the ACL file has, as Redis lists them

# LATENCY GRAPH, LATENCY HISTOGRAM, MEMORY STATS/DOCTOR/MALLOC-STATS.
LATENCY_NO_SAMPLES = "ERR No samples available for event '{}'"

# CLIENT PAUSE.
CLIENT_PAUSE_MODE = "ERR CLIENT PAUSE mode must be WRITE or ALL"

# Cluster mode.
CLUSTER_DISABLED = "ERR This instance has cluster support disabled"
CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
# Redirections (clusterRedirectClient): the slot and the address of the node to ask.
CLUSTER_MOVED = "MOVED {} {}"
CLUSTER_ASK = "ASK {} {}"
CLUSTER_TRYAGAIN = "TRYAGAIN Multiple keys request during rehashing of slot"
CLUSTER_DOWN = "CLUSTERDOWN The cluster is down"
CLUSTER_SLOT_UNBOUND = "CLUSTERDOWN Hash slot not served"
CLUSTER_INVALID_SLOT = "ERR Invalid slot"
CLUSTER_INVALID_SLOT_OR_COUNT = "ERR Invalid slot or number of keys"
SCRIPT_NON_LOCAL_KEY = "ERR Script attempted to access a non local key in a cluster node"
SCRIPT_CLUSTER_DOWN = "ERR Script attempted to execute a command while the cluster is down"
SCRIPT_NO_CLUSTER = "ERR Can not run script on cluster, 'no-cluster' flag is set."
SELECT_IN_CLUSTER = "ERR SELECT is not allowed in cluster mode"
SWAPDB_IN_CLUSTER = "ERR SWAPDB is not allowed in cluster mode"
MOVE_IN_CLUSTER = "ERR MOVE is not allowed in cluster mode"
COPY_DB_IN_CLUSTER = "ERR Copying to another database is not allowed in cluster mode"
SORT_BY_IN_CLUSTER = "ERR BY option of SORT denied in Cluster mode."
SORT_GET_IN_CLUSTER = "ERR GET option of SORT denied in Cluster mode."
SORT_BY_ACL = "ERR BY option of SORT denied due to insufficient ACL permissions."
SORT_GET_ACL = "ERR GET option of SORT denied due to insufficient ACL permissions."
CLUSTER_SLOT_OUT_OF_RANGE = "ERR Invalid or out of range slot"
CLUSTER_UNKNOWN_NODE = "ERR I don't know about node {}"
SETSLOT_UNKNOWN_NODE = "ERR Unknown node {}"
SETSLOT_NOT_OWNER = "ERR I'm not the owner of hash slot {}"
SETSLOT_ALREADY_OWNER = "ERR I'm already the owner of hash slot {}"
SETSLOT_STILL_HOLDS_KEYS = ("ERR Can't assign hashslot {} to a different node while I still hold "
                            "keys for this hash slot.")
SETSLOT_SYNTAX = "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"
SETSLOT_ON_REPLICA = "ERR Please use SETSLOT only with masters."
CLUSTER_TARGET_NOT_MASTER = "ERR Target node is not a master"
# MINIRED CLUSTER MIGRATE to the node that already serves the slot (minired's own command).
CLUSTER_ALREADY_SERVED = "ERR slot {} is already served by {}"
CLUSTER_NOT_A_MASTER = "ERR The specified node is not a master"
CLUSTER_MEET_OUTSIDE = "ERR CLUSTER MEET reaches only the cluster nodes of this minired process"
CLUSTER_MEET_TWO_LAYOUTS = "ERR CLUSTER MEET of two clusters that both serve slots is not supported by minired"
CLUSTER_INVALID_PORT = "ERR Invalid TCP base port specified: {}"
CLUSTER_SLOT_RANGE_ORDER = "ERR start slot number {} is greater than end slot number {}"
CLUSTER_SLOT_BUSY = "ERR Slot {} is already busy"
CLUSTER_SLOT_REPEATED = "ERR Slot {} specified multiple times"
CLUSTER_REPLICATE_NOT_EMPTY = "ERR To set a master the node must be empty and without assigned slots."
CLUSTER_REPLICATE_REPLICA = "ERR I can only replicate a master, not a replica."
CLUSTER_REPLICATE_MYSELF = "ERR Can't replicate myself"
TRACKING_ON_REPLICA = "ERR CLIENT TRACKING on a cluster replica node is not supported by minired"
READONLY_REPLICA = "READONLY You can't write against a read only replica."
MIGRATE_KEYS_NEED_EMPTY_KEY = (
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
MIGRATE_TARGET_ERROR = "ERR Target instance replied with error: {}"
MIGRATE_CONNECT = "IOERR error or timeout connecting to the client"
MIGRATE_IO = "IOERR error or timeout {} to target instance"  # writing / reading
CLUSTER_LAYOUT_CONTROL = (
    "ERR cluster control is disabled; start minired with --cluster-control to use CLUSTER {}")
CLUSTER_UNSUPPORTED = "ERR CLUSTER {} is not supported by minired"
CLUSTER_CONTROL_DISABLED = (
    "ERR cluster control is disabled; start minired with --cluster-control to use MINIRED CLUSTER")
CLUSTER_NO_SUCH_NODE = "ERR no cluster node listens on port {}"

# Replication, and modules, which minired does not have.
INVALID_MASTER_PORT = "ERR Invalid master port"
REPLCONF_UNRECOGNIZED = "ERR Unrecognized REPLCONF option: {}"
REPLCONF_FILTER_MISSING = "ERR Missing rdb-filter-only values"
REPLCONF_FILTER_UNSUPPORTED = "ERR Unsupported rdb-filter-only option: {}"
READONLY_REPLICA = "READONLY You can't write against a read only replica."
MASTERDOWN = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
REPLICAOF_ALREADY = "OK Already connected to specified master"
REPLICAOF_IN_CLUSTER = "ERR REPLICAOF not allowed in cluster mode."
REPLICAOF_WHILE_FAILING_OVER = "ERR REPLICAOF not allowed while failing over."
REPLCONF_IP_TOO_LONG = "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes"
# FAILOVER (failoverCommand), and the PSYNC ... FAILOVER its target receives (syncCommand).
FAILOVER_IN_CLUSTER = "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead."
FAILOVER_NOT_IN_PROGRESS = "ERR No failover in progress."
FAILOVER_TIMEOUT_NOT_POSITIVE = "ERR FAILOVER timeout must be greater than 0"
FAILOVER_ALREADY = "ERR FAILOVER already in progress."
FAILOVER_ON_REPLICA = "ERR FAILOVER is not valid when server is a replica."
FAILOVER_NO_REPLICAS = "ERR FAILOVER requires connected replicas."
FAILOVER_FORCE_NEEDS_TARGET = (
    "ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
FAILOVER_TARGET_NOT_REPLICA = "ERR FAILOVER target HOST and PORT is not a replica."
PSYNC_FAILOVER_TO_MASTER = "ERR PSYNC FAILOVER can't be sent to a master."
PSYNC_FAILOVER_REPLID = "ERR PSYNC FAILOVER replid must match my replid."
MODULE_NOT_ALLOWED = (
    "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")
MODULE_LOAD_FAILED = "ERR Error loading the extension. Please check the server logs."
MODULE_LOADEX_ARGUMENTS = "ERR Error parsing load arguments"
MODULE_NOT_LOADED = "ERR Error unloading module: no such module with that name"

# CONFIG REWRITE
NO_CONFIG_FILE = "ERR The server is running without a config file"
REWRITE_FAILED = "ERR Rewriting config file: {}"
DEBUG_REWRITE_FAILED = "ERR CONFIG-REWRITE-FORCE-ALL failed: {}"
