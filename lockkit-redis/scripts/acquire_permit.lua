-- Takes one permit of a counting semaphore of ARGV[7] permits: expired permits are
-- dropped first, then the owner's live permit is renewed (same token), or a new
-- one is granted if fewer than the limit are held. Every permit has its own lease,
-- and its token from the key's fencing counter. While permits are held the lock
-- holds '~P<limit>': exclusive acquires see the key held, and the limit travels
-- with the semaphore. A waiting caller that finds no room joins the queue.
-- KEYS: see queue.lua. ARGV[1..6] as acquire_exclusive.lua, ARGV[7] limit,
-- ARGV[8] '1' for a fair request: it waits behind any live writer or reader
-- queued ahead, and behind the permit waiters ahead that fill the free permits.
-- Returns {1, token}; {0, ms until a lease ends}; {-1, code} when the owner holds
-- the key in another mode (0 exclusive, -1 shared, n a permit of n); {-2, n} when
-- the permits held use a limit of n.
local owner, member, limit = ARGV[1], ARGV[3], tonumber(ARGV[7])
local function wait(ms)
  if member ~= '' then
    enqueue(member, tonumber(ARGV[4]))
  end
  return {0, math.max(1, ms)}
end
drop_expired_holds()
local current = redis.call('GET', k.lock)
if current and string.sub(current, 1, 2) ~= '~P' then
  if string.sub(current, 1, 1) ~= '~' then
    if exclusive_holder(current) == owner then
      return {-1, 0}
    end
  elseif holds_live(owner) then
    return {-1, held_code(current)}
  end
  return wait(redis.call('PTTL', k.lock))
end
local held = redis.call('ZCARD', k.holders)
if current and held > 0 and held_code(current) ~= limit then
  if holds_live(owner) then
    return {-1, held_code(current)}
  end
  return {-2, held_code(current)}
end
if not holds_live(owner) and held >= limit then
  local first = redis.call('ZRANGE', k.holders, 0, 0, 'WITHSCORES')
  return wait(tonumber(first[2]) - now())
end
if ARGV[8] == '1' and not holds_live(owner) then
  local ahead, permits = live_ahead(member)
  if ahead > permits or held + permits >= limit then
    return wait(tonumber(ARGV[4]))
  end
end
local token = grant_hold(owner, '~P' .. limit, tonumber(ARGV[2]), ARGV[5], ARGV[6])
if member ~= '' then
  dequeue(member)
end
return {1, token}
