-- Who holds the lock and how many wait, changing nothing.
-- KEYS[1] lock, KEYS[2] waiters.
-- Returns {value, pttl, waiting}: the lock's value (owner:token or
-- owner:token:label; '' when free), its PTTL in ms, and the waiters whose entries
-- have not expired.
local value = redis.call('GET', KEYS[1]) or ''
local pttl = redis.call('PTTL', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local waiting = redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')
return {value, pttl, waiting}
