--[[ moveToActive: hand the oldest waiting job to a worker, under a lock.

  The job leaves wait and enters active in the same RPOPLPUSH, and its lock is set in
  the same script, so no instant exists where the job is in neither list or is in
  active without an owner.

  Scripts may only touch keys declared in KEYS, but the job's hash and lock keys depend
  on which job is at the tail of wait. So the caller names a candidate (the tail it last
  saw) and passes that candidate's keys; if the tail is now a different job the script
  changes nothing and returns that job's id as the next candidate ('miss').

  KEYS[1] wait   KEYS[2] active   KEYS[3] delayed   KEYS[4] meta   KEYS[5] marker
  KEYS[6] candidate's job hash    KEYS[7] candidate's lock
  ARGV[1] candidate job id   ARGV[2] lock token   ARGV[3] lock TTL (ms)

  Returns {status, now ms, next delayed due time ms or -1, ...}:
    {'active', now, due, next candidate or '', job id, job hash as a flat array}
    {'miss',   now, due, current tail id}
    {'empty',  now, due}
    {'paused', now, due}
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local nextDue = -1
local head = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if head[2] then
  nextDue = tonumber(head[2])
end

if redis.call('HEXISTS', KEYS[4], 'paused') == 1 then
  return {'paused', now, nextDue}
end

local jobId = ARGV[1]
local tail = redis.call('LINDEX', KEYS[1], -1)
if not tail then
  return {'empty', now, nextDue}
end
if tail ~= jobId then
  return {'miss', now, nextDue, tail}
end

if redis.call('EXISTS', KEYS[6]) == 0 then
  -- An id without a job hash cannot be processed; drop it rather than wedge the queue.
  redis.call('RPOP', KEYS[1])
  return {'miss', now, nextDue, redis.call('LINDEX', KEYS[1], -1) or ''}
end

redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
redis.call('SET', KEYS[7], ARGV[2], 'PX', ARGV[3])
redis.call('HINCRBY', KEYS[6], 'attemptsStarted', 1)
redis.call('HSET', KEYS[6], 'processedOn', now, 'lockedBy', ARGV[2])

local nextTail = redis.call('LINDEX', KEYS[1], -1)
if nextTail then
  -- More work is waiting: pass the wake-up on so another idle worker takes it.
  redis.call('ZADD', KEYS[5], 0, '0')
else
  nextTail = ''
end
return {'active', now, nextDue, nextTail, jobId, redis.call('HGETALL', KEYS[6])}
