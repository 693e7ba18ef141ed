--[[ cleanJobs: apply a retention setting to completed or failed jobs.

  Deletes the oldest finished jobs while more than `keep` remain, and any finished
  before now - maxAge. The caller names the candidates: the oldest ids of the set
  (ZRANGE set 0 n-1), with their hashes; the script stops at the first one it keeps.
  Dedup markers are left alone: a marker with a TTL lives exactly that long.

  KEYS[1] completed or failed   KEYS[2] metrics
  then for candidate i: KEYS[1 + 2i] its job hash, KEYS[2 + 2i] its logs
  ARGV[1] keep (-1: no count limit)   ARGV[2] max age ms (-1: none)   ARGV[2 + i] ids

  Returns the ids removed.
]]
--- @include "serverNow"
local keep, maxAge = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = serverNow()
local left = redis.call('ZCARD', KEYS[1])
local removed = {}
for i = 3, #ARGV do
  local jobId = ARGV[i]
  local finished = tonumber(redis.call('ZSCORE', KEYS[1], jobId))
  if finished then
    local tooMany = keep >= 0 and left > keep
    local tooOld = maxAge >= 0 and finished <= now - maxAge
    if not (tooMany or tooOld) then
      break
    end
    redis.call('ZREM', KEYS[1], jobId)
    redis.call('DEL', KEYS[2 * i - 3], KEYS[2 * i - 2])
    left = left - 1
    removed[#removed + 1] = jobId
  end
end
if #removed > 0 then
  redis.call('HINCRBY', KEYS[2], 'removed', #removed)
end
return removed
