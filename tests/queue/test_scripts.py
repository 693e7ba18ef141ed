"""Key layout and the Lua scripts themselves."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from redis.cluster import RedisCluster
from redis.crc import key_slot

from minired_queue.flows import add_child, add_parent_job, resolve_child
from minired_queue.job import Job, JobSpec
from minired_queue.keys import QueueKeys, job_key_parts
from minired_queue.scripts import SCRIPTS
from minired_queue.transitions import (
    add_debounced_job,
    add_job,
    add_log,
    add_repeated_job,
    clean_jobs,
    complete,
    move_stalled_to_wait,
    move_to_active,
    promote_delayed,
    promote_job,
    release,
    remove_jobs,
    remove_repeatable,
    retry_jobs,
    retry_or_fail,
    update_progress,
    upsert_repeatable,
    worker_heartbeat,
)

EXPECTED_TRANSITIONS = {"addJob", "moveToActive", "extendLock", "complete", "retryOrFail",
                        "moveStalledJobsToWait", "promoteDelayed", "releaseJob", "setPaused",
                        "removeJobs", "retryJobs", "applyEffectOnce", "releaseEffect", "updateProgress",
                        "cleanJobs", "addRepeatedJob", "upsertRepeatable", "removeRepeatable", "recordDepth",
                        "promoteJob", "addLog", "workerHeartbeat", "addDebouncedJob"}
EXPECTED_TRANSITIONS |= {"addParentJob", "resolveChild"}  # flows.py
EXPECTED_TRANSITIONS |= {"pruneGroups"}  # groups.py

ROOT = Path(__file__).resolve().parents[2]

# Names bound to KEYS[...] entries before being passed to redis.call: locals and function
# parameters ending in "Key", and fields of a table of keys built from KEYS.
KEY_NAME = re.compile(r"^(\w+Key|keys\.\w+)$")


def _code_only(lua: str) -> str:
    without_blocks = re.sub(r"--\[\[.*?\]\]", "", lua, flags=re.S)
    return re.sub(r"--[^\n]*", "", without_blocks)


def test_every_transition_has_its_own_script():
    assert set(SCRIPTS) == EXPECTED_TRANSITIONS


@pytest.mark.parametrize("name", sorted(EXPECTED_TRANSITIONS))
def test_scripts_touch_only_keys_passed_in_KEYS(name):
    """No key name is built inside Lua: the first argument of every keyed redis.call is a
    KEYS entry (directly or through a local bound to one)."""
    source = _code_only(SCRIPTS[name].source)
    calls = re.findall(r"redis\.call\('(\w+)',\s*([^,)]+)", source)
    assert calls
    for command, first_arg in calls:
        first_arg = first_arg.strip()
        assert first_arg.startswith("KEYS[") or KEY_NAME.match(first_arg), (command, first_arg)
    assert "emq" not in source
    # ... and every such name is bound only to a KEYS entry (or passed one, by its callers).
    for name, value in re.findall(r"(\w+Key)\s*=\s*([^\n,]+)", source):
        assert value.strip().startswith("KEYS["), (name, value)
    for value in re.findall(r"[{,]\s*(?:wait|delayed|prioritized|meta|marker|job|metrics|events) = ([^,}]+)", source):
        assert value.strip().startswith("KEYS["), value


def test_included_snippets_are_assembled_once_per_script():
    for script in SCRIPTS.values():
        assert "@include" not in script.source, script.name
        for function in re.findall(r"local function (\w+)", script.source):
            assert script.source.count(f"local function {function}(") == 1, (script.name, function)
    # The shared snippets are shared, not copied: one definition in lua/includes/ each.
    assert "local function takeOwned" not in (ROOT / "queue/minired_queue/lua/complete-11.lua").read_text()
    assert "local function takeOwned" in SCRIPTS["complete"].source and "takeOwned(" in SCRIPTS["releaseJob"].source


def test_declared_key_counts_match_the_lua_headers():
    for script in SCRIPTS.values():
        highest = max((int(n) for n in re.findall(r"KEYS\[(\d+)\]", script.source)), default=0)
        if script.numkeys is not None:
            assert highest == script.numkeys, script.name


def test_every_key_of_a_queue_is_in_one_cluster_slot():
    keys = QueueKeys("orders")
    job = Job.from_hash("j1", {"data": "1", "dedupId": "d1"})
    calls = [add_job(keys, JobSpec(1, job_id="j1", dedup_id="d1")), move_to_active(keys, ["j1", "j2"], "t", 10),
             complete(keys, job, "t", None), retry_or_fail(keys, job, "t", "boom"),
             move_stalled_to_wait(keys, [("j1", "d1"), ("j2", None)]), remove_jobs(keys, [("j1", "d1")]),
             promote_delayed(keys, ["j1"]), update_progress(keys, "j1", "t", 5),
             clean_jobs(keys, "failed", ["j1"], 1, None),
             add_repeated_job(keys, "r:1", 1000, 2000), upsert_repeatable(keys, "r:1", 1000, "every:1000", {}),
             remove_repeatable(keys, "r:1", "repeat:r:1:1000"), release(keys, "j1", "t"),
             move_to_active(keys, ["j1"], "t", 10, dedup_ids={"j1": "d1"}),
             add_debounced_job(keys, JobSpec(1, job_id="j2", dedup_id="d1", debounce_ms=5), "j1"),
             promote_job(keys, "j1"), add_log(keys, "j1", "line", 10), worker_heartbeat(keys, "w", 10, {}),
             retry_jobs(keys, ["j1"], "completed")]
    slots = {key_slot(k.encode()) for call in calls for k in call.keys}
    slots |= {key_slot(k.encode()) for k in (keys.events, keys.progress, keys.wake("w"), keys.effect("j1", "e"), keys.limiter,
                                             keys.history, keys.repeat, keys.repeat_spec("r:1"))}
    assert slots == {key_slot(b"{orders}")}


def test_every_flow_script_stays_in_the_parent_queues_slot():
    """A flow's parent keys share its queue's slot; a child on another queue is named only
    as a value (a hash field, a set member), never as a key of the parent's scripts."""
    keys, other = QueueKeys("orders"), QueueKeys("photos")
    child_key = other.job("c1")
    calls = [add_parent_job(keys, JobSpec(1, job_id="p1"), [child_key, keys.job("c2")], "fail"),
             resolve_child(keys, "p1", child_key, "completed", "1"), remove_jobs(keys, [("p1", None)])]
    assert {key_slot(k.encode()) for call in calls for k in call.keys} == {key_slot(b"{orders}")}
    assert [key_slot(k.encode()) for k in add_child(other, JobSpec(1, job_id="c1"), "orders", "p1").keys] == [
        key_slot(b"{photos}")] * 11
    assert job_key_parts(child_key) == ("emq", "photos", "c1")
    assert job_key_parts(QueueKeys("a:job:b}x".replace("}", "")).job("c:job:d")) == ("emq", "a:job:bx", "c:job:d")


