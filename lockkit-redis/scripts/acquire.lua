-- Redlock, on one master. Takes the lock if it is free or already ours (then refreshes the TTL and keeps
-- the token); bumps the per-key fencing counter for a new holder. A waiting caller
-- that finds the lock held joins the waiters (or refreshes its entry there), so a
-- release wakes it and only it.
-- KEYS[1] lock, KEYS[2] fencing counter, KEYS[3] waiters (scored by entry expiry),
-- KEYS[4] queue (the same entries, scored by the waiter's rank: wake_next.lua).
-- ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] waiter entry ('' when not waiting),
-- ARGV[4] waiter entry lifetime ms, ARGV[5] 'clock' to keep tokens at or above the
-- server's clock in microseconds (fence_seed=clock), '' for the counter alone,
-- ARGV[6] '1' if the caller may be in the waiters set already (an earlier attempt
-- was refused somewhere), '' if not: a grant takes its entry out only then,
-- ARGV[7] the waiter's rank, the same on every master.
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
    redis.call('ZADD', KEYS[4], ARGV[7], ARGV[3])
    redis.call('PEXPIRE', KEYS[4], ARGV[4])
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local token
if ARGV[5] == 'clock' then
  -- Never below the server's clock in microseconds: a counter missing (lost in a
  -- restart without persistence) or behind (a stale replica promoted) still
  -- hands out tokens above every one before, as long as the key saw fewer than
  -- a million grants a second.
  local t = redis.call('TIME')
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  token = math.max(tonumber(redis.call('GET', KEYS[2]) or 0) + 1, clock)
  redis.call('SET', KEYS[2], string.format('%d', token))
else
  token = redis.call('INCR', KEYS[2])
end
-- '%d', not `..`: concatenating a number keeps only 14 significant digits, and a
-- clock-seeded token has 16.
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', token), 'PX', ARGV[2])
if ARGV[3] ~= '' and ARGV[6] == '1' then
  redis.call('ZREM', KEYS[3], ARGV[3])
  redis.call('ZREM', KEYS[4], ARGV[3])
end
return {1, token}
