--[[ complete: record a job's success and take it out of active.

  KEYS[1] active   KEYS[2] completed   KEYS[3] lock   KEYS[4] job hash
  KEYS[5] the job's dedup marker (declared even when the job has no dedup id)
  KEYS[6] metrics  KEYS[7] events   KEYS[8] meta   KEYS[9] marker   KEYS[10] history
  KEYS[11] the job's logs (deleted with the job)
  ARGV[1] job id   ARGV[2] lock token   ARGV[3] return value (JSON)
  ARGV[4] '1' to delete the job instead of keeping it in completed
  ARGV[5] events stream cap   ARGV[6] the job's dedup id ('' for none)
  ARGV[7] the delivery's processedOn, as moveToActive stamped it ('' : read from the hash)

  The `completed` event carries the return value (a waiter gets it even from a job deleted
  as it completes).

  Returns 'completed', or 'lost' when the caller no longer owns the lock (the result is
  discarded: the job was, or will be, delivered to someone else).
]]
--- @include "serverNow"
--- @include "takeOwned"
--- @include "freeDedup"
--- @include "recordFinish"
--- @include "wakeIfCapped"
--- @include "emitEvent"
local jobId = ARGV[1]
if not takeOwned(KEYS[1], KEYS[3], jobId, ARGV[2]) then
  return 'lost'
end
local now = serverNow()
if ARGV[6] ~= '' then
  freeDedup(KEYS[5], jobId)
end
recordFinish(KEYS[6], KEYS[10], now, 'completed', attemptDuration(KEYS[4], now, ARGV[7]))

if ARGV[4] == '1' then
  redis.call('DEL', KEYS[4], KEYS[11])
else
  redis.call('HSET', KEYS[4], 'finishedOn', now, 'returnvalue', ARGV[3])
  redis.call('HDEL', KEYS[4], 'lockedBy')
  redis.call('ZADD', KEYS[2], now, jobId)
end
wakeIfCapped(KEYS[8], KEYS[9])
emitEvent(KEYS[7], ARGV[5], 'completed', jobId, 'returnvalue', ARGV[3])
return 'completed'
