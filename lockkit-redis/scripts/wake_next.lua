-- Redlock: shared by release.lua, force_release.lua and leave.lua (prepended to
-- each; not a script of its own). Wakes exactly one live waiter of a free lock.
--
-- `waiters` is a sorted set of "<driver id>:<waiter id>" scored by the entry's
-- expiry (server ms): a waiter refreshes its entry on every attempt, so an entry
-- whose score has passed belongs to a waiter that died. The oldest live entry is
-- removed and its driver's wake channel (`wake_prefix .. driver id`) gets the
-- waiter id. If no client receives it (that driver is gone), the next one is tried;
-- at most 8, so the script stays short.
local function wake_next(waiters, wake_prefix)
  if redis.call('EXISTS', waiters) == 0 then
    return 0
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', waiters, '-inf', now)
  for _ = 1, 8 do
    local head = redis.call('ZRANGE', waiters, 0, 0)[1]
    if not head then
      return 0
    end
    redis.call('ZREM', waiters, head)
    local sep = string.find(head, ':', 1, true)
    if sep and redis.call('PUBLISH', wake_prefix .. string.sub(head, 1, sep - 1),
        string.sub(head, sep + 1)) > 0 then
      return 1
    end
  end
  return 0
end
