-- Deletes the lock whoever holds it (operator break-glass), with every permit of a
-- semaphore when KEYS[3] and KEYS[4] are given (not Redlock), then wakes one waiter
-- (wake_next.lua).
-- KEYS[1] lock, KEYS[2] waiters, KEYS[3] permits, KEYS[4] permit tokens;
-- ARGV[1] wake channel prefix.
-- Returns 1 if there was a holder.
local deleted = redis.call('DEL', KEYS[1])
if KEYS[3] then
  redis.call('DEL', KEYS[3], KEYS[4])
end
wake_next(KEYS[2], ARGV[1])
return deleted
