"""Groups: jobs of one tenant (``add(data, group="tenant-a")``) wait in their group's line;
the fetch script (``lua/moveToActive.lua``) serves the groups with ready jobs in turn
(round-robin), skipping any group at its limits: ``Queue.configure(group_concurrency=N)``
(at most N of a group's jobs active at once) and ``group_rate_max`` per
``group_rate_duration_ms`` (at most that many of a group's jobs started per window).
So a tenant with 10,000 jobs waiting takes one turn in each round, as a tenant with one.

Every group shares the queue's few keys (``keys.group_wait``, ``keys.groups``,
``keys.group_active``, ``keys.group_rate``), so the one fetch script sees every group
without building a key name, and a group name may hold anything but NUL (braces and
colons included: it never becomes part of a key). This module reads those keys back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .job import text
from .keys import QueueKeys
from .scripts import script
from .steps import Command, Steps
from .transitions import Call

PRUNE_BATCH = 200

GROUP_SEP = "\0"


def group_member(group: str, seq: str | int, job_id: str) -> str:
    """A grouped ready job's member of group-wait (as lua/includes/pushReady.lua builds it)."""
    return f"{group}{GROUP_SEP}{int(seq):016d}{GROUP_SEP}{job_id}"


def member_job_id(member: Any) -> str:
    return text(member).split(GROUP_SEP, 2)[2]


@dataclass(frozen=True)
class GroupedIds:
    """An operation (see ``steps.py``): the ids of the first ``count`` grouped ready jobs."""

    keys: QueueKeys
    count: int

    def run(self, client: Any) -> list[str]:
        return [member_job_id(m) for m in client.zrange(self.keys.group_wait, 0, self.count - 1)]

    async def run_async(self, client: Any) -> list[str]:
        return [member_job_id(m) for m in await client.zrange(self.keys.group_wait, 0, self.count - 1)]


def group_line(group: str) -> tuple[str, str]:
    """The lexicographic range of one group's members (ZRANGEBYLEX/ZLEXCOUNT bounds)."""
    return f"[{group}{GROUP_SEP}", f"({group}\1"


def prune_groups(keys: QueueKeys, members: list[str], ended_groups: list[str]) -> Call[tuple[int, int]]:
    return Call(script("pruneGroups"), [keys.group_active, keys.active, keys.group_rate],
                [len(members), *members, *ended_groups], lambda reply: (int(reply[0]), int(reply[1])))


def prune_groups_steps(keys: QueueKeys) -> Steps[tuple[int, int]]:
    """Drop group-active members whose job left active and rate windows that ended, a batch
    per sweep (each re-checked in the script), so groups that never come back leave nothing."""
    members = [text(m) for m in (yield Command("zrange", keys.group_active, 0, PRUNE_BATCH - 1))]
    _, fields = yield Command("hscan", keys.group_rate, 0, count=PRUNE_BATCH)
    now_s, now_us = yield Command("time")
    now = int(now_s) * 1000 + int(now_us) // 1000
    ended = []
    for name, value in fields.items():
        name = text(name)
        if name.startswith("e" + GROUP_SEP) and int(value) <= now:
            ended.append(name[2:])
    if not members and not ended:
        return (0, 0)
    return (yield prune_groups(keys, members, ended))
