--[[ applyEffectOnce: the effect guard for side effects that live in Redis itself.

  Takes the effect's dedup marker (SET NX PX) and, only if it was free, applies the
  effect's commands, all in one atomic step: the effect is applied exactly once however
  often the job is delivered, and a crash cannot fall between marker and effect.

  KEYS[1] the effect's dedup marker (emq:{q}:de:<job id>:<effect name>)
  KEYS[2] the job's effects set (emq:{q}:effects:<job id>): the marker's name is added, so
          the dashboard lists a job's markers without a SCAN; it lives as long as the
          longest-lived marker in it
  KEYS[3..] keys the effect writes (same hash tag as the queue)
  ARGV[1] marker TTL (ms)   ARGV[2] marker value (the lock token, for diagnosis)
  then each command as: argument count n, command name, index into KEYS, n arguments

  Returns 1 when the effect was applied, 0 when the marker was already held.
]]
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then
  return 0
end
redis.call('SADD', KEYS[2], KEYS[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
local i = 3
while i <= #ARGV do
  local argc = tonumber(ARGV[i])
  local command = {ARGV[i + 1], KEYS[tonumber(ARGV[i + 2])]}
  for j = 1, argc do
    command[2 + j] = ARGV[i + 2 + j]
  end
  redis.call(unpack(command))
  i = i + 3 + argc
end
return 1
