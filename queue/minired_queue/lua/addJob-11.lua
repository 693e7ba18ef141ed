--[[ addJob: create a job and make it ready (wait, or prioritized when it has a priority),
  or put it in delayed when it has a delay.

  KEYS[1] wait      KEYS[2] delayed   KEYS[3] prioritized   KEYS[4] meta   KEYS[5] marker
  KEYS[6] job hash
  KEYS[7] dedup marker (emq:{q}:de:<dedup id>; declared even when ARGV[8] is empty)
  KEYS[8] metrics   KEYS[9] events   KEYS[10] group-wait   KEYS[11] groups

  ARGV[1] job id        ARGV[2] payload (JSON)   ARGV[3] job name
  ARGV[4] max attempts  ARGV[5] backoff type ('' | 'fixed' | 'exponential')
  ARGV[6] backoff delay (ms)   ARGV[7] delay (ms)
  ARGV[8] dedup id ('' for none)   ARGV[9] dedup TTL in ms (0: held until the job finishes)
  ARGV[10] events stream cap   ARGV[11] priority (0: none; lower runs first)
  ARGV[12] TTL in ms (0: none): past now + TTL (server clock) a job never delivered is
           failed as 'expired' by moveToActive instead of running (stored as `expireAt`)
  ARGV[13] timeout of one attempt in ms (0: none; stored as `timeout`, enforced by workers)
  ARGV[14], ARGV[15] (optional) a flow child's parent: its queue name and job id (stored as
           `parentQueue`, `parentId`; the parent is added after its children)
  ARGV[16] (optional) the job's group ('': none): it is then ready in its group's line

  The numbers (ARGV 4, 6, 7, 9, 10, 11, 12, 13) must be decimal integers in range: anything else
  is an error reply and nothing is written (a job hash holding '0.5' could not be read).

  Returns {job id, created}: created = 1 when this call made the job, 0 when the id
  already existed or the dedup id is held (then the id returned is the holder's).
]]
--- @include "serverNow"
--- @include "createJob"
--- @include "storedInteger"
--- @include "jobArgs"
local jobId = ARGV[1]
checkRetryArgs(ARGV[4], ARGV[6])
integerArg(ARGV[7], 'delay', 0)
local ttl = integerArg(ARGV[9], 'dedup TTL', 0)
checkLimitArgs(ARGV[10], ARGV[11], ARGV[12], ARGV[13])

-- A stable id makes adding idempotent: the second add of the same id is a no-op.
if redis.call('EXISTS', KEYS[6]) == 1 then
  return {jobId, 0}
end
local parentQueue, parentId, group = ARGV[14] or '', ARGV[15] or '', ARGV[16] or ''

local dedupId = ARGV[8]
if dedupId ~= '' then
  local taken
  if ttl > 0 then
    taken = redis.call('SET', KEYS[7], jobId, 'NX', 'PX', ttl)
  else
    taken = redis.call('SET', KEYS[7], jobId, 'NX')
  end
  if not taken then
    return {redis.call('GET', KEYS[7]), 0}
  end
end

createJob({wait = KEYS[1], delayed = KEYS[2], prioritized = KEYS[3], meta = KEYS[4], marker = KEYS[5],
           job = KEYS[6], metrics = KEYS[8], events = KEYS[9], eventsCap = ARGV[10],
           groupWait = KEYS[10], groups = KEYS[11]},
  jobId, {data = ARGV[2], name = ARGV[3], maxAttempts = ARGV[4], backoffType = ARGV[5],
          backoffDelay = ARGV[6], delay = ARGV[7], dedupId = dedupId, priority = ARGV[11],
          ttl = ARGV[12], timeout = ARGV[13],
          parentQueue = parentQueue, parentId = parentId, group = group},
  serverNow())
return {jobId, 1}
