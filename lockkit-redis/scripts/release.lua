-- Redlock, on one master: deletes the lock only if it is ours, then wakes one
-- waiter (wake_next.lua).
-- KEYS[1] lock, KEYS[2] waiters, KEYS[3] queue; ARGV[1] owner, ARGV[2] wake
-- channel prefix.
-- Returns 1 if released, 0 if the owner held nothing live.
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  redis.call('DEL', KEYS[1])
  wake_next(KEYS[2], KEYS[3], ARGV[2])
  return 1
end
return 0
