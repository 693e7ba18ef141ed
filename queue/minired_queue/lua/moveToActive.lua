--[[ moveToActive: hand the oldest waiting job to a worker, under a lock.

  The job leaves wait and enters active in the same RPOPLPUSH, and its lock is set in
  the same script, so no instant exists where the job is in neither list or is in
  active without an owner.

  Scripts may only touch keys declared in KEYS, but the job's hash and lock keys depend
  on which job is at the tail of wait. So the caller names candidates (tails it last saw,
  oldest first) and passes their keys; if the tail is none of them the script changes
  nothing and returns the current tails as the next candidates ('miss'). Several workers
  race for the same tail: naming the few jobs behind it too lets a worker take whichever
  of them is the tail by the time its call runs, instead of missing and asking again.

  KEYS[1] wait   KEYS[2] active   KEYS[3] delayed   KEYS[4] meta   KEYS[5] marker
  KEYS[4 + 2i] candidate i's job hash   KEYS[5 + 2i] candidate i's lock   (i = 1 .. n)
  ARGV[1] lock token   ARGV[2] lock TTL (ms)   ARGV[3] how many candidates to hand back
  ARGV[3 + i] candidate i's job id

  Returns {status, now ms, next delayed due time ms or -1, ...}:
    {'active', now, due, next candidates (oldest first), job id, job hash as a flat array
     (as it is after this script, in no particular field order)}
    {'miss',   now, due, current candidates (oldest first)}
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

local want = math.max(1, tonumber(ARGV[3]) or 1)
-- The oldest waiting ids: the one to take, and the ones after it (the next candidates).
local oldest = redis.call('LRANGE', KEYS[1], -(want + 1), -1)
local tail = oldest[#oldest]
if not tail then
  return {'empty', now, nextDue}
end

-- The ids from the tail backwards (oldest first), leaving out the first `skip`.
local function candidates(ids, skip)
  local out = {}
  for i = #ids - skip, math.max(1, #ids - skip - want + 1), -1 do
    out[#out + 1] = ids[i]
  end
  return out
end

local slot
for i = 4, #ARGV do
  if ARGV[i] == tail then
    slot = i - 3
    break
  end
end
if not slot then
  return {'miss', now, nextDue, candidates(oldest, 0)}
end
local jobKey, lockKey = KEYS[4 + 2 * slot], KEYS[5 + 2 * slot]

local job = redis.call('HGETALL', jobKey)
if #job == 0 then
  -- An id without a job hash cannot be processed; drop it rather than wedge the queue.
  redis.call('RPOP', KEYS[1])
  return {'miss', now, nextDue, candidates(oldest, 1)}
end

redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
redis.call('SET', lockKey, ARGV[1], 'PX', ARGV[2])

-- Count the delivery and stamp it in one write, and hand back the hash read above with the
-- same three fields changed (rather than reading it again).
local stamps = {attemptsStarted = '1', processedOn = tostring(now), lockedBy = ARGV[1]}
for i = 1, #job, 2 do
  if job[i] == 'attemptsStarted' then
    stamps.attemptsStarted = tostring((tonumber(job[i + 1]) or 0) + 1)
  end
end
redis.call('HSET', jobKey, 'attemptsStarted', stamps.attemptsStarted,
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

if #oldest > 1 then
  -- More work is waiting: pass the wake-up on so another idle worker takes it.
  redis.call('ZADD', KEYS[5], 0, '0')
end
return {'active', now, nextDue, candidates(oldest, 1), tail, fields}
