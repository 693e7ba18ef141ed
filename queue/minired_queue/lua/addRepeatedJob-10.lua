--[[ addRepeatedJob: create the instance of a repeatable job for one tick, and move the
  repeatable's schedule on to the next tick, in one step.

  Exactly one instance per tick, however many schedulers run: the schedule's score in
  the repeat zset is compared with the tick the caller read (a compare-and-set), the
  spec's `lastTick` must be older than it, and the instance's id is derived from the
  tick (`repeat:<key>:<tick ms>`). A caller that lost the race changes nothing.
  The instance is delayed until its tick (ready at once if the tick has passed).

  KEYS[1] repeat (zset: repeat key -> next tick ms)   KEYS[2] the repeatable's spec hash
  KEYS[3] wait   KEYS[4] delayed   KEYS[5] prioritized   KEYS[6] meta   KEYS[7] marker
  KEYS[8] the instance's job hash   KEYS[9] metrics   KEYS[10] events
  ARGV[1] repeat key   ARGV[2] the tick (ms) being fired   ARGV[3] the tick after it (-1: none)
  ARGV[4] the instance's job id   ARGV[5] events stream cap

  Returns 1 when this call created the instance, 0 when the tick was fired already
  (or the repeatable was removed meanwhile).
]]
--- @include "serverNow"
--- @include "createJob"
local tick, nextTick = tonumber(ARGV[2]), tonumber(ARGV[3])
if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) ~= tick then
  return 0
end
local spec = {}
local raw = redis.call('HGETALL', KEYS[2])
for i = 1, #raw, 2 do
  spec[raw[i]] = raw[i + 1]
end
if (tonumber(spec.lastTick) or -1) >= tick then
  return 0
end

local now = serverNow()
local created = 0
if redis.call('EXISTS', KEYS[8]) == 0 then
  createJob({wait = KEYS[3], delayed = KEYS[4], prioritized = KEYS[5], meta = KEYS[6], marker = KEYS[7],
             job = KEYS[8], metrics = KEYS[9], events = KEYS[10], eventsCap = ARGV[5]},
    ARGV[4], {data = spec.data or 'null', name = spec.name or '', maxAttempts = spec.maxAttempts or 1,
              backoffType = spec.backoffType or '', backoffDelay = spec.backoffDelay or 0,
              delay = math.max(0, tick - now), dedupId = '', priority = spec.priority or 0,
              repeatName = ARGV[1]},
    now)
  created = 1
end

local count = redis.call('HINCRBY', KEYS[2], 'count', 1)
redis.call('HSET', KEYS[2], 'lastTick', tick)
local limit = tonumber(spec.limit) or 0
if nextTick < 0 or (limit > 0 and count >= limit) then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], nextTick, ARGV[1])
end
return created
