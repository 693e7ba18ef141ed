-- Keep every attempt that ended in an error with the job (its `errors` field, JSON), not
-- only the last: the newest ERRORS_KEPT, each numbered by its delivery (attemptsStarted,
-- which a retry does not reset), so they go wherever the job hash goes.
-- An `errors` field that is not a JSON array (written by hand) starts a new list: failing
-- here would leave the job in active for good, as a strict counter would.
--- @include "storedInteger"
local ERRORS_KEPT = 20
local function recordError(jobKey, reason, now)
  local ok, errors = pcall(cjson.decode, redis.call('HGET', jobKey, 'errors') or '[]')
  if not ok or type(errors) ~= 'table' then
    errors = {}
  end
  errors[#errors + 1] = {attempt = storedInteger(redis.call('HGET', jobKey, 'attemptsStarted')) or 0,
    reason = reason, at = now}
  while #errors > ERRORS_KEPT do
    table.remove(errors, 1)
  end
  redis.call('HSET', jobKey, 'errors', cjson.encode(errors))
end
