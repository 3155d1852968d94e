-- Deletes the lock whoever holds it (operator break-glass), then tells waiters.
-- KEYS[1] lock, KEYS[2] release channel. Returns 1 if there was a holder.
local deleted = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], '1')
return deleted
