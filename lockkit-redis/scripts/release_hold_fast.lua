-- Prepended to release_hold.lua, before queue.lua and holds.lua (not a script of
-- its own): the uncontended release, made before any of their helpers is. It
-- deletes the caller's exclusive hold when no one is queued; anything else (a
-- shared hold or a permit, waiters to wake, a hold that is not the caller's) goes
-- on to the whole script.
-- KEYS and ARGV: see release_hold.lua.
local fast_value = redis.call('GET', KEYS[1])
if fast_value and string.sub(fast_value, 1, #ARGV[1] + 1) == ARGV[1] .. ':'
    and redis.call('EXISTS', KEYS[4]) == 0 then
  redis.call('DEL', KEYS[1])
  return 1
end
