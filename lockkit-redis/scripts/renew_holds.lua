-- Renews many holds of any mode in one call (a single server's or a Cluster
-- slot's share of the watchdog's round, or one extend): an exclusive hold when
-- the lock is the owner's, a shared hold or a permit while it is live.
-- KEYS[3i-2] lock, KEYS[3i-1] holders, KEYS[3i] holds of the i-th renewal;
-- ARGV[1] ttl ms, ARGV[i + 1] the owner of the i-th renewal.
-- Returns one 1 (renewed) or 0 (no live hold of that owner) per renewal.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 3 do
  local lock, holders, holds = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local owner = ARGV[i + 1]
  local current = redis.call('GET', lock)
  out[i] = 0
  if current and string.sub(current, 1, #owner + 1) == owner .. ':' then
    out[i] = redis.call('PEXPIRE', lock, ttl)
  elseif current and string.sub(current, 1, 1) == '~' then
    local score = redis.call('ZSCORE', holders, owner)
    if score and tonumber(score) > now then
      redis.call('ZADD', holders, now + ttl, owner)
      local last = tonumber(redis.call('ZRANGE', holders, -1, -1, 'WITHSCORES')[2])
      redis.call('PEXPIREAT', lock, last)
      redis.call('PEXPIREAT', holders, last)
      redis.call('PEXPIREAT', holds, last)
      out[i] = 1
    end
  end
end
return out
