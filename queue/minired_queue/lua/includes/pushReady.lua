--- @include "storedInteger"
-- Make a job ready to run. Priority 0 (none): the wait list, FIFO; taken before any
-- prioritized job. Priority p > 0: the prioritized zset, score p * 2^32 + a queue-wide
-- counter, so lower priorities come first and jobs of one priority keep their order.
-- `nextInLine` (a recovered or released job): the front of its line rather than the back.
local PRIORITY_SHIFT = 4294967296
local function pushReady(waitKey, prioritizedKey, metaKey, jobId, priority, nextInLine)
  priority = tonumber(priority) or 0
  if priority <= 0 then
    if nextInLine then
      redis.call('RPUSH', waitKey, jobId)
    else
      redis.call('LPUSH', waitKey, jobId)
    end
    return
  end
  local counter = 0
  if not nextInLine then
    counter = redis.call('HINCRBY', metaKey, 'pc', 1) % PRIORITY_SHIFT
  end
  redis.call('ZADD', prioritizedKey, priority * PRIORITY_SHIFT + counter, jobId)
end

-- Groups. A job with a `group` field is ready in its group's line instead of wait: the
-- group-wait zset (all scores 0, ordered by member) holds `<group>\0<seq>\0<job id>`, seq
-- a queue-wide counter (meta `gs`) zero-padded to 16 digits and kept in the job's
-- `groupSeq` (a recovered job gets its place back). The groups zset holds each group with
-- ready jobs, scored by its turn (meta `gt`): moveToActive serves the lowest turn first
-- and sends the group to the back. Group names are free of '\0', so a group's members are
-- exactly the range [<group>\0, <group>\1).
local GROUP_SEP = '\0'

local function groupMember(group, seq, jobId)
  return group .. GROUP_SEP .. string.format('%016d', seq) .. GROUP_SEP .. jobId
end

-- Make a job ready: in its group's line when it has a group (and the caller passed the
-- group keys, as every script that can meet a grouped job does), else by pushReady.
-- keys: wait, prioritized, meta, groupWait, groups.
local function placeReady(keys, jobKey, jobId, nextInLine)
  local fields = redis.call('HMGET', jobKey, 'priority', 'group', 'groupSeq')
  local group = fields[2]
  if group and group ~= '' and keys.groupWait then
    local seq = storedInteger(fields[3])
    if not seq then
      seq = redis.call('HINCRBY', keys.meta, 'gs', 1)
      redis.call('HSET', jobKey, 'groupSeq', seq)
    end
    redis.call('ZADD', keys.groupWait, 0, groupMember(group, seq, jobId))
    if not redis.call('ZSCORE', keys.groups, group) then
      redis.call('ZADD', keys.groups, redis.call('HINCRBY', keys.meta, 'gt', 1), group)
    end
    return
  end
  pushReady(keys.wait, keys.prioritized, keys.meta, jobId, fields[1], nextInLine)
end

-- The first member of a group's line (or of any lex-ordered `<group>\0...` zset), or nil.
local function groupHead(lineKey, group)
  return redis.call('ZRANGEBYLEX', lineKey, '[' .. group .. GROUP_SEP, '(' .. group .. '\1', 'LIMIT', 0, 1)[1]
end

-- Take a grouped job out of its group's line; the group leaves the rotation when its line
-- is empty. Served (metaKey given): the group goes to the back of the rotation.
local function takeFromGroup(groupWaitKey, groupsKey, metaKey, group, member)
  redis.call('ZREM', groupWaitKey, member)
  if not groupHead(groupWaitKey, group) then
    redis.call('ZREM', groupsKey, group)
  elseif metaKey then
    redis.call('ZADD', groupsKey, redis.call('HINCRBY', metaKey, 'gt', 1), group)
  end
end
