--[[ removeJobs: delete jobs that are not being processed.

  A job is removed only if it is found in wait (or its group's line), prioritized, delayed,
  waiting-children, completed or failed; a job in active is left alone (its worker holds
  it; the sweep deals with it if that worker is gone). Used for remove, drain and cleaning
  old completed/failed jobs.

  KEYS[1] wait   KEYS[2] prioritized   KEYS[3] delayed   KEYS[4] completed   KEYS[5] failed
  KEYS[6] metrics   KEYS[7] events   KEYS[8] group-wait   KEYS[9] groups
  KEYS[10] waiting-children
  then for candidate i: KEYS[5+6i] job hash, KEYS[6+6i] the job's dedup marker,
  KEYS[7+6i] the job's logs, and as a flow parent: KEYS[8+6i] its dependencies,
  KEYS[9+6i] its children's results, KEYS[10+6i] its children's failures
  ARGV[1] events stream cap   ARGV[1+i] candidate i's id

  A flow parent goes with its dependencies and its children's outcomes; its children run on
  (their outcomes then find no parent: resolveChild keeps them only for its orphan TTL). A
  removed flow child is reported to its parent (in another slot, maybe) as failed
  ('removed') by the parent queue's sweep, which finds the child's hash gone.
  Each job removed before it finished gets a `removed` event, so whoever waits for it stops
  waiting; a finished job's waiters had its outcome, and cleaning up finished jobs in bulk
  must not flood the events stream.
  Returns the ids removed.
]]
--- @include "emitEvent"
--- @include "pushReady"
local removed = {}
for i = 1, #ARGV - 1 do
  local jobId = ARGV[1 + i]
  local jobKey, dedupKey = KEYS[5 + 6 * i], KEYS[6 + 6 * i]
  -- LREM from the tail: drain takes candidates from the tail, so they are found at once.
  local pending = redis.call('LREM', KEYS[1], -1, jobId) > 0
  local grouped = redis.call('HMGET', jobKey, 'group', 'groupSeq')
  local seq = storedInteger(grouped[2])
  if grouped[1] and seq then
    local member = groupMember(grouped[1], seq, jobId)
    if redis.call('ZSCORE', KEYS[8], member) then
      takeFromGroup(KEYS[8], KEYS[9], nil, grouped[1], member)
      pending = true
    end
  end
  for _, set in ipairs({2, 3, 10}) do
    pending = redis.call('ZREM', KEYS[set], jobId) > 0 or pending
  end
  local found = pending
  for set = 4, 5 do
    found = redis.call('ZREM', KEYS[set], jobId) > 0 or found
  end
  if found then
    redis.call('DEL', jobKey, KEYS[7 + 6 * i], KEYS[8 + 6 * i], KEYS[9 + 6 * i], KEYS[10 + 6 * i])
    if redis.call('GET', dedupKey) == jobId then
      redis.call('DEL', dedupKey)
    end
    removed[#removed + 1] = jobId
    if pending then
      emitEvent(KEYS[7], ARGV[1], 'removed', jobId)
    end
  end
end
if #removed > 0 then
  redis.call('HINCRBY', KEYS[6], 'removed', #removed)
end
return removed
