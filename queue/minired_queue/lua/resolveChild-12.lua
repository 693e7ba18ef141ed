--[[ resolveChild: record a flow child's outcome with its parent, in the parent's slot.

  KEYS: as addParentJob's (the parent's queue and keys).
  ARGV[1] parent id   ARGV[2] the child's job key   ARGV[3] 'completed' | 'failed'
  ARGV[4] the child's return value (JSON) or failure reason   ARGV[5] events stream cap

  Idempotent: a child already recorded changes nothing ('known'), so the child's worker
  (right after its outcome) and any sweep of the parent's queue (which reads children's
  states) may both report it. A parent that does not exist (not added yet: children are
  added first; or removed) gets the result kept RESULTS_TTL_MS ('orphan'); addParentJob
  adopts it. The last pending child makes the parent ready ('parent-ready'); a failed
  child under 'fail' fails it ('parent-failed'); else 'recorded'.
]]
--- @include "serverNow"
--- @include "flowParent"
local parentId, child, outcome = ARGV[1], ARGV[2], ARGV[3]
if outcome ~= 'completed' and outcome ~= 'failed' then
  return redis.error_reply("ERR outcome must be 'completed' or 'failed'")
end
local keys = {waitingChildren = KEYS[1], job = KEYS[2], deps = KEYS[3], results = KEYS[4],
              failures = KEYS[5], wait = KEYS[6], prioritized = KEYS[7], meta = KEYS[8],
              marker = KEYS[9], failed = KEYS[10], metrics = KEYS[11], events = KEYS[12],
              eventsCap = ARGV[5]}
if redis.call('HEXISTS', keys.results, child) == 1 or redis.call('HEXISTS', keys.failures, child) == 1 then
  return 'known'
end
local targetKey = KEYS[5]  -- failures
if outcome == 'completed' then
  targetKey = KEYS[4]  -- results
end
redis.call('HSET', targetKey, child, ARGV[4])
if redis.call('EXISTS', keys.job) == 0 then
  redis.call('PEXPIRE', targetKey, RESULTS_TTL_MS)
  return 'orphan'
end
if not redis.call('ZSCORE', keys.waitingChildren, parentId) then
  return 'recorded'  -- the parent already left waiting-children (failed by an earlier child)
end
redis.call('SREM', keys.deps, child)
if outcome == 'failed' and redis.call('HGET', keys.job, 'onChildFailure') ~= 'ignore' then
  failParent(keys, parentId, child, ARGV[4], serverNow())
  return 'parent-failed'
end
if redis.call('SCARD', keys.deps) == 0 then
  readyParent(keys, parentId)
  return 'parent-ready'
end
return 'recorded'
