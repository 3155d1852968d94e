-- Renews many shared holds and permits in one call (the watchdog's round, for the
-- holds that extend_many.lua found are not exclusive locks).
-- KEYS[3i-2] lock, KEYS[3i-1] holders, KEYS[3i] holds of the i-th renewal;
-- ARGV[1] ttl ms, ARGV[i + 1] the owner of the i-th renewal.
-- Returns one 1 (renewed) or 0 (no live hold of that owner) per renewal.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = now + tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 3 do
  local lock, holders, holds = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local score = redis.call('ZSCORE', holders, ARGV[i + 1])
  if score and tonumber(score) > now and redis.call('EXISTS', lock) == 1 then
    redis.call('ZADD', holders, ends, ARGV[i + 1])
    local last = tonumber(redis.call('ZRANGE', holders, -1, -1, 'WITHSCORES')[2])
    redis.call('PEXPIREAT', lock, last)
    redis.call('PEXPIREAT', holders, last)
    redis.call('PEXPIREAT', holds, last)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
