-- Numbers are stored as decimal integers ('12', '-1'). A field or argument that is not one
-- (written by hand, or by a client not keeping to the protocol) reads as nil here, so a
-- script can refuse it or fall back to a default: tonumber would take '1.5' or '0x10'
-- and HINCRBY would fail on it, wedging every script that meets the job.
local function storedInteger(value)
  if type(value) == 'string' and string.match(value, '^%-?%d+$') then
    return tonumber(value)
  end
  return nil
end

-- A numeric argument of a script that writes it into a record: refused (an error reply,
-- nothing written) unless it is a decimal integer of at least `least`.
local function integerArg(value, name, least)
  local number = storedInteger(value)
  if number == nil or number < least then
    error({err = 'ERR ' .. name .. ' must be an integer >= ' .. least .. ', got ' .. tostring(value)})
  end
  return number
end
