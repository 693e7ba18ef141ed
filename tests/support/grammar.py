"""Random Redis commands generated from Redis 7.0's own `COMMAND DOCS` argument trees.

Real Redis describes every command's arguments as a tree (key / string / integer / double /
pattern / unix-time / pure-token leaves; oneof and block nodes; optional, multiple and
multiple_token flags). `load_grammars` turns that reply into one `CommandGrammar` per command or
subcommand, and `CommandGenerator` walks a grammar to produce mostly-valid argv lists whose
values come from small pools, so that commands keep hitting the same keys and members, plus a
few deliberately wrong inputs (error paths are where fidelity breaks most).

bench/grammar_fuzz.py runs this for minutes; tests/core/test_grammar_diff.py runs a short fixed
version. The comparison side lives in tests/support/grammar_diff.py.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

# Commands whose replies cannot be compared with real Redis, or whose effects reach beyond one
# sequence's keys. Names are lower-case; "container" excludes all its subcommands.
EXCLUDED: dict[str, str] = {
    "randomkey": "picks a random key",
    "time": "wall clock",
    "lastsave": "wall clock",
    "info": "server-specific counters and versions",
    "client": "connection ids, addresses and ages",
    "debug": "server internals",
    "monitor": "turns the connection into a feed",
    "shutdown": "stops the server",
    "sync": "replication", "psync": "replication", "replconf": "replication",
    "replicaof": "replication", "slaveof": "replication", "failover": "replication",
    "wait": "replication acknowledgements",
    "cluster": "cluster mode is off", "readonly": "cluster only", "readwrite": "cluster only",
    "asking": "cluster only",
    "module": "modules",
    "acl|cat": "ACL is server configuration (only ACL WHOAMI is compared)",
    "acl|deluser": "ACL", "acl|dryrun": "ACL", "acl|genpass": "random password",
    "acl|getuser": "ACL", "acl|list": "ACL", "acl|load": "ACL", "acl|log": "ACL",
    "acl|save": "ACL", "acl|setuser": "ACL", "acl|users": "ACL", "acl|help": "ACL",
    "latency": "timing samples", "slowlog": "timing samples",
    "memory": "allocator-specific sizes",
    "object|freq": "LFU clock", "object|idletime": "LRU clock",
    # A documented difference (docs/differences.md): minired judges a string's encoding by what it holds,
    # Redis by how the value was made (raw after SETRANGE/APPEND, embstr from INCRBYFLOAT).
    "object|encoding": "encoding history", "object|refcount": "encoding history",
    "config|set": "changes the shared server", "config|resetstat": "server counters",
    "config|rewrite": "needs a config file",
    "save": "persistence", "bgsave": "persistence", "bgrewriteaof": "persistence",
    "swapdb": "swaps whole databases under other connections",
    "select": "per-connection state",
    "blpop": "blocks", "brpop": "blocks", "brpoplpush": "blocks", "blmove": "blocks",
    "bzpopmin": "blocks", "bzpopmax": "blocks", "blmpop": "blocks", "bzmpop": "blocks",
    "subscribe": "push mode", "psubscribe": "push mode", "ssubscribe": "push mode",
    "unsubscribe": "push mode", "punsubscribe": "push mode", "sunsubscribe": "push mode",
    "multi": "transactions are tested elsewhere", "exec": "transactions",
    "discard": "transactions", "watch": "transactions", "unwatch": "transactions",
    "quit": "closes the connection", "reset": "connection state", "hello": "protocol switch",
    "auth": "connection state",
    "eval": "scripts are tested elsewhere", "eval_ro": "scripts", "evalsha": "scripts",
    "evalsha_ro": "scripts", "fcall": "scripts", "fcall_ro": "scripts", "script": "scripts",
    "function": "scripts",
    "dump": "payload encoding", "restore": "payload encoding", "restore-asking": "payload",
    "migrate": "network",
    "lolwut": "version art",
    "command|count": "counts commands minired does not implement",
    "command|list": "lists commands minired does not implement",
    "command|info": "tested in test_command_introspection",
    "command|docs": "tested in test_command_introspection",
    "command|help": "tested in test_command_introspection",
    "pfdebug": "HyperLogLog internals", "pfselftest": "HyperLogLog internals",
}

# Argument subtrees never generated, by (command, argument name): options that block.
DROPPED_ARGUMENTS = {("xread", "milliseconds"), ("xreadgroup", "milliseconds"),
                     # XADD's `*` makes time-based IDs; explicit IDs and `<ms>-*` stay.
                     ("xadd", "auto_id")}

# Keys set up before every sequence (tests/support/grammar_diff.py SETUP), by type.
KEYS_BY_TYPE = {
    "string": ["str", "int"],
    "list": ["list"],
    "hash": ["hash"],
    "set": ["set", "set2", "intset"],
    "zset": ["zset", "zset2", "lexzset"],
    "stream": ["stream"],
}
FRESH_KEYS = ["k1", "k2"]
ALL_KEYS = [k for keys in KEYS_BY_TYPE.values() for k in keys] + FRESH_KEYS
GROUP_KEY_TYPE = {"string": "string", "bitmap": "string", "hyperloglog": "string",
                  "list": "list", "hash": "hash", "set": "set", "sorted-set": "zset",
                  "geo": "zset", "stream": "stream"}
DESTINATION_NAMES = {"destination", "dst", "destkey", "newkey"}

SMALL_INTS = ["0", "1", "2", "3", "-1", "-2", "5", "10"]
EDGE_INTS = ["9223372036854775807", "-9223372036854775808", "9223372036854775808",
             "1.5", "abc", ""]
DOUBLES = ["0", "1", "1.5", "-2.5", "3", "inf", "-inf", "+inf", "1e300", "-1e300"]
# No out-of-range values such as 1e400: parsing one leaves errno at ERANGE in Redis 7.0, and its
# SORT tests errno without clearing it, so every later numeric SORT fails there.
EDGE_DOUBLES = ["nan", "abc", "", "0x10", "1.5e", "1e"]
MEMBERS = ["a", "b", "c", "d", "f1", "f2", "1", "2"]
STRINGS = ["a", "b", "v", "1", "hello", "", "-3", "10"]
SCORE_BOUNDS = ["-inf", "+inf", "inf", "(1", "1", "2", "(2", "0", "1.5", "(inf", "abc"]
LEX_BOUNDS = ["-", "+", "[a", "(a", "[b", "(c", "[z", "a"]
STREAM_IDS = ["1-1", "2-1", "3-1", "5-1", "5-*", "0-1", "9", "0-0", "1-0",
              "18446744073709551615-18446744073709551615", "abc"]
RANGE_IDS = ["-", "+", "1-1", "(1-1", "2", "3-1", "0", "(3-1", "abc"]

# Pools by argument name, for names whose meaning the type alone does not tell.
NAMED_POOLS: dict[str, list[str]] = {
    "seconds": ["0", "-1", "100", "100000"],
    "milliseconds": ["0", "-1", "100000", "100000000"],
    "unix-time-seconds": ["1", "0", "-5", "4102444800"],
    "unix-time-milliseconds": ["1", "4102444800000"],
    "element": MEMBERS, "member": MEMBERS, "member1": MEMBERS, "member2": MEMBERS,
    "field": MEMBERS, "pivot": MEMBERS,
    "value": ["v", "hello", "10", "-3", "1.5", "", "a"],
    "start": ["0", "1", "2", "-1", "-2", "3", "10", "-100"],
    "stop": ["0", "1", "2", "-1", "-2", "3", "10", "-100"],
    "end": ["0", "1", "2", "-1", "-2", "3", "10", "-100"],
    "index": ["0", "1", "2", "-1", "-2", "3", "10", "-100"],
    "rank": ["1", "2", "-1", "-2", "0"],
    "offset": ["0", "1", "2", "5", "7", "-1"],
    "bit": ["0", "1", "2"],
    "count": ["0", "1", "2", "3", "-1", "10"],
    "num-matches": ["0", "1", "2", "-1"],
    "len": ["0", "1", "2", "10", "-1"],
    "limit": ["0", "1", "2", "-1"],
    "db": ["0", "1", "16"], "destination-db": ["0", "1", "16"],
    "cursor": ["0", "0", "0", "1", "abc"],
    # g1 and its consumer c1 exist after SETUP; g2 and c2 mostly do not.
    "group": ["g1", "g1", "g1", "g2"], "groupname": ["g1", "g1", "g1", "g2"],
    "consumer": ["c1", "c1", "c2"], "consumername": ["c1", "c1", "c2"],
    "id": STREAM_IDS,
    "min-idle-time": ["0", "3600000"], "ms": ["0", "3600000"],
    "threshold": ["0", "1", "2", "3-1", "5-1", "10"],
    "last-id": ["5-1", "100-1", "0-0", "3-1", "1-1"],
    "max_deleted_entry_id": ["5-1", "0-0", "2-1"],
    "entries_added": ["0", "3", "5", "100", "-1"], "entries_read": ["0", "3", "5", "-1"],
    "weight": ["1", "2", "0", "-1", "1.5", "inf"],
    "parameter": ["maxmemory", "hash-max-listpack-entries", "list-max-listpack-size",
                  "set-max-intset-entries", "zset-max-listpack-entries", "appendonly",
                  "stream-node-max-entries", "maxmemory-policy", "notaparameter",
                  "*max-listpack*"],
    "channel": ["ch1", "ch2"], "shardchannel": ["ch1", "ch2"],
    "message": ["hi", ""],
    "type": ["string", "list", "hash", "set", "zset", "stream", "nosuchtype"],
}
# The same argument name means different things in different commands.
COMMAND_POOLS: dict[tuple[str, str], list[str]] = {
    ("xrange", "start"): RANGE_IDS, ("xrange", "end"): RANGE_IDS,
    ("xrevrange", "start"): RANGE_IDS, ("xrevrange", "end"): RANGE_IDS,
    ("xpending", "start"): RANGE_IDS, ("xpending", "end"): RANGE_IDS,
    ("xautoclaim", "start"): ["0-0", "0", "2-1", "abc"],
    ("xread", "id"): ["0", "$", "1-1", "0-0", "3-1"],
    ("xreadgroup", "id"): [">", ">", "0", "1-1", "$"],
    ("xgroup|create", "id"): ["0", "1-1", "$"], ("xgroup|setid", "id"): ["0", "1-1", "3-1"],
    ("setbit", "value"): ["0", "1", "1", "0", "2"], ("bitpos", "bit"): ["0", "1", "1", "2"],
    ("zrange", "start"): SCORE_BOUNDS + LEX_BOUNDS + SMALL_INTS,
    ("zrange", "stop"): SCORE_BOUNDS + LEX_BOUNDS + SMALL_INTS,
    ("zrangestore", "min"): SCORE_BOUNDS + LEX_BOUNDS + SMALL_INTS,
    ("zrangestore", "max"): SCORE_BOUNDS + LEX_BOUNDS + SMALL_INTS,
}
# Counts of the random-member commands: a huge negative count asks both servers for a reply
# that size, so only LONG_MIN (an error in both) stands for the edge.
KEY_EXTRACTORS = {"command|getkeys", "command|getkeysandflags"}
RANDOM_COUNT_COMMANDS = {"srandmember", "hrandfield", "zrandmember", "spop"}
RANDOM_COUNTS = ["0", "1", "2", "3", "10", "-1", "-3", "-10", "abc", "-9223372036854775808"]


@dataclass
class Argument:
    name: str
    type: str
    token: str | None = None
    optional: bool = False
    multiple: bool = False
    multiple_token: bool = False
    children: list["Argument"] = field(default_factory=list)


@dataclass
class CommandGrammar:
    name: str  # lower case; "object|encoding" for a subcommand
    words: list[str]  # the command's own words: ["OBJECT", "ENCODING"]
    group: str
    arguments: list[Argument]


@dataclass
class Word:
    """One generated argv element, with the name of the argument it stands for."""
    name: str
    text: str


def _pairs(flat: list) -> dict:
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in zip(flat[::2], flat[1::2])}


def _parse_argument(raw: list) -> Argument:
    fields = _pairs(raw)
    flags = {bytes(f).decode() for f in fields.get("flags", [])}
    token = fields.get("token")
    return Argument(
        name=fields["name"].decode(), type=fields["type"].decode(),
        token=token.decode() if token is not None else None,
        optional="optional" in flags, multiple="multiple" in flags,
        multiple_token="multiple_token" in flags,
        children=[_parse_argument(a) for a in fields.get("arguments", [])])


def parse_docs(docs_reply: list) -> dict[str, CommandGrammar]:
    """COMMAND DOCS (RESP2: a flat name/body list) -> grammars of commands and subcommands.

    Containers (OBJECT, XINFO ...) are left out: only their subcommands take arguments."""
    grammars: dict[str, CommandGrammar] = {}
    for raw_name, raw_body in zip(docs_reply[::2], docs_reply[1::2]):
        name, body = raw_name.decode().lower(), _pairs(raw_body)
        if "subcommands" in body:
            for sub_name, sub_body in zip(body["subcommands"][::2], body["subcommands"][1::2]):
                full = sub_name.decode().lower()
                sub = _pairs(sub_body)
                grammars[full] = CommandGrammar(
                    full, [w.upper() for w in full.split("|")], sub["group"].decode(),
                    [_parse_argument(a) for a in sub.get("arguments", [])])
            continue
        grammars[name] = CommandGrammar(name, [name.upper()], body["group"].decode(),
                                        [_parse_argument(a) for a in body.get("arguments", [])])
    return grammars


def load_grammars(client) -> dict[str, CommandGrammar]:
    """Ask a real Redis (a RawClient) for COMMAND DOCS once."""
    return parse_docs(client.call("COMMAND", "DOCS"))


def exclusion_reason(name: str) -> str | None:
    return EXCLUDED.get(name) or EXCLUDED.get(name.split("|")[0])


class CommandGenerator:
    """Random argv lists for one grammar; all randomness comes from the given Random."""

    def __init__(self, rng: random.Random, grammars: dict[str, CommandGrammar],
                 inner_names: list[str], wrong_input_rate: float = 0.1) -> None:
        self.rng = rng
        self.grammars = grammars
        self.inner_names = inner_names  # commands that COMMAND GETKEYS is asked about
        self.wrong_input_rate = wrong_input_rate

    def generate(self, grammar: CommandGrammar) -> list[str]:
        words: list[Word] = [Word("command", w) for w in grammar.words]
        if grammar.name in KEY_EXTRACTORS:
            # The docs give COMMAND GETKEYS no arguments: it takes a whole other command.
            inner = self.grammars[self.rng.choice(self.inner_names)]
            words += [Word("arg", w) for w in self.generate(inner)]
        for argument in grammar.arguments:
            self._emit(grammar, argument, words)
        self._fix_counts(grammar, words)
        self._fix_range_kinds(grammar, words)
        argv = [w.text for w in words]
        if self.rng.random() < self.wrong_input_rate:
            argv = self._break(grammar, words)
        return argv

    # -- the tree walk

    def _emit(self, grammar: CommandGrammar, argument: Argument, out: list[Word]) -> None:
        if (grammar.name, argument.name) in DROPPED_ARGUMENTS:
            return
        if argument.optional and self.rng.random() < 0.6:
            return
        repeats = self.rng.choice([1, 1, 2, 3]) if argument.multiple else 1
        for i in range(repeats):
            if argument.token is not None and (i == 0 or argument.multiple_token):
                out.append(Word("token", argument.token))
            self._emit_value(grammar, argument, out)

    def _emit_value(self, grammar: CommandGrammar, argument: Argument, out: list[Word]) -> None:
        if argument.type == "pure-token":
            return
        if argument.type == "oneof":
            choices = [c for c in argument.children
                       if (grammar.name, c.name) not in DROPPED_ARGUMENTS]
            chosen = self.rng.choice(choices)
            # A oneof alternative is chosen, so it is not optional any more.
            required = Argument(chosen.name, chosen.type, chosen.token, False, chosen.multiple,
                                chosen.multiple_token, chosen.children)
            self._emit(grammar, required, out)
            return
        if argument.type == "block":
            for child in argument.children:
                self._emit(grammar, child, out)
            return
        out.append(Word(argument.name, self.value(grammar, argument)))

    def value(self, grammar: CommandGrammar, argument: Argument) -> str:
        rng, name, kind = self.rng, argument.name, argument.type
        if kind == "key":
            return self.key(grammar, name)
        if grammar.name in RANDOM_COUNT_COMMANDS and name == "count":
            return rng.choice(RANDOM_COUNTS)
        pool = COMMAND_POOLS.get((grammar.name, name))
        if pool is None and kind == "double" and name in ("min", "max"):
            pool = SCORE_BOUNDS
        if pool is None and name in ("min", "max"):
            pool = LEX_BOUNDS
        if pool is None and kind == "double":
            pool = DOUBLES if rng.random() > 0.05 else EDGE_DOUBLES
        if pool is None:
            pool = NAMED_POOLS.get(name)
        if pool is None:
            pool = {"integer": SMALL_INTS, "pattern": ["*", "k*", "s*", "*e*", "?et", "[hz]*",
                                                      "h\\*sh", "nomatch"],
                    "unix-time": NAMED_POOLS["unix-time-seconds"]}.get(kind, STRINGS)
        if kind == "integer" and rng.random() < 0.05:
            pool = EDGE_INTS
        return rng.choice(pool)

    def key(self, grammar: CommandGrammar, name: str) -> str:
        rng = self.rng
        if name in DESTINATION_NAMES and rng.random() < 0.5:
            return rng.choice(FRESH_KEYS)
        key_type = GROUP_KEY_TYPE.get(grammar.group)
        roll = rng.random()
        if key_type is None:
            return rng.choice(FRESH_KEYS) if roll < 0.25 else rng.choice(ALL_KEYS)
        if roll < 0.6:
            return rng.choice(KEYS_BY_TYPE[key_type])
        if roll < 0.8:
            return rng.choice(FRESH_KEYS)
        return rng.choice(ALL_KEYS)

    # -- fix-ups the tree cannot express

    def _fix_counts(self, grammar: CommandGrammar, words: list[Word]) -> None:
        """numkeys must count the keys after it, and XREAD's STREAMS needs one ID per key."""
        for i, word in enumerate(words):
            if word.name == "numkeys" and self.rng.random() < 0.9:
                keys = 0
                while i + 1 + keys < len(words) and words[i + 1 + keys].name == "key":
                    keys += 1
                word.text = str(keys)
        if grammar.name in ("xread", "xreadgroup") and self.rng.random() < 0.9:
            try:
                start = next(i for i, w in enumerate(words) if w.text == "STREAMS") + 1
            except StopIteration:
                return
            keys = [w for w in words[start:] if w.name == "key"]
            ids = [w for w in words[start:] if w.name == "id"]
            while len(ids) < len(keys):
                ids.append(Word("id", self.rng.choice(COMMAND_POOLS[(grammar.name, "id")])))
            del words[start:]
            words.extend(keys + ids[:len(keys)])

    def _fix_range_kinds(self, grammar: CommandGrammar, words: list[Word]) -> None:
        """ZRANGE's bounds come before the BYSCORE/BYLEX that says what they are."""
        if grammar.name not in ("zrange", "zrangestore") or self.rng.random() < 0.2:
            return
        texts = {w.text for w in words}
        bounds = [w for w in words if w.name in ("start", "stop", "min", "max")]
        pool = (LEX_BOUNDS if "BYLEX" in texts else SCORE_BOUNDS if "BYSCORE" in texts
                else NAMED_POOLS["start"])
        for word in bounds:
            word.text = self.rng.choice(pool)

    # -- deliberately wrong inputs

    def _break(self, grammar: CommandGrammar, words: list[Word]) -> list[str]:
        rng = self.rng
        own = len(grammar.words)
        argv = [w.text for w in words]
        mutation = rng.choice(["drop", "extra", "not-a-number", "wrong-type-key"])
        if mutation == "drop" and len(argv) > own:
            del argv[rng.randrange(own, len(argv))]
        elif mutation == "extra":
            argv.insert(rng.randrange(own, len(argv) + 1), rng.choice(STRINGS + SMALL_INTS))
        elif mutation == "not-a-number":
            numeric = [i for i, w in enumerate(words) if i >= own and _looks_numeric(w.text)]
            if numeric:
                argv[rng.choice(numeric)] = rng.choice(["abc", "1.5", "", "1e3", " 1"])
        elif mutation == "wrong-type-key":
            key_positions = [i for i, w in enumerate(words) if i >= own and w.text in ALL_KEYS]
            if key_positions:
                argv[rng.choice(key_positions)] = rng.choice(ALL_KEYS)
        return argv


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
