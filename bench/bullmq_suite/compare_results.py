"""Two vitest JSON reports of the same suite, Redis's and minired's: the counts of each, the
tests that fail on both or on one, and (with --list) the minired-only failures as
"file<TAB>name pattern" lines for `vitest -t` (run.sh reruns each alone on both servers)."""
from __future__ import annotations

import json
import re
import sys
from collections import Counter

_NUMBERED = re.compile(r" \[#\d+\]$")  # the number outcomes() gives a repeated name


def outcomes(path: str) -> dict[tuple[str, str], tuple[str, list[str]]]:
    """(file, full test name) -> (status, failure messages); a name repeated in a file is
    numbered from its second occurrence."""
    with open(path) as f:
        report = json.load(f)
    results = {}
    for test_file in report.get("testResults", []):
        name = re.sub(r"^.*?/tests/", "tests/", test_file["name"])
        seen: Counter = Counter()
        for test in test_file.get("assertionResults", []):
            full = test["fullName"]
            seen[full] += 1
            key = full if seen[full] == 1 else f"{full} [#{seen[full]}]"
            results[(name, key)] = (test["status"], test.get("failureMessages") or [])
    return results


def main(argv: list[str]) -> int:
    listing = argv[:1] == ["--list"]
    redis, minired = (outcomes(path) for path in argv[1 if listing else 0:][:2])
    only = [key for key, (status, _) in minired.items()
            if status == "failed" and redis.get(key, ("missing",))[0] == "passed"]
    if listing:
        for test_file, full in only:
            pattern = re.escape(_NUMBERED.sub("", full))
            print(f"{test_file}\t{pattern}")
        return 0
    for label, results in (("redis  ", redis), ("minired", minired)):
        counts = Counter(status for status, _ in results.values())
        print(f"{label}: total={len(results)} "
              + " ".join(f"{status}={n}" for status, n in sorted(counts.items())))
    print("\nFailed on both:")
    for key, (status, _) in minired.items():
        if status == "failed" and redis.get(key, ("?",))[0] == "failed":
            print("  ", *key, sep=" ")
    print("Failed on redis only:")
    for key, (status, _) in redis.items():
        if status == "failed" and minired.get(key, ("?",))[0] != "failed":
            print("  ", *key, sep=" ")
    print(f"Failed on minired only ({len(only)}):")
    for key in only:
        print("  ", *key, sep=" ")
        for message in minired[key][1]:
            print("      " + "\n      ".join(message.splitlines()[:12]))
    return 1 if only else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
