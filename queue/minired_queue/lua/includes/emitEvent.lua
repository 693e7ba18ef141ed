-- Append a job event to the capped events stream.
local function emitEvent(eventsKey, cap, event, jobId, ...)
  redis.call('XADD', eventsKey, 'MAXLEN', '~', cap, '*', 'event', event, 'jobId', jobId, ...)
end
