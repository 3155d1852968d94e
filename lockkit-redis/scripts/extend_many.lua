-- Redlock, on one master: renews many locks in one call (the watchdog's round).
-- KEYS lock keys; ARGV[1] ttl ms, ARGV[i + 1] the owner of KEYS[i].
-- Returns one 1 (extended) or 0 (not ours any more) per key.
local out = {}
for i, key in ipairs(KEYS) do
  local owner = ARGV[i + 1]
  local current = redis.call('GET', key)
  if current and string.sub(current, 1, #owner + 1) == owner .. ':' then
    out[i] = redis.call('PEXPIRE', key, ARGV[1])
  else
    out[i] = 0
  end
end
return out
