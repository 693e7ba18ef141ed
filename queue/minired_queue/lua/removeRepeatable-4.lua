--[[ removeRepeatable: stop a repeatable job, and drop its pending instance if that has
  not become due yet (an instance already waiting or running is left to finish).

  KEYS[1] repeat   KEYS[2] the repeatable's spec hash   KEYS[3] delayed
  KEYS[4] the pending instance's job hash (declared even when there is none)
  ARGV[1] repeat key   ARGV[2] the pending instance's job id ('' for none)

  Returns 1 when the repeatable existed, 0 otherwise.
]]
local existed = redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('DEL', KEYS[2])
if ARGV[2] ~= '' and redis.call('ZREM', KEYS[3], ARGV[2]) > 0 then
  redis.call('DEL', KEYS[4])
end
return existed > 0 and 1 or 0
