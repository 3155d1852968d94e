-- Takes a read hold: beside other readers, never beside a writer or a permit, and
-- never past a writer queued before it, so writers are not starved. Each reader
-- has its own lease in holders, so a crashed reader pins nothing past its lease.
-- Our own write hold covers reading (its token comes back); our own read hold is
-- renewed with its token. A waiting caller that must wait joins the queue.
-- KEYS: see queue.lua. ARGV as acquire_exclusive.lua (ARGV[7] unused). A fair
-- request (ARGV[8]) needs nothing more: a reader already waits behind every live
-- writer and permit queued ahead, and readers ahead are admitted with it.
-- Returns {1, token}; {0, ms to wait at most}; {-1, n} when the owner holds a
-- permit of n.
local owner, member, lifetime = ARGV[1], ARGV[3], tonumber(ARGV[4])
local function wait(ms)
  if member ~= '' then
    enqueue(member, lifetime)
  end
  return {0, math.max(1, ms)}
end
local current = redis.call('GET', k.lock)
if current and string.sub(current, 1, 1) ~= '~' then
  local token = reenter_exclusive(current, owner, ARGV[2], member)
  if token then
    return {1, token}
  end
  return wait(redis.call('PTTL', k.lock))
end
if current and current ~= '~S' then
  if holds_live(owner) then
    return {-1, held_code(current)}
  end
  return wait(redis.call('PTTL', k.lock))
end
drop_expired_holds()
if not holds_live(owner) then
  -- Anyone but a reader queued ahead of us (all of the queue for a newcomer) goes
  -- first; the nearest SCAN entries ahead are looked at.
  local mine = member ~= '' and redis.call('ZSCORE', k.queue, member)
  local ahead = redis.call('ZREVRANGEBYSCORE', k.queue, mine and '(' .. mine or '+inf',
    '-inf', 'LIMIT', 0, SCAN)
  for _, m in ipairs(ahead) do
    if tag_of(m) ~= 'S' and alive(m) then
      return wait(lifetime)
    end
  end
end
local token = grant_hold(owner, '~S', tonumber(ARGV[2]), ARGV[5], ARGV[6])
if member ~= '' then
  dequeue(member)
end
return {1, token}
