--[[ moveToActive: hand the next ready job to a worker, under a lock.

  The next job is the tail of wait (jobs without a priority, FIFO) or, when wait is
  empty, the first of the prioritized zset (lowest priority, then oldest): ZRANGE 0 0,
  O(log n). The job leaves its container and enters active in the same script that sets
  its lock, so no instant exists where the job is in neither or is active without owner.

  Scripts may only touch keys declared in KEYS, but the job's hash and lock keys depend
  on which job is next. So the caller names candidates (jobs it last saw at the front,
  next first) and passes their keys; if the next job is none of them the script changes
  nothing and returns the current front as the next candidates ('miss'). Several workers
  race for the same job: naming the few jobs behind it too lets a worker take whichever
  of them is next by the time its call runs, instead of missing and asking again.

  Queue settings in meta are honoured first: `paused`; `concurrency` (at most that many
  jobs in active, across all workers: 'capped'); `rateMax` per `rateDuration` ms (at
  most that many jobs handed out per window, across all workers: 'limited', with the ms
  left in the window; the window is the limiter key's PX).

  Groups: a job with a `group` waits in its group's line (group-wait, see pushReady). When
  wait is empty, the groups in the rotation (groups zset, lowest turn first; the first
  GROUP_SCAN of them) each offer their oldest job, skipping a group at its limits: meta
  `groupConcurrency` (its jobs in active, tracked in group-active as `<group>\0<id>`
  members, each re-checked with LPOS active and dropped once gone) and `groupRateMax` per
  `groupRateDuration` ms (group-rate fields `c\0<group>` count and `e\0<group>` window
  end, server ms). A skipped group goes to the back of the rotation; a served one too.
  Then the prioritized zset. Nothing ready but groups skipped: 'capped' (a group at its
  concurrency; a job leaving active wakes a worker) or 'limited' (ms to the first window end).

  Expiry: a job with an `expireAt` (server ms, set by addJob from its ttl) that was never
  delivered (`attemptsStarted` 0) and whose time has passed by the server clock is not
  handed out: it goes to failed with the reason 'expired' (an `expired` flag on its
  `failed` event), its TTL-less dedup marker is freed, and the reply is 'expired' with the
  next candidates. Freeing the marker needs its key: when the job has a dedup id and the
  caller did not pass that marker's key with the candidate, nothing changes and the reply
  is 'dedup' with the job's dedup id; the caller retries with the key.

  KEYS[1] wait   KEYS[2] active   KEYS[3] delayed   KEYS[4] prioritized   KEYS[5] meta
  KEYS[6] marker   KEYS[7] limiter   KEYS[8] failed   KEYS[9] metrics   KEYS[10] history
  KEYS[11] events   KEYS[12] group-wait   KEYS[13] groups   KEYS[14] group-active
  KEYS[15] group-rate
  KEYS[13 + 3i] candidate i's job hash   KEYS[14 + 3i] candidate i's lock
  KEYS[15 + 3i] candidate i's dedup marker (emq:{q}:de:<dedup id>, or emq:{q}:de: when unknown)
  (i = 1 .. n)
  ARGV[1] lock token   ARGV[2] lock TTL (ms)   ARGV[3] how many candidates to hand back
  ARGV[4] events stream cap   ARGV[4 + i] candidate i's job id

  Emits an `active` event for the job handed out.

  Returns {status, now ms, next delayed due time ms or -1, ...}:
    {'active', now, due, next candidates (next first), job id, job hash as a flat array
     (as it is after this script, in no particular field order)}
    {'miss' | 'expired', now, due, current candidates (next first)}
    {'dedup',   now, due, job id, its dedup id}
    {'limited', now, due, ms until the rate limit window ends}
    {'empty' | 'paused' | 'capped', now, due}
]]
--- @include "serverNow"
--- @include "storedInteger"
--- @include "freeDedup"
--- @include "recordFinish"
--- @include "emitEvent"
--- @include "pushReady"
local FIRST_CANDIDATE = 5
local GROUP_SCAN = 64
local now = serverNow()

local nextDue = -1
local head = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if head[2] then
  nextDue = tonumber(head[2])
end

local settings = redis.call('HMGET', KEYS[5], 'paused', 'concurrency', 'rateMax', 'groupConcurrency',
  'groupRateMax')
if settings[1] then
  return {'paused', now, nextDue}
end
local cap = tonumber(settings[2])
if cap and redis.call('LLEN', KEYS[2]) >= cap then
  return {'capped', now, nextDue}
end
local rateMax = tonumber(settings[3])
if rateMax and (tonumber(redis.call('GET', KEYS[7])) or 0) >= rateMax then
  local left = redis.call('PTTL', KEYS[7])
  if left > 0 then
    return {'limited', now, nextDue, left}
  end
  redis.call('DEL', KEYS[7])  -- a limiter without expiry cannot be: start a fresh window
end

local want = math.max(1, tonumber(ARGV[3]) or 1)
-- The next want + 1 jobs in the order they will be taken: the one to take, then the
-- next candidates. From wait's tail backwards, then the prioritized zset's head.
local order = {}
local fromGroup = {}  -- order index -> {group, member} for a grouped job
local fromWait = redis.call('LRANGE', KEYS[1], -(want + 1), -1)
for i = #fromWait, 1, -1 do
  order[#order + 1] = fromWait[i]
end
local waiting = #order

local groupCap, groupRateMax = storedInteger(settings[4]), storedInteger(settings[5])
local groupCapped, groupWindowLeft = false, nil
-- Whether a group may start a job now; records why not (for the reply when nothing runs).
local function groupOpen(group)
  if groupCap then
    local running = 0
    for _, member in ipairs(redis.call('ZRANGEBYLEX', KEYS[14], '[' .. group .. GROUP_SEP, '(' .. group .. '\1')) do
      if redis.call('LPOS', KEYS[2], string.sub(member, #group + 2)) then
        running = running + 1
      else
        redis.call('ZREM', KEYS[14], member)  -- it left active (finished, retried, recovered)
      end
    end
    if running >= groupCap then
      groupCapped = true
      return false
    end
  end
  if groupRateMax then
    local window = redis.call('HMGET', KEYS[15], 'c' .. GROUP_SEP .. group, 'e' .. GROUP_SEP .. group)
    local ends = storedInteger(window[2])
    if ends and ends > now and (storedInteger(window[1]) or 0) >= groupRateMax then
      groupWindowLeft = math.min(groupWindowLeft or (ends - now), ends - now)
      return false
    end
  end
  return true
end

if #order < want + 1 then
  local open = {}
  for _, group in ipairs(redis.call('ZRANGE', KEYS[13], 0, GROUP_SCAN - 1)) do
    if #order >= want + 1 then
      break
    end
    local member = groupHead(KEYS[12], group)
    if not member then
      redis.call('ZREM', KEYS[13], group)  -- its line emptied without it leaving: repair
    elseif groupOpen(group) then
      order[#order + 1] = string.sub(member, #group + 2 + 16 + 1)
      fromGroup[#order] = {group, member}
      open[#open + 1] = group
    else
      redis.call('ZADD', KEYS[13], redis.call('HINCRBY', KEYS[5], 'gt', 1), group)  -- cannot run now
    end
  end
  -- Candidates only (never taken by this call): the open groups' next jobs, round by
  -- round, so workers racing on few groups name the jobs behind the heads too.
  local round = 1
  while #order < want + 1 and #open > 0 and round <= want do
    for _, group in ipairs(open) do
      local member = redis.call('ZRANGEBYLEX', KEYS[12], '[' .. group .. GROUP_SEP, '(' .. group .. '\1',
        'LIMIT', round, 1)[1]
      if member and #order < want + 1 then
        order[#order + 1] = string.sub(member, #group + 2 + 16 + 1)
      end
    end
    round = round + 1
  end
end
if #order < want + 1 then
  for _, jobId in ipairs(redis.call('ZRANGE', KEYS[4], 0, want - #order)) do
    order[#order + 1] = jobId
  end
end
local nextId = order[1]
if not nextId then
  if groupCapped then
    return {'capped', now, nextDue}
  elseif groupWindowLeft then
    return {'limited', now, nextDue, groupWindowLeft}
  end
  return {'empty', now, nextDue}
end

local function candidates(skip)
  local out = {}
  for i = skip + 1, math.min(#order, skip + want) do
    out[#out + 1] = order[i]
  end
  return out
end

local slot
for i = FIRST_CANDIDATE, #ARGV do
  if ARGV[i] == nextId then
    slot = i - FIRST_CANDIDATE + 1
    break
  end
end
if not slot then
  return {'miss', now, nextDue, candidates(0)}
end
local jobKey, lockKey, dedupKey = KEYS[13 + 3 * slot], KEYS[14 + 3 * slot], KEYS[15 + 3 * slot]

local function dropNext()
  if waiting > 0 then
    redis.call('RPOP', KEYS[1])
  elseif fromGroup[1] then
    takeFromGroup(KEYS[12], KEYS[13], KEYS[5], fromGroup[1][1], fromGroup[1][2])
  else
    redis.call('ZREM', KEYS[4], nextId)
  end
end

local job = redis.call('HGETALL', jobKey)
if #job == 0 then
  -- An id without a job hash cannot be processed; drop it rather than wedge the queue.
  dropNext()
  return {'miss', now, nextDue, candidates(1)}
end

local record = {}
for i = 1, #job, 2 do
  record[job[i]] = job[i + 1]
end
local expireAt = storedInteger(record.expireAt)
if expireAt and expireAt <= now and (storedInteger(record.attemptsStarted) or 0) == 0 then
  local dedupId = record.dedupId or ''
  -- The marker's name is the job hash's with `job:<id>` replaced by `de:<dedup id>`: compared
  -- here, never used to reach a key (only KEYS entries are touched).
  local base = string.sub(jobKey, 1, #jobKey - #('job:' .. nextId))
  if dedupId ~= '' and dedupKey ~= base .. 'de:' .. dedupId then
    return {'dedup', now, nextDue, nextId, dedupId}
  end
  dropNext()
  if dedupId ~= '' then
    freeDedup(dedupKey, nextId)
  end
  redis.call('HSET', jobKey, 'failedReason', 'expired', 'finishedOn', now)
  redis.call('ZADD', KEYS[8], now, nextId)
  recordFinish(KEYS[9], KEYS[10], now, 'failed', nil)
  emitEvent(KEYS[11], ARGV[4], 'failed', nextId, 'failedReason', 'expired', 'expired', '1')
  return {'expired', now, nextDue, candidates(1)}
end

if waiting > 0 then
  redis.call('RPOPLPUSH', KEYS[1], KEYS[2])
else
  dropNext()
  redis.call('LPUSH', KEYS[2], nextId)
end
if fromGroup[1] then
  local group = fromGroup[1][1]
  if groupCap then
    redis.call('ZADD', KEYS[14], 0, group .. GROUP_SEP .. nextId)
  end
  if groupRateMax then
    local countField, endField = 'c' .. GROUP_SEP .. group, 'e' .. GROUP_SEP .. group
    local ends = storedInteger(redis.call('HGET', KEYS[15], endField))
    if ends and ends > now then
      redis.call('HINCRBY', KEYS[15], countField, 1)
    else
      local duration = storedInteger(redis.call('HGET', KEYS[5], 'groupRateDuration')) or 1000
      redis.call('HSET', KEYS[15], countField, 1, endField, now + duration)
    end
  end
end
redis.call('SET', lockKey, ARGV[1], 'PX', ARGV[2])
if rateMax and redis.call('INCR', KEYS[7]) == 1 then
  redis.call('PEXPIRE', KEYS[7], tonumber(redis.call('HGET', KEYS[5], 'rateDuration')) or 1000)
end

-- Count the delivery and stamp it in one write, and hand back the hash read above with the
-- same three fields changed (rather than reading it again).
local stamps = {attemptsStarted = '1', processedOn = tostring(now), lockedBy = ARGV[1]}
stamps.attemptsStarted = tostring((storedInteger(record.attemptsStarted) or 0) + 1)
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

emitEvent(KEYS[11], ARGV[4], 'active', nextId, 'attemptsStarted', stamps.attemptsStarted)
if #order > 1 then
  -- More work is waiting: pass the wake-up on so another idle worker takes it.
  redis.call('ZADD', KEYS[6], 0, '0')
end
return {'active', now, nextDue, candidates(1), nextId, fields}
