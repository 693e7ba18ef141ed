--[[ promoteJob: make one delayed job ready now, before its due time (an operator's
  "run it now"); ready by its priority, as promoteDelayed does.

  KEYS[1] delayed   KEYS[2] wait   KEYS[3] prioritized   KEYS[4] meta   KEYS[5] marker
  KEYS[6] job hash
  ARGV[1] job id

  Returns 1 when the job moved, 0 when it was not delayed (any more).
]]
--- @include "pushReady"
local jobId = ARGV[1]
if redis.call('ZREM', KEYS[1], jobId) == 0 then
  return 0
end
pushReady(KEYS[2], KEYS[3], KEYS[4], jobId, redis.call('HGET', KEYS[6], 'priority'), false)
redis.call('ZADD', KEYS[5], 0, '0')
return 1
