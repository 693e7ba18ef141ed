-- A dedup marker without a TTL is held for as long as its job is pending: free it once the
-- job has finished (completed or dead-lettered), if it still points at this job.
local function freeDedup(dedupKey, jobId)
  if redis.call('GET', dedupKey) == jobId and redis.call('PTTL', dedupKey) == -1 then
    redis.call('DEL', dedupKey)
  end
end
