-- Make a job ready to run. Priority 0 (none): the wait list, FIFO; taken before any
-- prioritized job. Priority p > 0: the prioritized zset, score p * 2^32 + a queue-wide
-- counter, so lower priorities come first and jobs of one priority keep their order.
-- `nextInLine` (a recovered or released job): the front of its line rather than the back.
local PRIORITY_SHIFT = 4294967296
local function pushReady(waitKey, prioritizedKey, metaKey, jobId, priority, nextInLine)
  priority = tonumber(priority) or 0
  if priority <= 0 then
    if nextInLine then
      redis.call('RPUSH', waitKey, jobId)
    else
      redis.call('LPUSH', waitKey, jobId)
    end
    return
  end
  local counter = 0
  if not nextInLine then
    counter = redis.call('HINCRBY', metaKey, 'pc', 1) % PRIORITY_SHIFT
  end
  redis.call('ZADD', prioritizedKey, priority * PRIORITY_SHIFT + counter, jobId)
end
