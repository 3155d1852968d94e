-- Deletes the lock only if it is ours, then tells waiters.
-- KEYS[1] lock, KEYS[2] release channel; ARGV[1] owner. Returns 1 if released.
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', KEYS[2], '1')
  return 1
end
return 0
