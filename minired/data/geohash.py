"""Geohashes as Redis's GEO commands use them (geohash.c, geohash_helper.c, geo.c's search).

A position is stored as a sorted-set score: the longitude and latitude, each cut into 2**26
steps (latitude only within the Web Mercator limits, +-85.05112878), interleaved into 52 bits.
A search estimates a cell size from the radius, takes the centre's cell and its 8 neighbours,
reads each cell's score range from the sorted set and keeps the points inside the shape.

Everything is computed as Redis computes it, in the same order of double operations with the
same libm functions, so the set of points found, their distances and the order they are found
in (which is the reply's order when no sorting is asked for) are Redis's. The C integer
conversions Redis relies on (double to uint64, uint32 wrap-around) are reproduced too.
"""
from __future__ import annotations

import math
from operator import attrgetter

from minired.data.csort import merge_sort, partial_sort

STEP_MAX = 26  # 26 * 2 = 52 bits
LAT_MIN = -85.05112878
LAT_MAX = 85.05112878
LONG_MIN = -180.0
LONG_MAX = 180.0

EARTH_RADIUS_IN_METERS = 6372797.560856
MERCATOR_MAX = 20037726.37
_D_R = math.pi / 180.0

_UINT64 = (1 << 64) - 1
_UINT32 = (1 << 32) - 1
_TWO_63 = 9223372036854775808.0
_INT64_MIN = -(1 << 63)

_GEOALPHABET = b"0123456789bcdefghjkmnpqrstuvwxyz"

CIRCLE = 1
RECTANGLE = 2


# --- C arithmetic -------------------------------------------------------------------------------

def _cos(x: float) -> float:
    # C's cos gives NaN for an infinite angle (an infinite radius), where Python raises.
    return math.cos(x) if math.isfinite(x) else math.nan


def _asin(x: float) -> float:
    # C's asin gives NaN past 1 (rounding can push the haversine term there), Python raises.
    return math.asin(x) if x <= 1.0 else math.nan


def score_to_uint64(score: float) -> int:
    """`(uint64_t)score` as gcc compiles it on x86-64: cvttsd2si, with 2**63 subtracted first for
    large values, and the "integer indefinite" 2**63 for what does not fit."""
    if score < _TWO_63:
        if score >= -_TWO_63:
            return int(score) & _UINT64
        return 1 << 63
    shifted = score - _TWO_63
    if shifted < _TWO_63:
        return int(shifted) ^ (1 << 63)
    return 0  # the indefinite value, xored with the bias it was given back


def score_to_int64(score: float) -> int:
    """`(long long)score`: truncation, and INT64_MIN for what does not fit."""
    if -_TWO_63 <= score < _TWO_63:
        return int(score)
    return _INT64_MIN


# --- encoding and decoding ---------------------------------------------------------------------

def _interleave64(xlo: int, ylo: int) -> int:
    """Bits of x (latitude) to the even positions, bits of y (longitude) to the odd ones."""
    x, y = xlo, ylo
    for shift, mask in ((16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF),
                        (4, 0x0F0F0F0F0F0F0F0F), (2, 0x3333333333333333),
                        (1, 0x5555555555555555)):
        x = (x | (x << shift)) & mask
        y = (y | (y << shift)) & mask
    return (x | (y << 1)) & _UINT64


def _deinterleave64(interleaved: int) -> int:
    x = interleaved
    y = interleaved >> 1
    for shift, mask in ((0, 0x5555555555555555), (1, 0x3333333333333333),
                        (2, 0x0F0F0F0F0F0F0F0F), (4, 0x00FF00FF00FF00FF),
                        (8, 0x0000FFFF0000FFFF), (16, 0x00000000FFFFFFFF)):
        x = (x | (x >> shift)) & mask
        y = (y | (y >> shift)) & mask
    return (x | (y << 32)) & _UINT64


def encode(longitude: float, latitude: float, step: int,
           lat_min: float = LAT_MIN, lat_max: float = LAT_MAX) -> int:
    """geohashEncode: the interleaved cell bits of a point at `step` bits per coordinate. The
    point must be within the GEO limits (checked by the callers, as Redis's callers do)."""
    lat_offset = (latitude - lat_min) / (lat_max - lat_min)
    long_offset = (longitude - LONG_MIN) / (LONG_MAX - LONG_MIN)
    lat_offset *= 1 << step
    long_offset *= 1 << step
    # The offsets become uint32_t: truncated (180 and the top latitude give 2**step itself).
    return _interleave64(int(lat_offset) & _UINT32, int(long_offset) & _UINT32)


