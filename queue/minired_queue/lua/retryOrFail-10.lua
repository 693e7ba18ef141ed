--[[ retryOrFail: record a failed attempt; schedule a retry or dead-letter the job.

  KEYS[1] active   KEYS[2] wait   KEYS[3] delayed   KEYS[4] failed   KEYS[5] marker
  KEYS[6] lock     KEYS[7] job hash   KEYS[8] the job's dedup marker
  KEYS[9] metrics  KEYS[10] events
  ARGV[1] job id   ARGV[2] lock token   ARGV[3] error message   ARGV[4] stack trace
  ARGV[5] '1' when the error is unrecoverable (no retry whatever the attempts left)
  ARGV[6] events stream cap

  The backoff is computed here, from the job's own options and the server clock:
  fixed: delay; exponential: delay * 2^(attempts made - 1).

  Returns {'retry', delay ms}, {'failed', attempts made}, or {'lost'} when the caller
  no longer owns the lock.
]]
local jobId = ARGV[1]
if redis.call('GET', KEYS[6]) ~= ARGV[2] then
  return {'lost'}
end
if redis.call('LREM', KEYS[1], -1, jobId) == 0 then
  return {'lost'}
end
redis.call('DEL', KEYS[6])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local made = redis.call('HINCRBY', KEYS[7], 'attemptsMade', 1)
redis.call('HSET', KEYS[7], 'failedReason', ARGV[3], 'stacktrace', ARGV[4])
redis.call('HDEL', KEYS[7], 'lockedBy')
local maxAttempts = tonumber(redis.call('HGET', KEYS[7], 'maxAttempts')) or 1

if ARGV[5] ~= '1' and made < maxAttempts then
  local backoffType = redis.call('HGET', KEYS[7], 'backoffType')
  local backoffDelay = tonumber(redis.call('HGET', KEYS[7], 'backoffDelay')) or 0
  local delay = 0
  if backoffType == 'fixed' then
    delay = backoffDelay
  elseif backoffType == 'exponential' then
    delay = backoffDelay * math.pow(2, made - 1)
  end
  delay = math.floor(delay)
  if delay > 0 then
    redis.call('ZADD', KEYS[3], now + delay, jobId)
  else
    redis.call('LPUSH', KEYS[2], jobId)
  end
  redis.call('ZADD', KEYS[5], 0, '0')
  redis.call('HINCRBY', KEYS[9], 'retried', 1)
  redis.call('XADD', KEYS[10], 'MAXLEN', '~', ARGV[6], '*', 'event', 'retrying', 'jobId', jobId,
    'attemptsMade', made, 'delay', delay, 'failedReason', ARGV[3])
  return {'retry', delay}
end

if redis.call('GET', KEYS[8]) == jobId and redis.call('PTTL', KEYS[8]) == -1 then
  redis.call('DEL', KEYS[8])
end
redis.call('HSET', KEYS[7], 'finishedOn', now)
redis.call('ZADD', KEYS[4], now, jobId)
redis.call('HINCRBY', KEYS[9], 'failed', 1)
redis.call('XADD', KEYS[10], 'MAXLEN', '~', ARGV[6], '*', 'event', 'failed', 'jobId', jobId,
  'attemptsMade', made, 'failedReason', ARGV[3])
return {'failed', made}
