-- Takes the lock exclusively (the write lock) if it is free or already ours (then
-- the lease is refreshed and the token kept), with the key's next token. A waiting
-- caller that finds it held joins the queue, or refreshes its place there. A
-- writer does not wait behind the queue: readers wait behind writers, not the
-- other way round.
-- KEYS: see queue.lua. ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] the waiter's member
-- ('' when not waiting), ARGV[4] entry lifetime ms, ARGV[5] 'clock' to keep tokens
-- at or above the server's clock (fence_seed=clock), ARGV[6] label ('' for none),
-- ARGV[7] '1' if the caller may be queued already (an earlier attempt found the
-- lock taken), '' if not; ARGV[8] '1' for a fair request, which takes a free lock
-- only with no live waiter queued ahead of it (none at all if it is not queued).
-- Returns {1, token}; {0, ms to wait at most}; {-1, code} when the owner holds the
-- key in another mode (code -1 shared, n a permit of n).
local owner, member = ARGV[1], ARGV[3]
local current = redis.call('GET', k.lock)
if current then
  if string.sub(current, 1, 1) == '~' then
    if holds_live(owner) then
      return {-1, held_code(current)}
    end
  else
    local token = reenter_exclusive(current, owner, ARGV[2], member)
    if token then
      return {1, token}
    end
  end
  if member ~= '' then
    enqueue(member, tonumber(ARGV[4]))
  end
  return {0, math.max(1, redis.call('PTTL', k.lock))}
end
if ARGV[8] == '1' and live_ahead(member) > 0 then
  if member ~= '' then
    enqueue(member, tonumber(ARGV[4]))
  end
  return {0, tonumber(ARGV[4])}
end
local token = next_token(ARGV[5])
-- '%d': see holds.lua.
local value = owner .. ':' .. string.format('%d', token)
if ARGV[6] ~= '' then
  value = value .. ':' .. ARGV[6]
end
redis.call('SET', k.lock, value, 'PX', ARGV[2])
if member ~= '' then
  dequeue(member)
end
return {1, token}
