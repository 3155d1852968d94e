-- A waiter gives up (timed out, cancelled, refused): drops its place and wakes
-- whom its leaving admits (queue.lua): the wake-up it may have taken, passed on,
-- or the readers a writer held back.
-- KEYS: see queue.lua. ARGV[1] the waiter's member, ARGV[2] wake channel prefix,
-- ARGV[3] how long a woken waiter has to come back, ms, ARGV[4] '1' on a Cluster.
-- Returns how many waiters were woken.
dequeue(ARGV[1])
return wake_admitted(ARGV[2], tonumber(ARGV[3]), ARGV[4])
