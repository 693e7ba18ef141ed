--[[ retryJobs: move dead-lettered (or completed) jobs back to wait (or prioritized) with a
  fresh attempt budget.

  KEYS[1] failed (or completed: the job runs again, its result forgotten)
  KEYS[2] wait   KEYS[3] prioritized   KEYS[4] meta   KEYS[5] marker
  KEYS[6] group-wait   KEYS[7] groups (a grouped job goes back to its group's line)
  then KEYS[7+i] candidate i's job hash
  ARGV[i] candidate i's id

  Only ids still in that set move (a concurrent retry or remove wins once). A job retried
  after it expired (its TTL passed before it started) loses its `expireAt`: retrying it
  is asking for it to run.
  Returns the ids moved.
]]
--- @include "pushReady"
local ready = {wait = KEYS[2], prioritized = KEYS[3], meta = KEYS[4], groupWait = KEYS[6], groups = KEYS[7]}
local moved = {}
for i = 1, #ARGV do
  local jobId = ARGV[i]
  if redis.call('ZREM', KEYS[1], jobId) > 0 then
    local jobKey = KEYS[7 + i]
    redis.call('HSET', jobKey, 'attemptsMade', 0, 'stalledCounter', 0)
    redis.call('HDEL', jobKey, 'failedReason', 'stacktrace', 'finishedOn', 'returnvalue', 'expireAt')
    placeReady(ready, jobKey, jobId, false)
    moved[#moved + 1] = jobId
  end
end
if #moved > 0 then
  redis.call('ZADD', KEYS[5], 0, '0')
end
return moved
