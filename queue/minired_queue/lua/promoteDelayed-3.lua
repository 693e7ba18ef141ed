--[[ promoteDelayed: move delayed jobs whose due time has passed (by the server clock)
  into wait.

  KEYS[1] delayed   KEYS[2] wait   KEYS[3] marker
  ARGV[1] most jobs to move in one call (keeps the script short)

  Returns {jobs moved, next due time ms or -1 (what is left), server now ms}.
]]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, jobId in ipairs(due) do
  redis.call('ZREM', KEYS[1], jobId)
  redis.call('LPUSH', KEYS[2], jobId)
end
if #due > 0 then
  redis.call('ZADD', KEYS[3], 0, '0')
end

local nextDue = -1
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then
  nextDue = tonumber(head[2])
end
return {#due, nextDue, now}
