-- The ownership check of every outcome script: the caller's token must hold the lock and
-- the job must still be in active. On success the job has left active and the lock is
-- gone; on failure nothing changed (the caller answers 'lost').
local function takeOwned(activeKey, lockKey, jobId, token)
  if redis.call('GET', lockKey) ~= token then
    return false
  end
  if redis.call('LREM', activeKey, -1, jobId) == 0 then
    -- Locked but not active cannot happen through these scripts; refuse rather than guess.
    return false
  end
  redis.call('DEL', lockKey)
  return true
end
