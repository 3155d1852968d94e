-- Deletes the lock only if it is ours, then wakes one waiter (wake_next.lua). With
-- KEYS[3] and KEYS[4] (not Redlock), a live permit of the owner is released too.
-- KEYS[1] lock, KEYS[2] waiters, KEYS[3] permits, KEYS[4] permit tokens;
-- ARGV[1] owner, ARGV[2] wake channel prefix.
-- Returns 1 if released, 0 if the owner held nothing live.
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  redis.call('DEL', KEYS[1])
  wake_next(KEYS[2], ARGV[2])
  return 1
end
if KEYS[3] and current and string.sub(current, 1, 3) == '~P:' then
  local score = redis.call('ZSCORE', KEYS[3], ARGV[1])
  if not score then
    return 0
  end
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  if redis.call('ZCARD', KEYS[3]) == 0 then
    redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  wake_next(KEYS[2], ARGV[2])
  -- An expired permit was no longer held: it is dropped, and reported lost.
  return tonumber(score) > now and 1 or 0
end
return 0
