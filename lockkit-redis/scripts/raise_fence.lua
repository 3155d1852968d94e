-- Redlock: records the token a quorum agreed on. Raises the fencing counter to at
-- least that token (so the next holder's INCR on this master goes past it) and, if
-- the lock is ours, rewrites its value as owner:token keeping the TTL (so a repeated
-- acquire by the same owner returns the same token). Redlock stores no label.
-- KEYS[1] lock, KEYS[2] fencing counter; ARGV[1] owner, ARGV[2] token.
-- Returns 1 if the lock is ours (value rewritten), 0 if not (counter still raised).
local fence = tonumber(redis.call('GET', KEYS[2]) or '0')
if fence < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, #ARGV[1] + 1) == ARGV[1] .. ':' then
  redis.call('SET', KEYS[1], ARGV[1] .. ':' .. ARGV[2], 'KEEPTTL')
  return 1
end
return 0
