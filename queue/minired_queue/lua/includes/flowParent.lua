--- @include "pushReady"
--- @include "emitEvent"
-- A flow parent leaving waiting-children, once, in its own queue's slot. keys: waitingChildren,
-- job, deps, results, failures (the parent's), wait, prioritized, meta, marker, failed,
-- metrics, events, eventsCap. Its children's results and failures are kept RESULTS_TTL_MS
-- from then (as effect markers are), so they outlive the parent's run without leaking.
local RESULTS_TTL_MS = 7 * 86400000

local function keepResults(keys)
  redis.call('PEXPIRE', keys.results, RESULTS_TTL_MS)
  redis.call('PEXPIRE', keys.failures, RESULTS_TTL_MS)
end

-- Every child finished (or failed under 'ignore'): the parent becomes ready.
local function readyParent(keys, parentId)
  redis.call('ZREM', keys.waitingChildren, parentId)
  redis.call('DEL', keys.deps)
  keepResults(keys)
  pushReady(keys.wait, keys.prioritized, keys.meta, parentId, redis.call('HGET', keys.job, 'priority'), false)
  redis.call('ZADD', keys.marker, 0, '0')
  emitEvent(keys.events, keys.eventsCap, 'waiting', parentId)
end

-- A child failed for good (or was removed) under 'fail': the parent fails without running,
-- its reason naming the child.
local function failParent(keys, parentId, childKey, reason, now)
  redis.call('ZREM', keys.waitingChildren, parentId)
  redis.call('DEL', keys.deps)
  keepResults(keys)
  local failedReason = 'child ' .. childKey .. ' failed: ' .. reason
  redis.call('HSET', keys.job, 'failedReason', failedReason, 'finishedOn', now)
  redis.call('ZADD', keys.failed, now, parentId)
  redis.call('HINCRBY', keys.metrics, 'failed', 1)
  emitEvent(keys.events, keys.eventsCap, 'failed', parentId, 'failedReason', failedReason)
end
