-- Under a queue-wide concurrency cap (or a per-group one), a worker that found the cap
-- reached sleeps on the marker: a job leaving active must wake one.
local function wakeIfCapped(metaKey, markerKey)
  local caps = redis.call('HMGET', metaKey, 'concurrency', 'groupConcurrency')
  if caps[1] or caps[2] then
    redis.call('ZADD', markerKey, 0, '0')
  end
end
