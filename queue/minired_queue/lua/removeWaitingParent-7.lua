--[[ removeWaitingParent: delete a flow parent still waiting for its children.

  KEYS[1] waiting-children   KEYS[2] parent job hash   KEYS[3] its dependencies set
  KEYS[4] its children's results   KEYS[5] its children's failures   KEYS[6] metrics
  KEYS[7] events
  ARGV[1] parent id   ARGV[2] events stream cap

  Its children keep running; their later outcomes find no parent and are kept only for
  resolveChild's orphan TTL. Returns 1 if removed, 0 if it was not waiting for children.
]]
--- @include "emitEvent"
local parentId = ARGV[1]
if redis.call('ZREM', KEYS[1], parentId) == 0 then
  return 0
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('HINCRBY', KEYS[6], 'removed', 1)
emitEvent(KEYS[7], ARGV[2], 'removed', parentId)
return 1
