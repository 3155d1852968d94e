-- Who holds the lock and how many wait, changing nothing.
-- KEYS[1] lock, KEYS[2] waiters, KEYS[3] permits, KEYS[4] permit tokens.
-- Returns {value, pttl, waiting, permits}: the lock's value (owner:token or
-- owner:token:label for an exclusive hold, '~P:<limit>' while permits are held, ''
-- when free), its PTTL in ms, the waiters whose entries have not expired, and for a
-- semaphore a flat list of ms left, token[:label] for each live permit.
local value = redis.call('GET', KEYS[1]) or ''
local pttl = redis.call('PTTL', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local waiting = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
local permits = {}
if string.sub(value, 1, 3) == '~P:' then
  local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'WITHSCORES')
  for i = 1, #live, 2 do
    permits[#permits + 1] = tostring(tonumber(live[i + 1]) - now)
    permits[#permits + 1] = redis.call('HGET', KEYS[4], live[i]) or ''
  end
end
return {value, pttl, waiting, permits}
