-- The Redis floor's acquire: the raw fenced lock. It increments the key's
-- counter and sets the lock, if free, with the token in its value.
-- KEYS[1] the lock, KEYS[2] its counter; ARGV[1] the owner, ARGV[2] the TTL in ms.
-- Returns the token, or 0 if the lock is held (the counter moved on all the same).
local token = redis.call('INCR', KEYS[2])
if redis.call('SET', KEYS[1], ARGV[1] .. ':' .. token, 'NX', 'PX', ARGV[2]) then
  return token
end
return 0