def test_key_names_follow_the_documented_layout():
    keys = QueueKeys("mail")
    assert (keys.wait, keys.active, keys.delayed, keys.failed) == (
        "emq:{mail}:wait", "emq:{mail}:active", "emq:{mail}:delayed", "emq:{mail}:failed")
    assert keys.job("7") == "emq:{mail}:job:7"
    assert keys.lock("7") == "emq:{mail}:lock:7"
    assert keys.dedup("abc") == "emq:{mail}:de:abc"
    with pytest.raises(ValueError):
        QueueKeys("bad{name}")


def test_noscript_falls_back_and_reloads(backend, client, queue):
    queue.add({"n": 1})
    if backend.cluster:
        client.execute_command("SCRIPT", "FLUSH", target_nodes=RedisCluster.PRIMARIES)
    else:
        client.script_flush()
    queue.add({"n": 2})  # EVALSHA answers NOSCRIPT; EVAL runs it and caches it again
    assert queue.counts()["wait"] == 2
    if backend.cluster:
        client.execute_command("SCRIPT", "FLUSH", target_nodes=RedisCluster.PRIMARIES)
    else:
        client.script_flush()
    queue.add_many([JobSpec({"n": i}) for i in range(3, 10)])  # the pipelined path recovers too
    assert queue.counts()["wait"] == 9