def decode_area(bits: int, step: int) -> tuple[float, float, float, float]:
    """geohashDecode: (longitude min, longitude max, latitude min, latitude max) of a cell."""
    separated = _deinterleave64(bits)
    lat_cell = separated & _UINT32
    long_cell = separated >> 32
    lat_scale = LAT_MAX - LAT_MIN
    long_scale = LONG_MAX - LONG_MIN
    cells = float(1 << step)
    # `cell + 1` is uint32_t arithmetic in C: it wraps.
    lat_lo = LAT_MIN + (lat_cell * 1.0 / cells) * lat_scale
    lat_hi = LAT_MIN + (((lat_cell + 1) & _UINT32) * 1.0 / cells) * lat_scale
    long_lo = LONG_MIN + (long_cell * 1.0 / cells) * long_scale
    long_hi = LONG_MIN + (((long_cell + 1) & _UINT32) * 1.0 / cells) * long_scale
    return long_lo, long_hi, lat_lo, lat_hi


def decode_score(score: float) -> tuple[float, float]:
    """The (longitude, latitude) a score stands for: its cell's centre, clamped to the limits.
    Any score decodes (Redis converts it to uint64 and reads its bits)."""
    long_lo, long_hi, lat_lo, lat_hi = decode_area(score_to_uint64(score), STEP_MAX)
    longitude = (long_lo + long_hi) / 2
    longitude = min(max(longitude, LONG_MIN), LONG_MAX)
    latitude = (lat_lo + lat_hi) / 2
    latitude = min(max(latitude, LAT_MIN), LAT_MAX)
    return longitude, latitude


def score_of(longitude: float, latitude: float) -> int:
    """The 52-bit score GEOADD stores for a point within the limits."""
    return encode(longitude, latitude, STEP_MAX)


def align52(bits: int, step: int) -> int:
    return (bits << (52 - step * 2)) & _UINT64


def geohash_string(score: float) -> bytes:
    """GEOHASH's 11 characters: the decoded point encoded again over the standard latitude
    range (-90..90), 5 bits a character; the 11th character stands for bits Redis lacks."""
    longitude, latitude = decode_score(score)
    bits = encode(longitude, latitude, STEP_MAX, -90.0, 90.0)
    chars = bytearray(_GEOALPHABET[(bits >> (52 - (i + 1) * 5)) & 0x1F] for i in range(10))
    chars.append(_GEOALPHABET[0])
    return bytes(chars)


# --- neighbours --------------------------------------------------------------------------------

def _move_x(bits: int, step: int, direction: int) -> int:
    x = bits & 0xAAAAAAAAAAAAAAAA
    y = bits & 0x5555555555555555
    zz = 0x5555555555555555 >> (64 - step * 2)
    if direction > 0:
        x = x + (zz + 1)
    else:
        x = (x | zz) - (zz + 1)
    x &= 0xAAAAAAAAAAAAAAAA >> (64 - step * 2)
    return (x | y) & _UINT64


def _move_y(bits: int, step: int, direction: int) -> int:
    x = bits & 0xAAAAAAAAAAAAAAAA
    y = bits & 0x5555555555555555
    zz = 0xAAAAAAAAAAAAAAAA >> (64 - step * 2)
    if direction > 0:
        y = y + (zz + 1)
    else:
        y = (y | zz) - (zz + 1)
    y &= 0x5555555555555555 >> (64 - step * 2)
    return (x | y) & _UINT64


def _neighbour(bits: int, step: int, dx: int, dy: int) -> int:
    if dx:
        bits = _move_x(bits, step, dx)
    if dy:
        bits = _move_y(bits, step, dy)
    return bits


# --- search areas ------------------------------------------------------------------------------

