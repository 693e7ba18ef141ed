--[[ releaseJob: give an unfinished job back (graceful shutdown past its deadline).

  The job returns to the front of wait (the tail, taken next) without counting as a
  failed attempt or a stall. Only the lock owner may release.

  KEYS[1] active   KEYS[2] wait   KEYS[3] marker   KEYS[4] lock   KEYS[5] job hash
  ARGV[1] job id   ARGV[2] lock token

  Returns 'released' or 'lost'.
]]
local jobId = ARGV[1]
if redis.call('GET', KEYS[4]) ~= ARGV[2] then
  return 'lost'
end
if redis.call('LREM', KEYS[1], -1, jobId) == 0 then
  return 'lost'
end
redis.call('DEL', KEYS[4])
redis.call('HDEL', KEYS[5], 'lockedBy')
redis.call('RPUSH', KEYS[2], jobId)
redis.call('ZADD', KEYS[3], 0, '0')
return 'released'
