-- Renews many permits in one call (the watchdog's round, for the holds that
-- extend_many.lua found are not exclusive locks).
-- KEYS[3i-2] lock, KEYS[3i-1] permits, KEYS[3i] permit tokens of the i-th hold;
-- ARGV[1] ttl ms, ARGV[i + 1] the owner of the i-th hold.
-- Returns one 1 (renewed) or 0 (no live permit of that owner) per hold.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ends = now + tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 3 do
  local lock, permits, tokens = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local score = redis.call('ZSCORE', permits, ARGV[i + 1])
  if score and tonumber(score) > now and redis.call('EXISTS', lock) == 1 then
    redis.call('ZADD', permits, ends, ARGV[i + 1])
    local last = tonumber(redis.call('ZRANGE', permits, -1, -1, 'WITHSCORES')[2])
    redis.call('PEXPIREAT', lock, last)
    redis.call('PEXPIREAT', permits, last)
    redis.call('PEXPIREAT', tokens, last)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
