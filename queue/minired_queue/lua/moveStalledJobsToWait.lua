--[[ moveStalledJobsToWait: the recovery sweep.

  A job in active whose lock key no longer exists has an owner that stopped renewing it
  (crashed, hung, partitioned). Such a job goes back to the front of its line and its
  stall is counted. The stall limit is the queue's own setting (meta field `maxStalled`,
  default 1), so every sweeper of the queue applies the same one: a job may be recovered
  that many times; the stall after that fails it, so a job that kills every worker that
  touches it cannot cycle forever (BullMQ's maxStalledCount).

  The caller passes a snapshot of active as candidates. Everything that matters is
  re-checked here, in one atomic step: the lock is still missing AND the LREM from
  active actually removed the id. A second sweep running at the same time over the same
  snapshot therefore finds the LREM returns 0 and moves nothing: each stalled job is
  reclaimed exactly once, however many sweeps overlap.

  KEYS[1] active   KEYS[2] wait   KEYS[3] prioritized   KEYS[4] failed   KEYS[5] meta
  KEYS[6] marker   KEYS[7] metrics   KEYS[8] history   KEYS[9] events
  KEYS[10] group-wait   KEYS[11] groups (a grouped job is recovered into its group's line)
  then for candidate i (i = 1..n): KEYS[9+3i] lock, KEYS[10+3i] job hash,
  KEYS[11+3i] the job's dedup marker
  ARGV[1] events stream cap   ARGV[1+i] candidate i's id

  Returns {recovered ids, failed ids}.
]]
--- @include "serverNow"
--- @include "freeDedup"
--- @include "pushReady"
--- @include "recordFinish"
--- @include "emitEvent"
--- @include "storedInteger"
--- @include "recordError"
local DEFAULT_MAX_STALLED = 1
local maxStalled = storedInteger(redis.call('HGET', KEYS[5], 'maxStalled')) or DEFAULT_MAX_STALLED
local candidates = (#KEYS - 11) / 3
local now = serverNow()
local ready = {wait = KEYS[2], prioritized = KEYS[3], meta = KEYS[5], groupWait = KEYS[10], groups = KEYS[11]}

local recovered, failed = {}, {}
for i = 1, candidates do
  local jobId = ARGV[1 + i]
  local lockKey, jobKey, dedupKey = KEYS[9 + 3 * i], KEYS[10 + 3 * i], KEYS[11 + 3 * i]
  if redis.call('EXISTS', lockKey) == 0 and redis.call('LREM', KEYS[1], 1, jobId) > 0 then
    -- Counts read leniently, not HINCRBY: one job whose counter is not a number must not
    -- stop the sweep of every job in the batch.
    local stalls = (storedInteger(redis.call('HGET', jobKey, 'stalledCounter')) or 0) + 1
    redis.call('HSET', jobKey, 'stalledCounter', stalls)
    redis.call('HDEL', jobKey, 'lockedBy')
    if stalls > maxStalled then
      local reason = 'job stalled more than the allowed limit (' .. maxStalled .. ')'
      local made = (storedInteger(redis.call('HGET', jobKey, 'attemptsMade')) or 0) + 1
      redis.call('HSET', jobKey, 'attemptsMade', made, 'failedReason', reason, 'finishedOn', now)
      recordError(jobKey, reason, now)
      freeDedup(dedupKey, jobId)
      redis.call('ZADD', KEYS[4], now, jobId)
      recordFinish(KEYS[7], KEYS[8], now, 'failed', nil)
      emitEvent(KEYS[9], ARGV[1], 'failed', jobId, 'failedReason', reason)
      failed[#failed + 1] = jobId
    else
      recordError(jobKey, 'stalled: its worker stopped renewing the lock; recovered by the sweep', now)
      -- The front of its line: a recovered job does not queue behind newer work.
      placeReady(ready, jobKey, jobId, true)
      recordFinish(KEYS[7], KEYS[8], now, 'stalled', nil)
      emitEvent(KEYS[9], ARGV[1], 'stalled', jobId)
      recovered[#recovered + 1] = jobId
    end
  end
end
if #recovered > 0 or #failed > 0 then
  redis.call('ZADD', KEYS[6], 0, '0')
end
return {recovered, failed}
