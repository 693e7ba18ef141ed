--[[ releaseJob: give an unfinished job back (graceful shutdown past its deadline).

  The job returns to the front of its line (the tail of wait, or the head of its
  priority) without counting as a failed attempt or a stall. Only the lock owner may
  release.

  KEYS[1] active   KEYS[2] wait   KEYS[3] prioritized   KEYS[4] meta   KEYS[5] marker
  KEYS[6] lock     KEYS[7] job hash   KEYS[8] group-wait   KEYS[9] groups
  ARGV[1] job id   ARGV[2] lock token

  Returns 'released' or 'lost'.
]]
--- @include "takeOwned"
--- @include "pushReady"
local jobId = ARGV[1]
if not takeOwned(KEYS[1], KEYS[6], jobId, ARGV[2]) then
  return 'lost'
end
redis.call('HDEL', KEYS[7], 'lockedBy')
placeReady({wait = KEYS[2], prioritized = KEYS[3], meta = KEYS[4], groupWait = KEYS[8], groups = KEYS[9]},
  KEYS[7], jobId, true)
redis.call('ZADD', KEYS[5], 0, '0')
return 'released'
