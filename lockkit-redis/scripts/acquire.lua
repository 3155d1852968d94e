-- Takes the lock if it is free or already ours (then refreshes the TTL and keeps
-- the token); bumps the per-key fencing counter for a new holder.
-- KEYS[1] lock, KEYS[2] fencing counter; ARGV[1] owner, ARGV[2] ttl ms.
-- Returns {1, token} when held by us, {0, pttl} when held by another owner.
local current = redis.call('GET', KEYS[1])
if current then
  local sep = string.find(current, ':', 1, true)
  if sep and string.sub(current, 1, sep - 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, tonumber(string.sub(current, sep + 1))}
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. token, 'PX', ARGV[2])
return {1, token}
