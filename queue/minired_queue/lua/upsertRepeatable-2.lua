--[[ upsertRepeatable: register a repeatable job, or update one.

  KEYS[1] repeat (zset: repeat key -> next tick ms)   KEYS[2] the repeatable's spec hash
  ARGV[1] repeat key   ARGV[2] first tick (ms)   ARGV[3] schedule ('every:<ms>' or
  'cron:<expression>|<time zone>')   then the spec's other fields as field, value pairs

  The schedule is only reset when it changed (or the repeatable is new or had ended):
  registering the same repeatable again, as every process of an app does on start,
  keeps the tick already scheduled. A first tick at or before the last fired one is
  refused ('stale'): the caller computed it from an old `lastTick` and must try again.

  The numeric fields (maxAttempts, backoffDelay, priority, limit) and the first tick must
  be decimal integers in range: anything else is an error reply and nothing is written.

  Returns 'created', 'updated' (schedule unchanged) or 'rescheduled', or 'stale'.
]]
--- @include "storedInteger"
local NUMERIC_FIELDS = {maxAttempts = 1, backoffDelay = 0, priority = 0, limit = 0}  -- name: least value
local key, first, schedule = ARGV[1], integerArg(ARGV[2], 'first tick', 0), ARGV[3]
for i = 4, #ARGV - 1, 2 do
  local least = NUMERIC_FIELDS[ARGV[i]]
  if least then
    integerArg(ARGV[i + 1], ARGV[i], least)
  end
end
local old = redis.call('HMGET', KEYS[2], 'schedule', 'lastTick')
local scheduled = redis.call('ZSCORE', KEYS[1], key)
local fields = {'schedule', schedule}
for i = 4, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
if old[1] == schedule and scheduled then
  redis.call('HSET', KEYS[2], unpack(fields))
  return 'updated'
end
if old[2] and first <= (storedInteger(old[2]) or -1) then
  return 'stale'
end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('HSET', KEYS[2], 'count', 0)
redis.call('ZADD', KEYS[1], first, key)
return old[1] and 'rescheduled' or 'created'
