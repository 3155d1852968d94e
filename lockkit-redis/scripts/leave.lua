-- Redlock, on one master: a waiter gives up (timed out, cancelled): removes its entry and, if the lock is
-- free, passes the wake-up on (wake_next.lua), since the release that woke this
-- waiter woke nobody else.
-- KEYS[1] lock, KEYS[2] waiters, KEYS[3] queue; ARGV[1] waiter entry, ARGV[2] wake
-- channel prefix.
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return wake_next(KEYS[2], KEYS[3], ARGV[2])
end
return 0
