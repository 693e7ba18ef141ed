--[[ addLog: append a line to a job's log, a list capped to its newest lines.

  KEYS[1] job hash   KEYS[2] the job's logs
  ARGV[1] line   ARGV[2] most lines kept

  A job that no longer exists gets no log (no key would delete it). The log is deleted
  with the job (removeJobs, cleanJobs, complete with removal, addDebouncedJob replacing it).
  Returns the number of lines kept, 0 when the job is gone.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
return redis.call('LLEN', KEYS[2])
