-- Keep every attempt that ended in an error with the job (its `errors` field, JSON), not
-- only the last: the newest ERRORS_KEPT, each numbered by its delivery (attemptsStarted,
-- which a retry does not reset), so they go wherever the job hash goes.
local ERRORS_KEPT = 20
local function recordError(jobKey, reason, now)
  local errors = cjson.decode(redis.call('HGET', jobKey, 'errors') or '[]')
  errors[#errors + 1] = {attempt = tonumber(redis.call('HGET', jobKey, 'attemptsStarted')) or 0,
    reason = reason, at = now}
  while #errors > ERRORS_KEPT do
    table.remove(errors, 1)
  end
  redis.call('HSET', jobKey, 'errors', cjson.encode(errors))
end
