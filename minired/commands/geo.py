"""GEO commands: positions kept in sorted sets, scored by their 52-bit geohash (geohash.py).

GEOADD is ZADD with the scores computed from the coordinates, as Redis rewrites it. The
searches (GEORADIUS, GEORADIUSBYMEMBER, their _RO forms, GEOSEARCH, GEOSEARCHSTORE) share one
argument parser, georadiusGeneric's, whose checks run in Redis's order so that the same bad
command gets the same error. Options are compared as C strings (strcasecmp), as Redis does.
"""
from __future__ import annotations

from minired.commands import zsets
from minired.data import geohash
from minired.data.geohash import Shape
from minired.data.zset import ZSet
from minired.engine.args import parse_float, parse_int
from minired.engine.table import command
from minired.features.notifications import GENERIC, ZSET, notify
from minired.protocol import errors
from minired.protocol.errors import RedisError
from minired.protocol.resp import NULL_ARRAY, Encoded

G = "geo"

_UNITS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}


def _word(arg: bytes) -> bytes:
    """An argument as strcasecmp sees it: up to its first NUL, case folded."""
    return arg.split(b"\0", 1)[0].lower()


# --- argument parsing --------------------------------------------------------------------------

def _longitude_latitude(raw_longitude: bytes, raw_latitude: bytes) -> tuple[float, float]:
    """extractLongLatOrReply: two doubles within the GEO limits."""
    longitude = parse_float(raw_longitude)
    latitude = parse_float(raw_latitude)
    if not (geohash.LONG_MIN <= longitude <= geohash.LONG_MAX
            and geohash.LAT_MIN <= latitude <= geohash.LAT_MAX):
        raise RedisError(errors.GEO_INVALID_LONLAT.format(longitude, latitude))
    return longitude, latitude


def _unit(raw: bytes) -> float:
    """Meters per unit."""
    to_meters = _UNITS.get(_word(raw))
    if to_meters is None:
        raise RedisError(errors.GEO_UNSUPPORTED_UNIT)
    return to_meters


def _radius(raw_radius: bytes, raw_unit: bytes) -> tuple[float, float]:
    """(radius, meters per unit) from `radius unit`."""
    radius = parse_float(raw_radius, errors.GEO_NEED_NUMERIC_RADIUS)
    if radius < 0:
        raise RedisError(errors.GEO_RADIUS_NEGATIVE)
    return radius, _unit(raw_unit)


def _box(raw_width: bytes, raw_height: bytes, raw_unit: bytes) -> tuple[float, float, float]:
    """(width, height, meters per unit) from `width height unit`."""
    width = parse_float(raw_width, errors.GEO_NEED_NUMERIC_WIDTH)
    height = parse_float(raw_height, errors.GEO_NEED_NUMERIC_HEIGHT)
    if height < 0 or width < 0:
        raise RedisError(errors.GEO_BOX_NEGATIVE)
    return width, height, _unit(raw_unit)


def _member_position(zset: ZSet, member: bytes) -> tuple[float, float]:
    score = zset.scores.get(member)
    if score is None:
        raise RedisError(errors.GEO_MEMBER_NOT_FOUND)
    return geohash.decode_score(score)


# --- replies -----------------------------------------------------------------------------------

def _human(value: float) -> bytes:
    """A coordinate as Redis prints it (ld2string's LD_STR_HUMAN): `%.17Lf` of the double,
    trailing zeros and a bare '.' removed. Python's %f is correctly rounded, as glibc's is."""
    text = (b"%.17f" % value).rstrip(b"0").rstrip(b".")
    return b"0" if text == b"-0" else text


def _coordinate(c, value: float):
    """addReplyHumanLongDouble: a bulk string under RESP2, a double carrying those same digits
    under RESP3 (which a plain float would print with %.17g). A script gets the double the
    digits read back as, which is what Redis's RESP3-to-Lua conversion gives it."""
    text = _human(value)
    if c.protocol == 2:
        return text
    if c.in_script:
        return float(text)
    return Encoded(b",%b\r\n" % text)


def _position(c, longitude: float, latitude: float) -> list:
    return [_coordinate(c, longitude), _coordinate(c, latitude)]


def _distance_text(meters: float) -> bytes:
    """addReplyDoubleDistance: four decimals."""
    return b"%.4f" % meters


# --- GEOADD, GEOPOS, GEOHASH, GEODIST ----------------------------------------------------------

@command("geoadd", arity=-5, flags="write denyoom", keys=(1, 1, 1), group=G)
def geoadd(c, argv):
    first = 2
    nx = xx = False
    while first < len(argv):
        option = _word(argv[first])
        if option == b"nx":
            nx = True
        elif option == b"xx":
            xx = True
        elif option != b"ch":
            break
        first += 1
    if (len(argv) - first) % 3 or (nx and xx):
        raise RedisError(errors.SYNTAX)
    # ZADD key [options] score member ..., every position checked before anything is added.
    zadd_argv = [b"zadd", *argv[1:first]]
    for index in range(first, len(argv), 3):
        longitude, latitude = _longitude_latitude(argv[index], argv[index + 1])
        zadd_argv.append(b"%d" % geohash.score_of(longitude, latitude))
        zadd_argv.append(argv[index + 2])
    return zsets.zadd(c, zadd_argv)


