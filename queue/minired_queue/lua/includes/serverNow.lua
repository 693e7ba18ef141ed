-- The server clock in ms: every time-based decision of the protocol is taken on it.
local function serverNow()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
