--[[ recordDepth: note how many jobs are ready to run (wait + prioritized) in the queue's
  per-minute history, as field `<minute>:waiting` (the largest depth seen in that minute),
  so the dashboard's depth chart is the same for every dashboard and bounded like the rest
  of the history (recordFinish prunes the field with the others, and the hash expires).
  The workers' sweep runs it once per sweep interval (for the fleet), never a dashboard.

  KEYS[1] wait   KEYS[2] prioritized   KEYS[3] history
  Returns the depth now.
]]
--- @include "serverNow"
--- @include "recordFinish"
local depth = redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2])
if depth == 0 and redis.call('EXISTS', KEYS[3]) == 0 then
  return 0  -- a queue with no history and nothing ready (or none at all): no key to create
end
local field = historyMinute(KEYS[3], serverNow()) .. 'waiting'
local seen = tonumber(redis.call('HGET', KEYS[3], field))
if not seen or depth > seen then
  redis.call('HSET', KEYS[3], field, depth)
end
return depth
