-- Redlock, on one master: deletes the lock whoever holds it (operator
-- break-glass), then wakes one waiter (wake_next.lua).
-- KEYS[1] lock, KEYS[2] waiters, KEYS[3] queue; ARGV[1] wake channel prefix.
-- Returns 1 if there was a holder.
local deleted = redis.call('DEL', KEYS[1])
wake_next(KEYS[2], KEYS[3], ARGV[1])
return deleted
