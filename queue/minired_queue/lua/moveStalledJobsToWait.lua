--[[ moveStalledJobsToWait: the recovery sweep.

  A job in active whose lock key no longer exists has an owner that stopped renewing it
  (crashed, hung, partitioned). Such a job goes back to wait and its stall is counted;
  once it has stalled more than the allowed number of times it is failed instead, so a
  job that kills every worker that touches it cannot cycle forever.

  The caller passes a snapshot of active as candidates. Everything that matters is
  re-checked here, in one atomic step: the lock is still missing AND the LREM from
  active actually removed the id. A second sweep running at the same time over the same
  snapshot therefore finds the LREM returns 0 and moves nothing: each stalled job is
  reclaimed exactly once, however many sweeps overlap.

  KEYS[1] active   KEYS[2] wait   KEYS[3] failed   KEYS[4] marker
  KEYS[5] metrics  KEYS[6] events
  then for candidate i (i = 1..n): KEYS[4+3i] lock, KEYS[5+3i] job hash,
  KEYS[6+3i] the job's dedup marker
  ARGV[1] max stalled count   ARGV[2] events stream cap   ARGV[2+i] candidate i's id

  Returns {recovered ids, failed ids}.
]]
local maxStalled = tonumber(ARGV[1])
local candidates = (#KEYS - 6) / 3
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local recovered, failed = {}, {}
for i = 1, candidates do
  local jobId = ARGV[2 + i]
  local lockKey, jobKey, dedupKey = KEYS[4 + 3 * i], KEYS[5 + 3 * i], KEYS[6 + 3 * i]
  if redis.call('EXISTS', lockKey) == 0 and redis.call('LREM', KEYS[1], 1, jobId) > 0 then
    local stalls = redis.call('HINCRBY', jobKey, 'stalledCounter', 1)
    redis.call('HDEL', jobKey, 'lockedBy')
    if stalls > maxStalled then
      local reason = 'job stalled more than the allowed limit (' .. maxStalled .. ')'
      redis.call('HINCRBY', jobKey, 'attemptsMade', 1)
      redis.call('HSET', jobKey, 'failedReason', reason, 'finishedOn', now)
      if redis.call('GET', dedupKey) == jobId and redis.call('PTTL', dedupKey) == -1 then
        redis.call('DEL', dedupKey)
      end
      redis.call('ZADD', KEYS[3], now, jobId)
      redis.call('HINCRBY', KEYS[5], 'failed', 1)
      redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[2], '*', 'event', 'failed', 'jobId', jobId,
        'failedReason', reason)
      failed[#failed + 1] = jobId
    else
      -- RPUSH: the tail is taken next, so a recovered job does not queue behind newer work.
      redis.call('RPUSH', KEYS[2], jobId)
      redis.call('HINCRBY', KEYS[5], 'stalled', 1)
      redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[2], '*', 'event', 'stalled', 'jobId', jobId)
      recovered[#recovered + 1] = jobId
    end
  end
end
if #recovered > 0 then
  redis.call('ZADD', KEYS[4], 0, '0')
end
return {recovered, failed}