@command("geopos", arity=-2, flags="readonly", keys=(1, 1, 1), group=G)
def geopos(c, argv):
    zset = c.db.read_typed(argv[1], ZSet)
    reply = []
    for member in argv[2:]:
        score = None if zset is None else zset.scores.get(member)
        if score is None:
            reply.append(NULL_ARRAY)
        else:
            reply.append(_position(c, *geohash.decode_score(score)))
    return reply


@command("geohash", arity=-2, flags="readonly", keys=(1, 1, 1), group=G)
def geohash_(c, argv):
    zset = c.db.read_typed(argv[1], ZSet)
    reply = []
    for member in argv[2:]:
        score = None if zset is None else zset.scores.get(member)
        reply.append(None if score is None else geohash.geohash_string(score))
    return reply


@command("geodist", arity=-4, flags="readonly", keys=(1, 1, 1), group=G)
def geodist(c, argv):
    to_meters = 1.0
    if len(argv) == 5:
        to_meters = _unit(argv[4])
    elif len(argv) > 5:
        raise RedisError(errors.SYNTAX)
    zset = c.db.read_typed(argv[1], ZSet)
    if zset is None:
        return None
    first = zset.scores.get(argv[2])
    second = zset.scores.get(argv[3])
    if first is None or second is None:
        return None
    meters = geohash.distance(*geohash.decode_score(first), *geohash.decode_score(second))
    return _distance_text(meters / to_meters)


# --- searches ----------------------------------------------------------------------------------

_FROM_COORDINATES, _FROM_MEMBER, _GEOSEARCH = 1, 2, 3


class _Search:
    """The options of one search, as georadiusGeneric collects them."""

    __slots__ = ("shape", "with_dist", "with_hash", "with_coord", "descending", "sort", "any",
                 "count", "store_key", "store_dist")

    def __init__(self) -> None:
        self.shape = Shape(geohash.CIRCLE, 0.0, 0.0, 1.0)
        self.with_dist = self.with_hash = self.with_coord = False
        self.sort = self.descending = self.any = False
        self.count = 0
        self.store_key: bytes | None = None
        self.store_dist = False


def _parse_search(argv, source_index: int, variant: int, store_allowed: bool,
                  zset: ZSet | None) -> _Search:
    search = _Search()
    shape = search.shape
    if variant == _FROM_COORDINATES:
        base = 6
        shape.longitude, shape.latitude = _longitude_latitude(argv[2], argv[3])
        shape.radius, shape.conversion = _radius(argv[4], argv[5])
    elif variant == _FROM_MEMBER:
        base = 5
        # Without the key Redis still parses the options, for the errors and the reply kind.
        if zset is not None:
            shape.longitude, shape.latitude = _member_position(zset, argv[2])
            shape.radius, shape.conversion = _radius(argv[3], argv[4])
    else:
        base = source_index + 1
        if source_index == 2:
            search.store_key = argv[1]
    geosearch = variant == _GEOSEARCH
    from_member = from_lonlat = by_radius = by_box = False
    size = len(argv)
    i = base
    while i < size:
        option = _word(argv[i])
        remaining = size - i - 1
        if option == b"withdist":
            search.with_dist = True
        elif option == b"withhash":
            search.with_hash = True
        elif option == b"withcoord":
            search.with_coord = True
        elif option == b"any":
            search.any = True
        elif option == b"asc":
            search.sort, search.descending = True, False
        elif option == b"desc":
            search.sort, search.descending = True, True
        elif option == b"count" and remaining >= 1:
            search.count = parse_int(argv[i + 1])
            if search.count <= 0:
                raise RedisError(errors.GEO_COUNT_NOT_POSITIVE)
            i += 1
        elif (option in (b"store", b"storedist") and remaining >= 1 and store_allowed
              and not geosearch):
            search.store_key = argv[i + 1]
            search.store_dist = option == b"storedist"
            i += 1
        elif option == b"storedist" and geosearch and source_index == 2:
            search.store_dist = True
        elif option == b"frommember" and remaining >= 1 and geosearch and not from_lonlat:
            if zset is not None:
                shape.longitude, shape.latitude = _member_position(zset, argv[i + 1])
            from_member = True
            i += 1
        elif option == b"fromlonlat" and remaining >= 2 and geosearch and not from_member:
            shape.longitude, shape.latitude = _longitude_latitude(argv[i + 1], argv[i + 2])
            from_lonlat = True
            i += 2
        elif option == b"byradius" and remaining >= 2 and geosearch and not by_box:
            shape.radius, shape.conversion = _radius(argv[i + 1], argv[i + 2])
            shape.kind = geohash.CIRCLE
            by_radius = True
            i += 2
        elif option == b"bybox" and remaining >= 3 and geosearch and not by_radius:
            shape.width, shape.height, shape.conversion = _box(argv[i + 1], argv[i + 2],
                                                               argv[i + 3])
            shape.kind = geohash.RECTANGLE
            by_box = True
            i += 3
        else:
            raise RedisError(errors.SYNTAX)
        i += 1

    if search.store_key is not None and (search.with_dist or search.with_hash
                                         or search.with_coord):
        raise RedisError(errors.GEO_STORE_WITH_REPLY_OPTIONS.format(
            "GEOSEARCHSTORE" if source_index == 2 else "STORE option in GEORADIUS"))
    if geosearch:
        name = argv[0].split(b"\0", 1)[0].decode("utf-8", "replace")
        if not (from_member or from_lonlat):
            raise RedisError(errors.GEO_FROM_REQUIRED.format(name))
        if not (by_radius or by_box):
            raise RedisError(errors.GEO_BY_REQUIRED.format(name))
    if search.any and not search.count:
        raise RedisError(errors.GEO_ANY_WITHOUT_COUNT)
    return search


