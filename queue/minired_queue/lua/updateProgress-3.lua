--[[ updateProgress: a running job reports its progress (any JSON value).

  Only the lock owner may report, so a delivery that lost its job cannot overwrite the
  progress of the one that owns it now.

  KEYS[1] lock   KEYS[2] job hash   KEYS[3] progress stream (its own, not the events stream:
  a handler reporting often must not push the job events out of theirs)
  ARGV[1] job id   ARGV[2] lock token   ARGV[3] progress (JSON)   ARGV[4] progress stream cap

  Returns 1 when recorded, 0 when the caller no longer owns the job.
]]
--- @include "emitEvent"
if redis.call('GET', KEYS[1]) ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[2], 'progress', ARGV[3])
emitEvent(KEYS[3], ARGV[4], 'progress', ARGV[1], 'data', ARGV[3])
return 1
