-- Redlock, on one master: pushes out the TTL only if the lock is ours.
-- KEYS[1] lock; ARGV[1] owner, ARGV[2] ttl ms. Returns 1 if extended, else 0.
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
