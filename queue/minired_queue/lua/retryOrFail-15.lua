--[[ retryOrFail: record a failed attempt; schedule a retry or dead-letter the job.

  KEYS[1] active   KEYS[2] wait   KEYS[3] delayed   KEYS[4] prioritized   KEYS[5] failed
  KEYS[6] marker   KEYS[7] lock   KEYS[8] job hash   KEYS[9] the job's dedup marker
  KEYS[10] meta    KEYS[11] metrics   KEYS[12] history   KEYS[13] events
  KEYS[14] group-wait   KEYS[15] groups (a grouped job is retried into its group's line)
  ARGV[1] job id   ARGV[2] lock token   ARGV[3] error message   ARGV[4] stack trace
  ARGV[5] '1' when the error is unrecoverable (no retry whatever the attempts left)
  ARGV[6] events stream cap
  ARGV[7] the delivery's processedOn, as moveToActive stamped it ('' : read from the hash)

  The backoff is computed here, from the job's own options and the server clock:
  fixed: delay; exponential: delay * 2^(attempts made - 1). A retry without backoff
  goes back to wait (or prioritized) behind the jobs already there.

  Returns {'retry', delay ms}, {'failed', attempts made}, or {'lost'} when the caller
  no longer owns the lock.
]]
--- @include "serverNow"
--- @include "takeOwned"
--- @include "freeDedup"
--- @include "pushReady"
--- @include "recordFinish"
--- @include "wakeIfCapped"
--- @include "emitEvent"
--- @include "storedInteger"
--- @include "recordError"
local jobId = ARGV[1]
if not takeOwned(KEYS[1], KEYS[7], jobId, ARGV[2]) then
  return {'lost'}
end
local now = serverNow()
local jobKey = KEYS[8]
local duration = attemptDuration(jobKey, now, ARGV[7])

-- Not HINCRBY: it would fail on a job whose count is not a number, and the job could then
-- never leave active (the worker fails such an unreadable job through this script).
local made = (storedInteger(redis.call('HGET', jobKey, 'attemptsMade')) or 0) + 1
redis.call('HSET', jobKey, 'attemptsMade', made, 'failedReason', ARGV[3], 'stacktrace', ARGV[4])
recordError(jobKey, ARGV[3], now)
redis.call('HDEL', jobKey, 'lockedBy')
local opts = redis.call('HMGET', jobKey, 'maxAttempts', 'backoffType', 'backoffDelay', 'priority')
local maxAttempts = storedInteger(opts[1]) or 1
wakeIfCapped(KEYS[10], KEYS[6])

if ARGV[5] ~= '1' and made < maxAttempts then
  local backoffType, backoffDelay = opts[2], storedInteger(opts[3]) or 0
  local delay = 0
  if backoffType == 'fixed' then
    delay = backoffDelay
  elseif backoffType == 'exponential' then
    delay = backoffDelay * math.pow(2, made - 1)
  end
  -- (capped at the longest duration the library takes, 2^42 ms: a larger number would be
  -- written into the 'retrying' event as "1e+21", which readers parse as an integer)
  delay = math.min(math.floor(delay), 4398046511104)
  if delay > 0 then
    redis.call('ZADD', KEYS[3], now + delay, jobId)
  else
    placeReady({wait = KEYS[2], prioritized = KEYS[4], meta = KEYS[10], groupWait = KEYS[14], groups = KEYS[15]},
      jobKey, jobId, false)
  end
  redis.call('ZADD', KEYS[6], 0, '0')
  recordFinish(KEYS[11], KEYS[12], now, 'retried', duration)
  emitEvent(KEYS[13], ARGV[6], 'retrying', jobId, 'attemptsMade', made, 'delay', delay, 'failedReason', ARGV[3])
  return {'retry', delay}
end

freeDedup(KEYS[9], jobId)
redis.call('HSET', jobKey, 'finishedOn', now)
redis.call('ZADD', KEYS[5], now, jobId)
recordFinish(KEYS[11], KEYS[12], now, 'failed', duration)
emitEvent(KEYS[13], ARGV[6], 'failed', jobId, 'attemptsMade', made, 'failedReason', ARGV[3])
return {'failed', made}
