-- Takes one permit of a counting semaphore of ARGV[7] permits: expired permits are
-- dropped first, then the owner's live permit is refreshed (same token), or a new
-- one is granted if fewer than the limit are held. Every permit has its own lease,
-- and its token from the key's fencing counter. While permits are held the lock
-- key holds '~P:<limit>', expiring with the last lease: exclusive acquires see the
-- key held, and the limit travels with the semaphore. A waiting caller that finds
-- no room joins the waiters, as in acquire.lua.
-- KEYS[1] lock, KEYS[2] fencing counter, KEYS[3] waiters, KEYS[4] permits (owner ->
-- lease end, server ms), KEYS[5] permit tokens (owner -> token or token:label).
-- ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] waiter entry ('' when not waiting),
-- ARGV[4] entry lifetime ms, ARGV[5] 'clock' or '' (as acquire.lua), ARGV[6] label
-- ('' for none), ARGV[7] limit.
-- Returns {1, token} when granted, {0, ms until a lease ends} when there is no room,
-- {-1, limit} when the permits held use another limit.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[7])
local function wait(ms)
  if ARGV[3] ~= '' then
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[3])
    redis.call('PEXPIRE', KEYS[3], ARGV[4])
  end
  return {0, ms}
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
if #expired > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  redis.call('HDEL', KEYS[5], unpack(expired))
end
local held = redis.call('ZCARD', KEYS[4])
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, 3) ~= '~P:' then
  return wait(redis.call('PTTL', KEYS[1]))
end
if current and held > 0 and tonumber(string.sub(current, 4)) ~= limit then
  return {-1, tonumber(string.sub(current, 4))}
end
local ends = now + tonumber(ARGV[2])
local token
if redis.call('ZSCORE', KEYS[4], ARGV[1]) then
  local kept = redis.call('HGET', KEYS[5], ARGV[1])
  local sep = string.find(kept, ':', 1, true)
  token = tonumber(sep and string.sub(kept, 1, sep - 1) or kept)
elseif held >= limit then
  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return wait(math.max(1, tonumber(first[2]) - now))
else
  if ARGV[5] == 'clock' and redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))
  end
  token = redis.call('INCR', KEYS[2])
  local value = string.format('%d', token)
  if ARGV[6] ~= '' then
    value = value .. ':' .. ARGV[6]
  end
  redis.call('HSET', KEYS[5], ARGV[1], value)
end
redis.call('ZADD', KEYS[4], ends, ARGV[1])
-- The sentinel and both sets live until the last lease ends.
local last = tonumber(redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')[2])
redis.call('SET', KEYS[1], '~P:' .. limit, 'PXAT', last)
redis.call('PEXPIREAT', KEYS[4], last)
redis.call('PEXPIREAT', KEYS[5], last)
if ARGV[3] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[3])
end
return {1, token}
