--[[ complete: record a job's success and take it out of active.

  KEYS[1] active   KEYS[2] completed   KEYS[3] lock   KEYS[4] job hash
  KEYS[5] the job's dedup marker (declared even when the job has no dedup id)
  KEYS[6] metrics  KEYS[7] events
  ARGV[1] job id   ARGV[2] lock token   ARGV[3] return value (JSON)
  ARGV[4] '1' to delete the job instead of keeping it in completed
  ARGV[5] events stream cap   ARGV[6] the job's dedup id ('' for none)

  Returns 'completed', or 'lost' when the caller no longer owns the lock (the result is
  discarded: the job was, or will be, delivered to someone else).
]]
local jobId = ARGV[1]
if redis.call('GET', KEYS[3]) ~= ARGV[2] then
  return 'lost'
end
if redis.call('LREM', KEYS[1], -1, jobId) == 0 then
  -- Locked but not active cannot happen through these scripts; refuse rather than guess.
  return 'lost'
end
redis.call('DEL', KEYS[3])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- A dedup marker without a TTL is held for as long as its job is pending.
if ARGV[6] ~= '' and redis.call('GET', KEYS[5]) == jobId and redis.call('PTTL', KEYS[5]) == -1 then
  redis.call('DEL', KEYS[5])
end

if ARGV[4] == '1' then
  redis.call('DEL', KEYS[4])
else
  redis.call('HSET', KEYS[4], 'finishedOn', now, 'returnvalue', ARGV[3])
  redis.call('HDEL', KEYS[4], 'lockedBy')
  redis.call('ZADD', KEYS[2], now, jobId)
end
redis.call('HINCRBY', KEYS[6], 'completed', 1)
redis.call('XADD', KEYS[7], 'MAXLEN', '~', ARGV[5], '*', 'event', 'completed', 'jobId', jobId)
return 'completed'
