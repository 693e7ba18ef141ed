--[[ addDebouncedJob: add a job that replaces the pending job of its dedup id (debounce).

  The job waits `debounce` ms (delayed). While it waits (delayed, or ready and not yet
  taken), adding another job with the same dedup id replaces it: the pending job is
  deleted (a `removed` event with `replacedBy`), the new one waits `debounce` ms from
  now, and the dedup marker points at it. A job already taken (active) or finished is
  not replaced: it runs or ran, and the new job waits after it. The marker has no TTL:
  it is freed when the job it points at finishes (complete, dead-lettered, expired).

  The pending job's hash must be declared, so the caller reads the marker first (GET) and
  names the job it points at; if the marker points elsewhere when this runs, nothing
  changes and the reply names the current holder, for the caller to retry with.

  KEYS[1] wait      KEYS[2] delayed   KEYS[3] prioritized   KEYS[4] meta   KEYS[5] marker
  KEYS[6] job hash  KEYS[7] dedup marker   KEYS[8] metrics   KEYS[9] events
  KEYS[10] the pending job's hash (emq:{q}:job: when the caller saw no marker)
  KEYS[11] the pending job's logs (a job waiting for a retry may have logged; deleted with it)
  ARGV[1..13] as addJob's, with ARGV[7] the debounce (ms) and ARGV[9] unused (0)
  ARGV[14] the pending job's id as the caller read the marker ('' for none)

  Returns {job id, 1, replaced job id or ''} when added; {job id, 0, ''} when the job id
  already existed; {current holder or '', -1} when the marker changed since it was read.
]]
--- @include "serverNow"
--- @include "createJob"
--- @include "storedInteger"
--- @include "jobArgs"
--- @include "emitEvent"
local jobId = ARGV[1]
checkRetryArgs(ARGV[4], ARGV[6])
integerArg(ARGV[7], 'debounce', 1)
checkLimitArgs(ARGV[10], ARGV[11], ARGV[12], ARGV[13])
if ARGV[8] == '' then
  error({err = 'ERR a debounced job needs a dedup id'})
end

if redis.call('EXISTS', KEYS[6]) == 1 then
  return {jobId, 0, ''}
end

local holder = redis.call('GET', KEYS[7]) or ''
if holder ~= ARGV[14] then
  return {holder, -1}
end

local replaced = ''
if holder ~= '' then
  local pending = redis.call('LREM', KEYS[1], 0, holder) > 0
  pending = redis.call('ZREM', KEYS[2], holder) > 0 or pending
  pending = redis.call('ZREM', KEYS[3], holder) > 0 or pending
  if pending then
    redis.call('DEL', KEYS[10], KEYS[11])
    redis.call('HINCRBY', KEYS[8], 'removed', 1)
    emitEvent(KEYS[9], ARGV[10], 'removed', holder, 'replacedBy', jobId)
    replaced = holder
  end
end
redis.call('SET', KEYS[7], jobId)

createJob({wait = KEYS[1], delayed = KEYS[2], prioritized = KEYS[3], meta = KEYS[4], marker = KEYS[5],
           job = KEYS[6], metrics = KEYS[8], events = KEYS[9], eventsCap = ARGV[10]},
  jobId, {data = ARGV[2], name = ARGV[3], maxAttempts = ARGV[4], backoffType = ARGV[5],
          backoffDelay = ARGV[6], delay = ARGV[7], dedupId = ARGV[8], priority = ARGV[11],
          ttl = ARGV[12], timeout = ARGV[13]},
  serverNow())
return {jobId, 1, replaced}
