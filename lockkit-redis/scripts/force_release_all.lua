-- Deletes every hold of the key, whoever holds it and in whatever mode (operator
-- break-glass), then wakes the waiters that admits (queue.lua). Holders learn at
-- their next renewal.
-- KEYS: see queue.lua. ARGV[1] wake channel prefix, ARGV[2] how long a woken
-- waiter has to come back, ms, ARGV[3] '1' on a Cluster.
-- Returns 1 if there was a holder.
local held = redis.call('EXISTS', k.lock)
redis.call('DEL', k.lock, k.holders, k.holds)
wake_admitted(ARGV[1], tonumber(ARGV[2]), ARGV[3])
return held
