"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST (hyperloglog.c).

An HLL is a plain string value; the encoding work lives in minired/data/hyperloglog.py and
minired/data/hyperloglog_sparse.py.
"""
from __future__ import annotations

from minired.data import hyperloglog as hll
from minired.data import hyperloglog_sparse
from minired.engine.table import command
from minired.features.notifications import STRING, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import OK, Status

G = "hyperloglog"


def _sparse_max_bytes(c) -> int:
    return c.server.config.number("hll-sparse-max-bytes")


def _hll_value(c, key: bytes, read: bool = False) -> bytes | None:
    """The HLL at key, None if missing; the two WRONGTYPE errors otherwise."""
    value = (c.db.read_typed if read else c.db.get_typed)(key, bytes)
    if value is not None and not hll.is_hll(value):
        raise RedisError(errors.HLL_WRONGTYPE)
    return value


def _store_quietly(c, key: bytes, value: bytes) -> None:
    """Replace a live key's value the way Redis edits it in place without signalling the
    change (PFDEBUG's conversions, a PFADD that fails half way): WATCH does not see it, and the
    TTL stays."""
    c.db.data[key] = value


@command("pfadd", arity=-2, flags="write denyoom fast", keys=(1, 1, 1), group=G)
def pfadd(c, argv):
    key = argv[1]
    value = _hll_value(c, key)
    created = value is None
    if created:
        value = hll.new_hll()
    try:
        new_value, updated = hll.add(value, argv[2:], _sparse_max_bytes(c))
    except hll.CorruptedHLL as corrupted:
        if corrupted.value is not None:
            _store_quietly(c, key, corrupted.value)
        raise RedisError(errors.HLL_CORRUPTED) from None
    db = c.db
    c.changes = updated + created  # one per register raised, and one for a new key
    if created:
        db.set(key, hll.with_stale_cache(value) if new_value is None else new_value)
    elif not updated:
        return 0
    else:
        db.set(key, new_value, keep_ttl=True)
    if db.notifier is not None:
        notify(db, STRING, b"pfadd", key)
    return 1


def _registers_union(c, keys: list) -> tuple[bytes, bool]:
    """The register-wise maximum of the HLLs at keys (missing ones are empty), and whether
    one of them is dense."""
    union = bytes(hll.REGISTERS)
    any_dense = False
    for key in keys:
        value = _hll_value(c, key, read=True)
        if value is None:
            continue
        any_dense = any_dense or value[4] == hll.DENSE
        try:
            union = hll.max_registers(union, hll.to_raw(value))
        except hll.CorruptedHLL:
            raise RedisError(errors.HLL_CORRUPTED) from None
    return union, any_dense


@command("pfcount", arity=-2, flags="readonly may_replicate", keys=(1, -1, 1), group=G)
def pfcount(c, argv):
    if len(argv) > 2:
        union, _ = _registers_union(c, argv[1:])
        return hll.as_signed(hll.estimate(hll.histogram(union)))
    key = argv[1]
    value = _hll_value(c, key, read=True)
    if value is None:
        return 0
    card = hll.cached_cardinality(value)
    if card is None:
        try:
            card = hll.count(value)
        except hll.CorruptedHLL:
            raise RedisError(errors.HLL_CORRUPTED) from None
        # The cache lives in the value: writing it is a change that WATCH sees, counted and
        # propagated (the AOF and the replicas get this PFCOUNT), as in Redis.
        c.db.set(key, hll.with_cardinality(value, card), keep_ttl=True)
        c.changes = 1
    return hll.as_signed(card)


@command("pfmerge", arity=-2, flags="write denyoom", keys=(1, -1, 1), group=G)
def pfmerge(c, argv):
    union, use_dense = _registers_union(c, argv[1:])
    key = argv[1]
    dest = c.db.get(key)
    merged = hll.merge_into(dest, union, use_dense, _sparse_max_bytes(c))
    db = c.db
    db.set(key, merged, keep_ttl=dest is not None)
    if db.notifier is not None:
        notify(db, STRING, b"pfadd", key)
    return OK


def _pfmerge_key_positions(argv: list) -> list[int]:
    """Redis finds PFMERGE's keys with two key specs, the destination and the sources from
    index 2; without a source the second is out of bounds, which voids the whole lookup, so
    `PFMERGE dest` has no keys (COMMAND GETKEYS refuses it; cluster and scripts check none)."""
    return list(range(1, len(argv))) if len(argv) > 2 else []


# Set after declaring: passed to @command, a key finder would add the movablekeys flag, which
# Redis does not give PFMERGE.
pfmerge.spec.key_finder = _pfmerge_key_positions


@command("pfselftest", arity=1, flags="admin may_replicate", group=G)
def pfselftest(c, argv):
    failure = hll.selftest(_sparse_max_bytes(c))
    if failure is not None:
        raise RedisError(failure)
    return OK


@command("pfdebug", arity=3, flags="write denyoom admin", keys=(2, 2, 1), group=G)
def pfdebug(c, argv):
    key = argv[2]
    value = _hll_value(c, key)
    if value is None:
        raise RedisError(errors.PFDEBUG_NO_SUCH_KEY)
    subcommand = argv[1].lower()
    if subcommand in (b"getreg", b"todense"):
        converted = value[4] == hll.SPARSE
        if converted:
            try:
                value = hll.sparse_to_dense(value)
            except hll.CorruptedHLL:
                raise RedisError(errors.HLL_CORRUPTED) from None
            _store_quietly(c, key, value)
        if subcommand == b"todense":
            return 1 if converted else 0
        return list(hll.dense_to_raw(value))
    if subcommand == b"decode":
        if value[4] != hll.SPARSE:
            raise RedisError(errors.PFDEBUG_NOT_SPARSE)
        return hyperloglog_sparse.decode(value).encode()
    if subcommand == b"encoding":
        return Status(b"dense" if value[4] == hll.DENSE else b"sparse")
    # Redis formats the name as a C string, and errors never span lines.
    name = argv[1].split(b"\0", 1)[0].replace(b"\r", b" ").replace(b"\n", b" ")
    raise RedisError(errors.PFDEBUG_UNKNOWN_SUBCOMMAND.format(name.decode("utf-8", "replace")))
