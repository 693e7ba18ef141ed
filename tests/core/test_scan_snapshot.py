"""A scan that starts at cursor 0 reuses the hash-ordered snapshot of the previous scan only
when the keys are exactly the same (commands/keys.py, collection_scan.py): a key added and
another deleted, the count unchanged, must show in the next full scan, as in Redis."""


def _full_scan(client, *prefix) -> list:
    cursor, found = b"0", []
    while True:
        cursor, batch = client.call(*prefix, cursor, "COUNT", "7")
        found += batch
        if cursor == b"0":
            return sorted(found)


def _both_scans(diff, *prefix) -> list:
    theirs, ours = (_full_scan(client, *prefix) for client in (diff.redis, diff.minired))
    assert ours == theirs
    return ours


def test_scan_from_zero_sees_a_same_size_change(diff):
    diff.check("MSET", *[part for i in range(300) for part in (f"k{i}", "v")])
    before = _both_scans(diff, "SCAN")
    assert len(before) == 300 and _both_scans(diff, "SCAN") == before
    diff.check("DEL", "k0")
    diff.check("SET", "fresh", "v")
    after = _both_scans(diff, "SCAN")
    assert b"fresh" in after and b"k0" not in after and len(after) == 300


def test_sscan_from_zero_sees_a_same_size_change(diff):
    diff.check("SADD", "s", *[f"m{i}" for i in range(300)])
    before = _both_scans(diff, "SSCAN", "s")
    assert len(before) == 300 and _both_scans(diff, "SSCAN", "s") == before
    diff.check("SREM", "s", "m0")
    diff.check("SADD", "s", "fresh")
    after = _both_scans(diff, "SSCAN", "s")
    assert b"fresh" in after and b"m0" not in after and len(after) == 300
