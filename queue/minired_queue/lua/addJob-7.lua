--[[ addJob: create a job and put it in wait (or in delayed when it has a delay).

  KEYS[1] wait      KEYS[2] delayed   KEYS[3] marker   KEYS[4] job hash
  KEYS[5] dedup marker (emq:{q}:de:<dedup id>; declared even when ARGV[8] is empty)
  KEYS[6] metrics   KEYS[7] events

  ARGV[1] job id        ARGV[2] payload (JSON)   ARGV[3] job name
  ARGV[4] max attempts  ARGV[5] backoff type ('' | 'fixed' | 'exponential')
  ARGV[6] backoff delay (ms)   ARGV[7] delay (ms)
  ARGV[8] dedup id ('' for none)   ARGV[9] dedup TTL in ms (0: held until the job finishes)
  ARGV[10] events stream cap

  Returns {job id, created}: created = 1 when this call made the job, 0 when the id
  already existed or the dedup id is held (then the id returned is the holder's).
]]
local jobId = ARGV[1]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- A stable id makes adding idempotent: the second add of the same id is a no-op.
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {jobId, 0}
end

local dedupId = ARGV[8]
if dedupId ~= '' then
  local ttl = tonumber(ARGV[9])
  local taken
  if ttl > 0 then
    taken = redis.call('SET', KEYS[5], jobId, 'NX', 'PX', ttl)
  else
    taken = redis.call('SET', KEYS[5], jobId, 'NX')
  end
  if not taken then
    return {redis.call('GET', KEYS[5]), 0}
  end
end

local delay = tonumber(ARGV[7])
redis.call('HSET', KEYS[4],
  'data', ARGV[2], 'name', ARGV[3], 'timestamp', now, 'delay', delay,
  'maxAttempts', ARGV[4], 'backoffType', ARGV[5], 'backoffDelay', ARGV[6],
  'attemptsMade', 0, 'attemptsStarted', 0, 'stalledCounter', 0, 'dedupId', dedupId)

if delay > 0 then
  redis.call('ZADD', KEYS[2], now + delay, jobId)
else
  redis.call('LPUSH', KEYS[1], jobId)
end
-- Wake one blocked worker. For a delayed job this lets it shorten its wait to the due time.
redis.call('ZADD', KEYS[3], 0, '0')
redis.call('HINCRBY', KEYS[6], 'added', 1)
redis.call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[10], '*', 'event', delay > 0 and 'delayed' or 'waiting', 'jobId', jobId)
return {jobId, 1}
