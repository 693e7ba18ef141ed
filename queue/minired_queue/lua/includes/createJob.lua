--- @include "pushReady"
--- @include "emitEvent"
-- Write a new job's hash (not placing it anywhere).
-- opts: data, name, maxAttempts, backoffType, backoffDelay, delay, dedupId, priority,
-- and optionally repeatName (the repeatable that made it), ttl (ms from now after which a
-- job never delivered expires: stored as expireAt), timeout (ms one attempt may take),
-- parentQueue + parentId (a flow's child: the parent it reports to), group (its group's
-- line and limits; keys.groupWait and keys.groups then name the group keys) and onChildFailure
-- (a flow's parent: 'fail' or 'ignore').
local function writeJob(keys, jobId, opts, now)
  local delay = tonumber(opts.delay) or 0
  redis.call('HSET', keys.job,
    'data', opts.data, 'name', opts.name, 'timestamp', now, 'delay', delay,
    'maxAttempts', opts.maxAttempts, 'backoffType', opts.backoffType, 'backoffDelay', opts.backoffDelay,
    'attemptsMade', 0, 'attemptsStarted', 0, 'stalledCounter', 0, 'dedupId', opts.dedupId,
    'priority', opts.priority)
  local ttl, timeout = tonumber(opts.ttl) or 0, tonumber(opts.timeout) or 0
  if ttl > 0 then
    redis.call('HSET', keys.job, 'expireAt', now + ttl)
  end
  if timeout > 0 then
    redis.call('HSET', keys.job, 'timeout', timeout)
  end
  if opts.repeatName then
    redis.call('HSET', keys.job, 'repeatKey', opts.repeatName)
  end
  if opts.parentId and opts.parentId ~= '' then
    redis.call('HSET', keys.job, 'parentQueue', opts.parentQueue, 'parentId', opts.parentId)
  end
  if opts.group and opts.group ~= '' then
    redis.call('HSET', keys.job, 'group', opts.group)
  end
  if opts.onChildFailure then
    redis.call('HSET', keys.job, 'onChildFailure', opts.onChildFailure)
  end
end

-- Write a new job's hash and place it: delayed when it has a delay, else ready.
local function createJob(keys, jobId, opts, now)
  writeJob(keys, jobId, opts, now)
  local delay = tonumber(opts.delay) or 0
  if delay > 0 then
    redis.call('ZADD', keys.delayed, now + delay, jobId)
  else
    placeReady(keys, keys.job, jobId, false)
  end
  -- Wake one blocked worker. For a delayed job this lets it shorten its wait to the due time.
  redis.call('ZADD', keys.marker, 0, '0')
  redis.call('HINCRBY', keys.metrics, 'added', 1)
  emitEvent(keys.events, keys.eventsCap, delay > 0 and 'delayed' or 'waiting', jobId)
end