def _georadius(c, argv, source_index: int, variant: int, store_allowed: bool = False):
    """georadiusGeneric."""
    zset = c.db.read_typed(argv[source_index], ZSet)
    search = _parse_search(argv, source_index, variant, store_allowed, zset)
    store_key = search.store_key
    if zset is None:
        if store_key is not None:
            return _store(c, argv, store_key, [], 1.0, False)
        return []
    # COUNT needs the nearest points, hence sorting, unless ANY asked for any of them.
    if search.count and not search.sort and not search.any:
        search.sort = True
    shape = search.shape
    points = geohash.search(zset.order, shape, search.count if search.any else 0)
    if not points and store_key is None:
        return []
    returned = len(points) if not search.count else min(search.count, len(points))
    if search.sort:
        points = geohash.sort_points(points, search.descending, returned)
    points = points[:returned]
    conversion = shape.conversion
    if store_key is not None:
        return _store(c, argv, store_key, points, conversion, search.store_dist)
    if not (search.with_dist or search.with_hash or search.with_coord):
        return [point.member for point in points]
    reply = []
    for point in points:
        item = [point.member]
        if search.with_dist:
            item.append(_distance_text(point.dist / conversion))
        if search.with_hash:
            item.append(geohash.score_to_int64(point.score))
        if search.with_coord:
            item.append(_position(c, point.longitude, point.latitude))
        reply.append(item)
    return reply


def _store(c, argv, key: bytes, points: list, conversion: float, store_dist: bool) -> int:
    db = c.db
    if not points:
        if db.delete_without_lookup(key):
            if db.notifier is not None:
                notify(db, GENERIC, b"del", key)
        else:
            c.changes = 0
        return 0
    if store_dist:
        entries = [(point.dist / conversion, point.member) for point in points]
    else:
        entries = [(point.score, point.member) for point in points]
    db.set(key, ZSet(entries))
    if db.notifier is not None:
        searching = argv[0].lower() == b"geosearchstore"
        notify(db, ZSET, b"geosearchstore" if searching else b"georadiusstore", key)
    c.changes = len(points)  # one per member stored
    return len(points)


def _store_keys(start: int):
    """Key positions as Redis's key specs give them: the source key, then the argument after
    the first STORE and after the first STOREDIST found from `start` on (the last argument is
    never taken for the keyword)."""

    def find(argv: list) -> list[int]:
        positions = [1] if len(argv) > 1 else []
        for keyword in (b"store", b"storedist"):
            for index in range(start, len(argv) - 1):
                if _word(argv[index]) == keyword:
                    positions.append(index + 1)
                    break
        return positions

    return find


@command("georadius", arity=-6, flags="write denyoom", keys=(1, 1, 1), group=G,
         key_finder=_store_keys(6))
def georadius(c, argv):
    return _georadius(c, argv, 1, _FROM_COORDINATES, store_allowed=True)


@command("georadius_ro", arity=-6, flags="readonly", keys=(1, 1, 1), group=G)
def georadius_ro(c, argv):
    return _georadius(c, argv, 1, _FROM_COORDINATES)


@command("georadiusbymember", arity=-5, flags="write denyoom", keys=(1, 1, 1), group=G,
         key_finder=_store_keys(5))
def georadiusbymember(c, argv):
    return _georadius(c, argv, 1, _FROM_MEMBER, store_allowed=True)


@command("georadiusbymember_ro", arity=-5, flags="readonly", keys=(1, 1, 1), group=G)
def georadiusbymember_ro(c, argv):
    return _georadius(c, argv, 1, _FROM_MEMBER)


@command("geosearch", arity=-7, flags="readonly", keys=(1, 1, 1), group=G)
def geosearch(c, argv):
    return _georadius(c, argv, 1, _GEOSEARCH)


@command("geosearchstore", arity=-8, flags="write denyoom", keys=(1, 2, 1), group=G)
def geosearchstore(c, argv):
    return _georadius(c, argv, 2, _GEOSEARCH)
