"""appendonly.aof.manifest: which files make up Redis 7.0's multi-part AOF, and in what order.

The manifest names one base (`type b`: an RDB image or commands), the incremental files
(`type i`, commands in RESP, in `seq` order) and history files (`type h`, left over from a
rewrite). It is read as Redis's aofLoadManifestFromFile reads it, refusing what Redis refuses
with Redis's log lines, and written in Redis's format so either server loads the other's.
"""
from __future__ import annotations

import re

from minired.features.monitor import quote
from minired.features.persist_files import LoadError
from minired.protocol.resp import ProtocolError, split_inline

_MANIFEST_MAX_LINE = 1024


class Manifest:
    """appendonly.aof.manifest: the base file and the incremental files, in order."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix  # appendfilename
        self.base: str | None = None
        self.base_seq = 0
        self.incr: list[tuple[str, int]] = []
        # Files a rewrite replaced, kept (aof-disable-auto-gc yes) until deleted: newest first.
        self.history: list[tuple[str, int]] = []

    @classmethod
    def parse(cls, prefix: str, text: str, path: str) -> "Manifest":
        """aofLoadManifestFromFile: LoadError with Redis's log lines for a manifest it refuses
        (an empty file, a blank, long or short line, a missing field, a path for a name ...)."""
        manifest = cls(prefix)
        if not text:
            raise LoadError(*_manifest_error("Found an empty AOF manifest"))
        for number, raw in enumerate(re.findall(r"[^\n]*\n|[^\n]+$", text), 1):
            if raw.startswith("#"):
                continue
            # (fgets into MANIFEST_MAX_LINE + 1 bytes: a longer line has no newline in it)
            if "\n" not in raw[:_MANIFEST_MAX_LINE]:
                raise LoadError(*_manifest_error("The AOF manifest file contains too long line"))
            line = raw.strip(" \t\r\n")
            try:  # (sdssplitargs: quotes and escapes, as _quote writes them)
                words = [word.decode("utf-8", "surrogateescape")
                         for word in split_inline(line.encode("utf-8", "surrogateescape"))]
            except ProtocolError:
                words = []
            if len(words) < 6 or len(words) % 2:
                raise LoadError(*_manifest_error("Invalid AOF manifest file format", number, line))
            name, seq, kind = "", 0, ""
            for key, value in zip(words[0::2], words[1::2]):
                key = key.lower()
                if key == "file":
                    name = value
                    if "/" in name:
                        raise LoadError(*_manifest_error(
                            "File can't be a path, just a filename", number, line))
                elif key == "seq":
                    seq = _atoll(value)
                elif key == "type":
                    kind = value[:1]
            if not name or not seq or not kind:
                raise LoadError(*_manifest_error("Invalid AOF manifest file format", number, line))
            if kind == "b":
                if manifest.base is not None:
                    raise LoadError(*_manifest_error("Found duplicate base file information",
                                                     number, line))
                manifest.base, manifest.base_seq = name, seq
            elif kind == "i":
                if manifest.incr and seq <= manifest.incr[-1][1]:
                    raise LoadError(*_manifest_error("Found a non-monotonic sequence number",
                                                     number, line))
                manifest.incr.append((name, seq))
            elif kind == "h":
                manifest.history.append((name, seq))
            else:
                raise LoadError(*_manifest_error("Unknown AOF file type", number, line))
        return manifest

    def text(self) -> str:
        lines = []
        if self.base is not None:
            lines.append(f"file {_quote(self.base)} seq {self.base_seq} type b\n")
        for name, seq in self.history:
            lines.append(f"file {_quote(name)} seq {seq} type h\n")
        for name, seq in self.incr:
            lines.append(f"file {_quote(name)} seq {seq} type i\n")
        return "".join(lines)

    def next_incr(self) -> str:
        seq = (self.incr[-1][1] if self.incr else 0) + 1
        name = f"{self.prefix}.{seq}.incr.aof"
        self.incr.append((name, seq))
        return name

    def copy(self) -> "Manifest":
        """aofManifestDup: changed, then swapped in only once persisted."""
        twin = Manifest(self.prefix)
        twin.base, twin.base_seq = self.base, self.base_seq
        twin.incr, twin.history = list(self.incr), list(self.history)
        return twin

    def new_base(self, name: str) -> None:
        """getNewBaseFileNameAndMarkPreAsHistory: `name` (made for base_seq + 1) is the base;
        the one it replaces is history."""
        if self.base is not None:
            self.history.insert(0, (self.base, self.base_seq))
        self.base, self.base_seq = name, self.base_seq + 1

    def retire_incr(self, keep_last: bool) -> None:
        """markRewrittenIncrAofAsHistory: the incremental files a new base holds become
        history: all of them, or all but the last while the AOF is written to it."""
        retired = self.incr[:-1] if keep_last else self.incr
        self.incr = self.incr[-1:] if keep_last else []
        for item in reversed(retired):  # (each put first, from the newest: oldest ends first)
            self.history.insert(0, item)

    def files(self) -> list[str]:
        return ([self.base] if self.base else []) + [name for name, _ in self.incr]


def _manifest_error(reason: str, number: int = 0, line: str | None = None) -> list[str]:
    """The lines aofLoadManifestFromFile logs before it exits."""
    lines = ["\n*** FATAL AOF MANIFEST FILE ERROR ***\n"]
    if line is not None:
        lines += [f"Reading the manifest file, at line {number}\n", f">>> '{line}'\n"]
    return lines + [f"{reason}\n"]


def _atoll(text: str) -> int:
    """C's atoll: the leading decimal digits (with a sign), 0 if none."""
    match = re.match(r"\s*([+-]?\d+)", text)
    return int(match.group(1)) if match else 0


def _quote(name: str) -> str:
    """A file name as getAofManifestAsString writes it: quoted and escaped (sdscatrepr) when
    it holds a quote, a backslash, a space or a byte that is not printable (sdsneedsrepr)."""
    raw = name.encode("utf-8", "surrogateescape")
    if all(33 <= byte <= 126 and byte not in b'\\"' for byte in raw):
        return name
    return quote(raw).decode("utf-8", "surrogateescape")
