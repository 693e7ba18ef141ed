-- Under a queue-wide concurrency cap, a worker that found the cap reached sleeps on the
-- marker: a job leaving active must wake one.
local function wakeIfCapped(metaKey, markerKey)
  if redis.call('HEXISTS', metaKey, 'concurrency') == 1 then
    redis.call('ZADD', markerKey, 0, '0')
  end
end
