--[[ pruneGroups: drop group bookkeeping nobody needs any more (the sweep runs it).

  KEYS[1] group-active   KEYS[2] active   KEYS[3] group-rate
  ARGV[1] how many group-active members follow (n)
  ARGV[2 .. 1+n] group-active members (`<group>\0<job id>`) read by the caller
  ARGV[2+n ..] groups whose rate window the caller read as ended

  A group-active member whose job is no longer in active is removed (moveToActive also
  does this for a group it considers; this reaches groups that never come back). A
  group's rate fields are deleted when its window has ended by the server clock.
  Returns {members removed, windows removed}.
]]
--- @include "serverNow"
--- @include "storedInteger"
--- @include "pushReady"
local now = serverNow()
local members = tonumber(ARGV[1])
local removedMembers, removedWindows = 0, 0
for i = 2, 1 + members do
  local member = ARGV[i]
  local jobId = string.sub(member, (string.find(member, GROUP_SEP, 1, true) or #member) + 1)
  if redis.call('ZSCORE', KEYS[1], member) and not redis.call('LPOS', KEYS[2], jobId) then
    redis.call('ZREM', KEYS[1], member)
    removedMembers = removedMembers + 1
  end
end
for i = 2 + members, #ARGV do
  local group = ARGV[i]
  local ends = storedInteger(redis.call('HGET', KEYS[3], 'e' .. GROUP_SEP .. group))
  if ends and ends <= now then
    redis.call('HDEL', KEYS[3], 'c' .. GROUP_SEP .. group, 'e' .. GROUP_SEP .. group)
    removedWindows = removedWindows + 1
  end
end
return {removedMembers, removedWindows}
