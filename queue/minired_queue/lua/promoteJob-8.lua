--[[ promoteJob: make one delayed job ready now, before its due time (an operator's
  "run it now"); ready by its priority (or in its group's line), as promoteDelayed does.

  KEYS[1] delayed   KEYS[2] wait   KEYS[3] prioritized   KEYS[4] meta   KEYS[5] marker
  KEYS[6] job hash   KEYS[7] group-wait   KEYS[8] groups
  ARGV[1] job id

  Returns 1 when the job moved, 0 when it was not delayed (any more).
]]
--- @include "pushReady"
local jobId = ARGV[1]
if redis.call('ZREM', KEYS[1], jobId) == 0 then
  return 0
end
placeReady({wait = KEYS[2], prioritized = KEYS[3], meta = KEYS[4], groupWait = KEYS[7], groups = KEYS[8]},
  KEYS[6], jobId, false)
redis.call('ZADD', KEYS[5], 0, '0')
return 1
