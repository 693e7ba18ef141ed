--[[ workerHeartbeat: a worker says it is alive, in the queue's worker registry.

  KEYS[1] workers (zset: worker id -> last heartbeat, server ms)   KEYS[2] the worker's hash
  ARGV[1] worker id   ARGV[2] ttl ms (the worker is listed that long after its last beat)
  ARGV[3..] field, value pairs describing the worker (concurrency, running, ...)

  The hash expires ttl after the last beat (readers list only workers whose hash exists);
  entries silent for an hour are dropped from the zset here (workers' TTLs differ, so a
  worker never prunes by its own), and the zset expires once no worker beats.
  Returns the server time of the beat.
]]
--- @include "serverNow"
local now = serverNow()
local ttl = tonumber(ARGV[2])
if #ARGV > 2 then
  redis.call('HSET', KEYS[2], unpack(ARGV, 3))
end
redis.call('HSET', KEYS[2], 'heartbeat', now)
redis.call('HSETNX', KEYS[2], 'started', now)
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - 3600000))
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return now
