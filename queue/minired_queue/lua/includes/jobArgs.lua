--- @include "storedInteger"
-- The numeric options of every script that creates a job, each refused below its least value
-- as integerArg refuses it. The scripts hold them at different ARGV places, and check them in
-- their ARGV order: the first two, then the script's own (delay, debounce, ...), then the rest.
local function checkRetryArgs(maxAttempts, backoffDelay)
  integerArg(maxAttempts, 'max attempts', 1)
  integerArg(backoffDelay, 'backoff delay', 0)
end

local function checkLimitArgs(eventsCap, priority, ttl, timeout)
  integerArg(eventsCap, 'events stream cap', 1)
  integerArg(priority, 'priority', 0)
  integerArg(ttl, 'TTL', 0)
  integerArg(timeout, 'timeout', 0)
end