class Shape:
    """GeoShape: a circle (radius) or an axis-aligned box (width, height) around a centre, in
    the unit given by `conversion` (meters per unit)."""

    __slots__ = ("kind", "longitude", "latitude", "conversion", "radius", "width", "height")

    def __init__(self, kind: int, longitude: float, latitude: float, conversion: float,
                 radius: float = 0.0, width: float = 0.0, height: float = 0.0) -> None:
        self.kind = kind
        self.longitude = longitude
        self.latitude = latitude
        self.conversion = conversion
        self.radius = radius
        self.width = width
        self.height = height


def estimate_steps(range_meters: float, latitude: float) -> int:
    """geohashEstimateStepsByRadius: the cell precision whose cells cover the radius."""
    if range_meters == 0:
        return 26
    step = 1
    while range_meters < MERCATOR_MAX:
        range_meters *= 2
        step += 1
    step -= 2
    # Meridians converge towards the poles: wider cells there.
    if latitude > 66 or latitude < -66:
        step -= 1
        if latitude > 80 or latitude < -80:
            step -= 1
    return min(max(step, 1), 26)


def bounding_box(shape: Shape) -> tuple[float, float, float, float]:
    """geohashBoundingBox: (min longitude, min latitude, max longitude, max latitude)."""
    longitude, latitude = shape.longitude, shape.latitude
    if shape.kind == CIRCLE:
        height = shape.conversion * shape.radius
        width = shape.conversion * shape.radius
    else:
        height = shape.conversion * (shape.height / 2)
        width = shape.conversion * (shape.width / 2)
    lat_delta = (height / EARTH_RADIUS_IN_METERS) / _D_R
    long_delta_top = (width / EARTH_RADIUS_IN_METERS / _cos((latitude + lat_delta) * _D_R)) / _D_R
    long_delta_bottom = (width / EARTH_RADIUS_IN_METERS
                         / _cos((latitude - lat_delta) * _D_R)) / _D_R
    # The box's wider edge is the one nearer the equator.
    long_delta = long_delta_bottom if latitude < 0 else long_delta_top
    return (longitude - long_delta, latitude - lat_delta,
            longitude + long_delta, latitude + lat_delta)


def search_cells(shape: Shape) -> list[tuple[int, int] | None]:
    """geohashCalculateAreasByShapeWGS84: the centre cell and its neighbours, as (bits, step)
    in the order Redis searches them (self, N, S, E, W, NE, NW, SE, SW); None where Redis
    leaves a neighbour out because the search area cannot reach it."""
    min_lon, min_lat, max_lon, max_lat = bounding_box(shape)
    longitude, latitude = shape.longitude, shape.latitude
    if shape.kind == CIRCLE:
        radius_meters = shape.radius
    else:
        radius_meters = math.sqrt((shape.width / 2) * (shape.width / 2)
                                  + (shape.height / 2) * (shape.height / 2))
    radius_meters *= shape.conversion

    steps = estimate_steps(radius_meters, latitude)
    bits = encode(longitude, latitude, steps)
    # When the area reaches past the neighbours, one step coarser (cells twice as large).
    north = decode_area(_neighbour(bits, steps, 0, 1), steps)
    south = decode_area(_neighbour(bits, steps, 0, -1), steps)
    east = decode_area(_neighbour(bits, steps, 1, 0), steps)
    west = decode_area(_neighbour(bits, steps, -1, 0), steps)
    decrease_step = (north[3] < max_lat or south[2] > min_lat
                     or east[1] < max_lon or west[0] > min_lon)
    if steps > 1 and decrease_step:
        steps -= 1
        bits = encode(longitude, latitude, steps)
    long_lo, long_hi, lat_lo, lat_hi = decode_area(bits, steps)

    # (dx, dy) of the 9 cells in Redis's order.
    offsets = [(0, 0), (0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1)]
    excluded = set()
    if steps >= 2:
        if lat_lo < min_lat:
            excluded.update(((0, -1), (-1, -1), (1, -1)))
        if lat_hi > max_lat:
            excluded.update(((0, 1), (1, 1), (-1, 1)))
        if long_lo < min_lon:
            excluded.update(((-1, 0), (-1, -1), (-1, 1)))
        if long_hi > max_lon:
            excluded.update(((1, 0), (1, -1), (1, 1)))
    return [None if offset in excluded else (_neighbour(bits, steps, *offset), steps)
            for offset in offsets]


