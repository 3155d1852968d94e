-- Redlock: shared by release.lua, force_release.lua and leave.lua (prepended to
-- each; not a script of its own). Wakes exactly one live waiter of a free lock.
--
-- Two sorted sets hold the same "<driver id>:<waiter id>" entries. `waiters`
-- scores each by its expiry (server ms): a waiter refreshes its entry on every
-- attempt, so an entry whose score has passed belongs to a waiter that died.
-- `queue` scores each by the rank its waiter sends, the same to every master, so
-- every master wakes the same waiter at one release and the vote does not split.
-- The first live entry in rank order is removed and its driver's wake channel
-- (`wake_prefix .. driver id`) gets the waiter id. Dead entries met on the way
-- are dropped; if no client receives the message (that driver is gone), the next
-- one is tried; at most 16 entries, so the script stays short.
local function wake_next(waiters, queue, wake_prefix)
  if redis.call('EXISTS', queue) == 0 then
    return 0
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  for _ = 1, 16 do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then
      return 0
    end
    local expires = tonumber(redis.call('ZSCORE', waiters, head))
    redis.call('ZREM', queue, head)
    redis.call('ZREM', waiters, head)
    local sep = string.find(head, ':', 1, true)
    if expires and expires > now and sep and redis.call('PUBLISH',
        wake_prefix .. string.sub(head, 1, sep - 1), string.sub(head, sep + 1)) > 0 then
      return 1
    end
  end
  return 0
end
