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
    {'active', now, due, next candidate or '', job id, job hash as a flat array (as it is
     after this script, in no particular field order)}
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
-- The two oldest waiting ids: the one to take, and the one after it (the next candidate).
local oldest = redis.call('LRANGE', KEYS[1], -2, -1)
local tail = oldest[#oldest]
if not tail then
  return {'empty', now, nextDue}
end
if tail ~= jobId then
  return {'miss', now, nextDue, tail}
end

local job = redis.call('HGETALL', KEYS[6])
if #job == 0 then
  -- An id without a job hash cannot be processed; drop it rather than wedge the queue.
  redis.call('RPOP', KEYS[1])
  return {'miss', now, nextDue, redis.call('LINDEX', KEYS[1], -1) or ''}
end

redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
redis.call('SET', KEYS[7], ARGV[2], 'PX', ARGV[3])

-- Count the delivery and stamp it in one write, and hand back the hash read above with the
-- same three fields changed (rather than reading it again).
local stamps = {attemptsStarted = '1', processedOn = tostring(now), lockedBy = ARGV[2]}
for i = 1, #job, 2 do
  if job[i] == 'attemptsStarted' then
    stamps.attemptsStarted = tostring((tonumber(job[i + 1]) or 0) + 1)
  end
end
redis.call('HSET', KEYS[6], 'attemptsStarted', stamps.attemptsStarted,
  'processedOn', stamps.processedOn, 'lockedBy', stamps.lockedBy)
local fields = {}
for i = 1, #job, 2 do
  if stamps[job[i]] == nil then
    fields[#fields + 1] = job[i]
    fields[#fields + 1] = job[i + 1]
  end
end
for field, value in pairs(stamps) do
  fields[#fields + 1] = field
  fields[#fields + 1] = value
end

local nextTail = ''
if #oldest == 2 then
  nextTail = oldest[1]
  -- More work is waiting: pass the wake-up on so another idle worker takes it.
  redis.call('ZADD', KEYS[5], 0, '0')
end
return {'active', now, nextDue, nextTail, jobId, fields}
