--[[ setPaused: pause or resume taking jobs from a queue.

  While paused, moveToActive hands out nothing; producers can still add and jobs
  already active finish normally. Resuming wakes a blocked worker (which passes the
  wake-up on while work remains).

  KEYS[1] meta   KEYS[2] marker
  ARGV[1] '1' to pause, '0' to resume

  Returns 1 if the state changed, 0 if it already was as asked.
]]
if ARGV[1] == '1' then
  return redis.call('HSET', KEYS[1], 'paused', 1)
end
local changed = redis.call('HDEL', KEYS[1], 'paused')
redis.call('ZADD', KEYS[2], 0, '0')
return changed
