--[[ extendLock: renew a job's lock, only if the caller still owns it.

  KEYS[1] the job's lock
  ARGV[1] lock token   ARGV[2] new TTL (ms)

  Returns 1 when renewed, 0 when the lock is gone or belongs to someone else (the
  caller must then stop treating the job as its own).
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
