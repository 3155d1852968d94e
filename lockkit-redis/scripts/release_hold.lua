-- Releases the owner's hold, whatever its mode, then wakes the waiters the release
-- admits (queue.lua): after a writer, the next writer or the readers up to the
-- next writer; after the last reader, the writer queued first; after a permit, one
-- permit waiter. A reader leaving while other readers hold wakes nobody.
-- KEYS: see queue.lua. ARGV[1] owner, ARGV[2] wake channel prefix, ARGV[3] how
-- long a woken waiter has to come back, ms, ARGV[4] '1' on a Cluster.
-- Returns 1 if released, 0 if the owner held nothing live.
local owner = ARGV[1]
local current = redis.call('GET', k.lock)
if not current then
  return 0
end
local released
if string.sub(current, 1, 1) ~= '~' then
  if exclusive_holder(current) ~= owner then
    return 0
  end
  redis.call('DEL', k.lock)
  released = 1
else
  local score = redis.call('ZSCORE', k.holders, owner)
  if not score then
    return 0
  end
  redis.call('ZREM', k.holders, owner)
  redis.call('HDEL', k.holds, owner)
  settle_holds()
  -- An expired hold was no longer held: it is dropped, and reported lost.
  released = live(score) and 1 or 0
end
wake_admitted(ARGV[2], tonumber(ARGV[3]), ARGV[4])
return released
