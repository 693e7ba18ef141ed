--- @include "storedInteger"
-- Count a finished attempt in the queue's totals and in its per-minute history.
--
-- Totals (metrics hash, never reset): the outcome's counter, and the processing time
-- histogram: `ms_le_<bound>` counts attempts that took at most <bound> ms and more than
-- the bound before it (not cumulative; Prometheus export adds them up; their sum is the
-- count, not stored: one write less per job), `ms_sum`. History (one hash): the same per
-- minute of server time, fields `<minute>:<name>` (and `<minute>:waiting`, the ready depth recordDepth samples); field
-- `first` is the oldest minute kept, and minutes older than
-- HISTORY_MINUTES are deleted as new ones start, so the hash stays bounded; the hash expires
-- HISTORY_TTL_MS after the last pruning or creation, so a queue no longer used leaves none.
local DURATION_BOUNDS_MS = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000}
local HISTORY_MINUTES = 60
local HISTORY_TTL_MS = 2 * HISTORY_MINUTES * 60000

-- The fields a minute may have; built only when a minute is pruned (once a minute at most),
-- not on every call of the script.
local function historyFields()
  local names = {'completed', 'failed', 'retried', 'stalled', 'ms_sum', 'ms_count', 'ms_le_inf', 'waiting'}
  for _, bound in ipairs(DURATION_BOUNDS_MS) do
    names[#names + 1] = 'ms_le_' .. bound
  end
  return names
end

local function durationField(ms)
  for _, bound in ipairs(DURATION_BOUNDS_MS) do
    if ms <= bound then
      return 'ms_le_' .. bound
    end
  end
  return 'ms_le_inf'
end

local function historyMinute(historyKey, now)
  local minute = math.floor(now / 60000)
  local first = tonumber(redis.call('HGET', historyKey, 'first'))
  if not first then
    redis.call('HSET', historyKey, 'first', minute)
    redis.call('PEXPIRE', historyKey, HISTORY_TTL_MS)
  elseif minute - first >= HISTORY_MINUTES then
    local keepFrom = minute - HISTORY_MINUTES + 1
    local from = math.max(first, keepFrom - HISTORY_MINUTES)  -- older ones were pruned already
    local fields = historyFields()
    for m = from, keepFrom - 1 do
      local names = {}
      for i, name in ipairs(fields) do
        names[i] = m .. ':' .. name
      end
      redis.call('HDEL', historyKey, unpack(names))
    end
    redis.call('HSET', historyKey, 'first', keepFrom)
    redis.call('PEXPIRE', historyKey, HISTORY_TTL_MS)
  end
  return minute .. ':'
end

-- outcome: 'completed' | 'failed' | 'retried' | 'stalled'; durationMs: nil when the attempt
-- has no processing time (a stall).
local function recordFinish(metricsKey, historyKey, now, outcome, durationMs)
  local minute = historyMinute(historyKey, now)
  redis.call('HINCRBY', metricsKey, outcome, 1)
  redis.call('HINCRBY', historyKey, minute .. outcome, 1)
  if durationMs then
    durationMs = math.max(0, durationMs)
    local bucket = durationField(durationMs)
    redis.call('HINCRBY', metricsKey, bucket, 1)
    redis.call('HINCRBY', metricsKey, 'ms_sum', durationMs)
    redis.call('HINCRBY', historyKey, minute .. bucket, 1)
    redis.call('HINCRBY', historyKey, minute .. 'ms_sum', durationMs)
  end
end

-- Processing time of the current attempt: from its delivery (processedOn) to now. The
-- caller may pass processedOn as the delivery's reply had it (saves reading it here).
local function attemptDuration(jobKey, now, processedOn)
  -- (an integer: the duration is added with HINCRBY)
  local started = storedInteger(processedOn) or storedInteger(redis.call('HGET', jobKey, 'processedOn'))
  if started then
    return now - started
  end
  return nil
end
