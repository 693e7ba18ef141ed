"""INFO's used_memory with maxmemory 0 (features/eviction.py's dataset_size): exact up to
EXACT_KEYS keys and extrapolated past them, so that an INFO costs the same whatever the
dataset's size (clients call it on every connection; it once measured 20,000 keys, ~100 ms)."""
from minired.features import eviction


def test_dataset_size_measures_at_most_exact_keys(monkeypatch):
    measure = eviction.key_size
    measured = []
    monkeypatch.setattr(eviction, "key_size",
                        lambda key, value: measured.append(key) or measure(key, value))
    data = {b"key:%06d" % i: {b"field": b"v" * 30} for i in range(eviction.EXACT_KEYS * 5)}
    size = eviction.dataset_size(data)
    assert len(measured) == eviction.EXACT_KEYS
    # Keys alike: the extrapolation is the exact sum.
    assert size == sum(measure(key, value) for key, value in data.items())


def test_small_dataset_is_measured_exactly():
    data = {b"a": b"x" * 100, b"b": {b"f": b"v"}, b"c": b"y"}
    assert eviction.dataset_size(data) == sum(eviction.key_size(k, v) for k, v in data.items())
