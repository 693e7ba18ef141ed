--[[ promoteDelayed: make delayed jobs whose due time has passed (by the server clock)
  ready to run (wait, or prioritized for a job with a priority).

  A job's priority is in its hash, so the caller names the candidates: the first ids of
  delayed (ZRANGE delayed 0 n-1), with their hashes. Each is re-checked here: it moves
  only if it is still in delayed and due, so a stale snapshot only skips ids.

  KEYS[1] delayed   KEYS[2] wait   KEYS[3] prioritized   KEYS[4] meta   KEYS[5] marker
  KEYS[6] group-wait   KEYS[7] groups
  KEYS[7 + i] candidate i's job hash
  ARGV[i] candidate i's id

  Returns {jobs moved, next due time ms or -1 (what is left), server now ms}.
]]
--- @include "serverNow"
--- @include "pushReady"
local now = serverNow()
local ready = {wait = KEYS[2], prioritized = KEYS[3], meta = KEYS[4], groupWait = KEYS[6], groups = KEYS[7]}
local moved = 0
for i = 1, #ARGV do
  local jobId = ARGV[i]
  local due = tonumber(redis.call('ZSCORE', KEYS[1], jobId))
  if due and due <= now then
    redis.call('ZREM', KEYS[1], jobId)
    placeReady(ready, KEYS[7 + i], jobId, false)
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('ZADD', KEYS[5], 0, '0')
end

local nextDue = -1
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then
  nextDue = tonumber(head[2])
end
return {moved, nextDue, now}