# --- distances ---------------------------------------------------------------------------------

def distance(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    """geohashGetDistance: the haversine great-circle distance in meters."""
    lat1r = lat1 * _D_R
    lon1r = lon1 * _D_R
    lat2r = lat2 * _D_R
    lon2r = lon2 * _D_R
    u = math.sin((lat2r - lat1r) / 2)
    v = math.sin((lon2r - lon1r) / 2)
    return 2.0 * EARTH_RADIUS_IN_METERS * _asin(math.sqrt(
        u * u + math.cos(lat1r) * math.cos(lat2r) * v * v))


def distance_within(shape: Shape, longitude: float, latitude: float) -> float | None:
    """The distance from the shape's centre to a point inside the shape, None if outside."""
    center_lon, center_lat = shape.longitude, shape.latitude
    if shape.kind == CIRCLE:
        found = distance(center_lon, center_lat, longitude, latitude)
        return None if found > shape.radius * shape.conversion else found
    width_m = shape.width * shape.conversion
    height_m = shape.height * shape.conversion
    lon_distance = distance(longitude, latitude, center_lon, latitude)
    lat_distance = distance(longitude, latitude, longitude, center_lat)
    if lon_distance > width_m / 2 or lat_distance > height_m / 2:
        return None
    return distance(center_lon, center_lat, longitude, latitude)


# --- search ------------------------------------------------------------------------------------

class GeoPoint:
    __slots__ = ("member", "score", "dist", "longitude", "latitude")

    def __init__(self, member: bytes, score: float, dist: float, longitude: float,
                 latitude: float) -> None:
        self.member = member
        self.score = score
        self.dist = dist
        self.longitude = longitude
        self.latitude = latitude


def search(order, shape: Shape, limit: int = 0) -> list[GeoPoint]:
    """membersOfAllNeighbors over a sorted set's (score, member) entries in rank order (a
    ZSet's order): the points inside the shape, in the order Redis finds them. With a limit
    (COUNT n ANY) the search stops once that many are found."""
    found: list[GeoPoint] = []
    cells = search_cells(shape)
    last_processed = 0
    for index, cell in enumerate(cells):
        if cell is None:
            continue
        # Huge radii make neighbours coincide: a cell equal to the one searched just before
        # is skipped (only that one, and never when the previous was the centre cell).
        if last_processed and cell == cells[last_processed]:
            continue
        if found and limit and len(found) >= limit:
            break
        _search_cell(order, cell, shape, limit, found)
        last_processed = index
    return found


def _search_cell(order, cell: tuple[int, int], shape: Shape, limit: int,
                 found: list[GeoPoint]) -> None:
    bits, step = cell
    low = float(align52(bits, step))
    high = float(align52(bits + 1, step))
    for score, member in order.islice(order.bisect_left((low,))):
        if score >= high:
            break
        longitude, latitude = decode_score(score)
        dist = distance_within(shape, longitude, latitude)
        if dist is not None:
            found.append(GeoPoint(member, score, dist, longitude, latitude))
        if found and limit and len(found) >= limit:
            break


# --- ordering ----------------------------------------------------------------------------------

def _compare_ascending(a: GeoPoint, b: GeoPoint) -> int:
    # geo.c's sort_gp_asc: a NaN distance compares as "smaller" both ways.
    if a.dist > b.dist:
        return 1
    if a.dist == b.dist:
        return 0
    return -1


def _compare_descending(a: GeoPoint, b: GeoPoint) -> int:
    return -_compare_ascending(a, b)


def sort_points(points: list[GeoPoint], descending: bool, count: int) -> list[GeoPoint]:
    """The first `count` points in distance order, as Redis orders them: glibc's qsort (a
    stable merge sort) when all are returned, Redis's partial quicksort (pqsort.c, not stable)
    when fewer are. Ties keep exactly Redis's order either way."""
    compare = _compare_descending if descending else _compare_ascending
    if count >= len(points):
        if any(point.dist != point.dist for point in points):
            # NaN makes the comparison inconsistent: only the same algorithm gives the same order.
            return merge_sort(points, compare)
        return sorted(points, key=attrgetter("dist"), reverse=descending)
    items = list(points)
    partial_sort(items, compare, 0, count - 1)
    return items[:count]
