--[[ releaseEffect: give up an effect marker this caller took, after the effect failed,
  so the next delivery of the job tries the effect again.

  KEYS[1] the effect's dedup marker   KEYS[2] the job's effects set (the marker leaves it)
  ARGV[1] the value the caller set (its lock token)

  Returns 1 when released, 0 when the marker is gone or held by someone else.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SREM', KEYS[2], KEYS[1])
  return redis.call('DEL', KEYS[1])
end
return 0
