--[[ addParentJob: create a flow's parent, after its children were added (addJob with a parent).

  KEYS[1] waiting-children   KEYS[2] parent job hash   KEYS[3] its dependencies set
  KEYS[4] its children's results hash   KEYS[5] its children's failures hash
  KEYS[6] wait   KEYS[7] prioritized   KEYS[8] meta   KEYS[9] marker   KEYS[10] failed
  KEYS[11] metrics   KEYS[12] events

  ARGV[1] job id   ARGV[2] payload (JSON)   ARGV[3] job name   ARGV[4] max attempts
  ARGV[5] backoff type   ARGV[6] backoff delay (ms)   ARGV[7] events stream cap
  ARGV[8] priority   ARGV[9] TTL (ms, 0: none)   ARGV[10] attempt timeout (ms, 0: none)
  ARGV[11] on child failure: 'fail' | 'ignore'
  ARGV[12..] the children's job keys (emq:{<queue>}:job:<id>), each child once

  Children that already finished (their results were recorded by resolveChild before the
  parent existed) are not waited for. Then: a failed child under 'fail' fails the parent
  at once; no child pending makes it ready; else it waits in waiting-children, each
  pending child in the dependencies set.

  Returns {job id, created}: created = 0 when the id already existed (adding is idempotent).
]]
--- @include "serverNow"
--- @include "createJob"
--- @include "storedInteger"
--- @include "jobArgs"
--- @include "flowParent"
local jobId = ARGV[1]
checkRetryArgs(ARGV[4], ARGV[6])
checkLimitArgs(ARGV[7], ARGV[8], ARGV[9], ARGV[10])
local policy = ARGV[11]
if policy ~= 'fail' and policy ~= 'ignore' then
  return redis.error_reply("ERR on child failure must be 'fail' or 'ignore'")
end
if #ARGV < 12 then
  return redis.error_reply('ERR a parent needs at least one child')
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {jobId, 0}
end

local keys = {waitingChildren = KEYS[1], job = KEYS[2], deps = KEYS[3], results = KEYS[4],
              failures = KEYS[5], wait = KEYS[6], prioritized = KEYS[7], meta = KEYS[8],
              marker = KEYS[9], failed = KEYS[10], metrics = KEYS[11], events = KEYS[12],
              eventsCap = ARGV[7]}
local now = serverNow()
writeJob(keys, jobId, {data = ARGV[2], name = ARGV[3], maxAttempts = ARGV[4], backoffType = ARGV[5],
                       backoffDelay = ARGV[6], delay = 0, dedupId = '', priority = ARGV[8],
                       ttl = ARGV[9], timeout = ARGV[10], onChildFailure = policy}, now)
redis.call('HINCRBY', keys.metrics, 'added', 1)
-- Results recorded before the parent existed were kept with a TTL: they are the parent's now.
redis.call('PERSIST', keys.results)
redis.call('PERSIST', keys.failures)

local failedChild, failedReason
for i = 12, #ARGV do
  local child = ARGV[i]
  if redis.call('HEXISTS', keys.results, child) == 0 then
    local reason = redis.call('HGET', keys.failures, child)
    if not reason then
      redis.call('SADD', keys.deps, child)
    elseif not failedChild then
      failedChild, failedReason = child, reason
    end
  end
end

if failedChild and policy == 'fail' then
  failParent(keys, jobId, failedChild, failedReason, now)
elseif redis.call('SCARD', keys.deps) == 0 then
  readyParent(keys, jobId)
else
  redis.call('ZADD', keys.waitingChildren, now, jobId)
  emitEvent(keys.events, keys.eventsCap, 'waiting-children', jobId)
end
return {jobId, 1}
