-- Who holds the key and how many wait, changing nothing.
-- KEYS: see queue.lua.
-- Returns {value, pttl, waiting, holds}: the lock's value ('owner:token[:label]'
-- for an exclusive hold, '~S' or '~P<limit>' while shared holds or permits are
-- held, '' when free), its PTTL in ms, the live waiters (waiting, or woken and not
-- yet back), and for shared holds and permits a flat list of ms left and
-- 'token[:label]' for each live one.
local value = redis.call('GET', k.lock) or ''
local pttl = redis.call('PTTL', k.lock)
local waiting = redis.call('ZCOUNT', k.waiters, '(' .. now(), '+inf')
  + redis.call('ZCOUNT', k.woken, '(' .. now(), '+inf')
local holds = {}
if string.sub(value, 1, 1) == '~' then
  local held = redis.call('ZRANGEBYSCORE', k.holders, '(' .. now(), '+inf', 'WITHSCORES')
  for i = 1, #held, 2 do
    holds[#holds + 1] = tostring(tonumber(held[i + 1]) - now())
    holds[#holds + 1] = redis.call('HGET', k.holds, held[i]) or ''
  end
end
return {value, pttl, waiting, holds}
