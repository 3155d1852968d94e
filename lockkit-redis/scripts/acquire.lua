-- Redlock, on one master. Takes the lock if it is free or already ours (then refreshes the TTL and keeps
-- the token); bumps the per-key fencing counter for a new holder. A waiting caller
-- that finds the lock held joins the waiters (or refreshes its entry there), so a
-- release wakes it and only it.
-- KEYS[1] lock, KEYS[2] fencing counter, KEYS[3] waiters.
-- ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] waiter entry ('' when not waiting),
-- ARGV[4] waiter entry lifetime ms, ARGV[5] 'clock' to start a missing counter from
-- the server's clock in microseconds (fence_seed=clock), '' to start it from 0.
-- The lock's value is owner:token.
-- Returns {1, token} when held by us, {0, pttl} when held by another owner.
local current = redis.call('GET', KEYS[1])
if current then
  local sep = string.find(current, ':', 1, true)
  if sep and string.sub(current, 1, sep - 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, tonumber(string.sub(current, sep + 1))}
  end
  if ARGV[3] ~= '' then
    local t = redis.call('TIME')
    local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[4])
    redis.call('ZADD', KEYS[3], expires, ARGV[3])
    redis.call('PEXPIRE', KEYS[3], ARGV[4])
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
if ARGV[5] == 'clock' and redis.call('EXISTS', KEYS[2]) == 0 then
  -- A missing counter (first use, or lost in a restart without persistence)
  -- starts above every token handed out before, as long as the key saw fewer than
  -- a million grants a second. Built as a string: Lua would print the number
  -- with 14 significant digits.
  local t = redis.call('TIME')
  redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))
end
local token = redis.call('INCR', KEYS[2])
-- '%d', not `..`: concatenating a number keeps only 14 significant digits, and a
-- clock-seeded token has 16.
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', token), 'PX', ARGV[2])
if ARGV[3] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[3])
end
return {1, token}
