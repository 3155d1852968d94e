-- Prepended to the single-server and Cluster scripts (not a script of its own):
-- the lock's keys, the server's clock, its holds and its queue of waiters.
--
-- KEYS, in every script it is prepended to (all tagged {K}, so one slot):
--   1 lock: an exclusive hold's 'owner:token[:label]', its lease as PX; while
--     shared holds or permits are held, '~S' or '~P<limit>', expiring with the
--     last lease. (A lockkit from before read-write locks kept permits under
--     '~P:<limit>' and other keys: it sees these keys held, never free.)
--   2 fence: the fencing counter; every grant of every mode takes the next value.
--   3 waiters, 4 queue, 5 woken: the waiters (below).
--   6 holders: shared holds and permits, owner -> lease end (server ms).
--   7 holds: owner -> 'token' or 'token:label'.
-- A waiter's member is '<driver id>:<waiter id>:<tag>', tag X (exclusive), S
-- (shared) or P<limit> (a permit). queue scores it by arrival: its place, kept
-- until it is granted or leaves. waiters scores it by its entry's expiry,
-- refreshed on every attempt. woken scores it by the deadline of a waiter that was
-- woken and has not tried again yet; it is not woken twice. An entry in neither is
-- dead. A driver id starting with '-' polls: it is never published to.
local k = { lock = KEYS[1], fence = KEYS[2], waiters = KEYS[3], queue = KEYS[4],
  woken = KEYS[5], holders = KEYS[6], holds = KEYS[7] }
-- The server's clock, read at most once per call, and only by the paths that
-- need it: an uncontended exclusive acquire or release never asks.
local t, now_ms
local function now()
  if not now_ms then
    t = redis.call('TIME')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end

-- Most queue entries one call looks at, so the script stays short; waiters further
-- back retry on their own timer.
local SCAN = 256

local function tag_of(member)
  return string.match(member, ':([^:]*)$') or 'X'
end

-- Whether a score read with ZSCORE is still in the future.
local function live(score)
  return score and tonumber(score) > now()
end

-- Whether a queued waiter is alive: waiting, or woken and due back.
local function alive(member)
  return live(redis.call('ZSCORE', k.waiters, member))
    or live(redis.call('ZSCORE', k.woken, member))
end

-- Queues `member` (at the back if new; a queued one keeps its place) and marks it
-- waiting for `lifetime` ms.
local function enqueue(member, lifetime)
  if not redis.call('ZSCORE', k.queue, member) then
    local last = redis.call('ZRANGE', k.queue, -1, -1, 'WITHSCORES')[2]
    redis.call('ZADD', k.queue, (tonumber(last) or 0) + 1, member)
  end
  redis.call('ZADD', k.waiters, now() + lifetime, member)
  redis.call('ZREM', k.woken, member)
  redis.call('PEXPIRE', k.queue, lifetime)
  redis.call('PEXPIRE', k.waiters, lifetime)
end

-- The live waiters queued ahead of `member` (the whole queue for a caller not
-- queued), among the nearest SCAN: how many, and how many of those ask for a
-- permit. A fair request (ARGV[8] '1') waits behind them.
local function live_ahead(member)
  local mine = member ~= '' and redis.call('ZSCORE', k.queue, member)
  local ahead = redis.call('ZREVRANGEBYSCORE', k.queue, mine and '(' .. mine or '+inf',
    '-inf', 'LIMIT', 0, SCAN)
  local n, permits = 0, 0
  for _, m in ipairs(ahead) do
    if alive(m) then
      n = n + 1
      if string.sub(tag_of(m), 1, 1) == 'P' then
        permits = permits + 1
      end
    end
  end
  return n, permits
end

local function dequeue(member)
  redis.call('ZREM', k.queue, member)
  redis.call('ZREM', k.waiters, member)
  redis.call('ZREM', k.woken, member)
end

-- The code of the mode a sentinel stands for: -1 shared, n a permit of n (1 for a
-- sentinel that is not lockkit's).
local function held_code(sentinel)
  if sentinel == '~S' then
    return -1
  end
  return tonumber(string.sub(sentinel, 3)) or 1
end

-- Wakes the queued waiters that the key's state now admits and that were not
-- woken already: at the head of a free key, one writer, or the readers up to the
-- next writer, or permit waiters up to the limit; while readers hold, the readers
-- at the head; one permit waiter per free permit. Dead entries met on the way are
-- dropped, and so are the waiters of a driver that no longer listens, where the
-- server can tell: on a Cluster (`cluster` '1') PUBLISH counts only the
-- subscribers on this node, so a waiter is taken as woken whatever the count, and a
-- dead one is dropped when its deadline passes. A woken waiter keeps its place
-- until it is granted. Returns how many were woken.
local function wake_admitted(prefix, lifetime, cluster)
  if redis.call('EXISTS', k.queue) == 0 then
    return 0
  end
  local value = redis.call('GET', k.lock)
  local family, room = nil, 0
  if value == '~S' then
    family, room = 'S', math.huge
  elseif value and string.sub(value, 1, 2) == '~P' then
    family = 'P'
    room = held_code(value) - redis.call('ZCOUNT', k.holders, '(' .. now(), '+inf')
  elseif value then
    return 0
  end
  local woke = 0
  for _, m in ipairs(redis.call('ZRANGE', k.queue, 0, SCAN - 1)) do
    local waiting = live(redis.call('ZSCORE', k.waiters, m))
    if not waiting and not live(redis.call('ZSCORE', k.woken, m)) then
      dequeue(m)
    else
      local tag = tag_of(m)
      local fam = string.sub(tag, 1, 1)
      if not family then
        family = fam
        room = (fam == 'X' and 1) or (fam == 'P' and (tonumber(string.sub(tag, 2)) or 1))
          or math.huge
      end
      if fam ~= family or room < 1 then
        break
      end
      room = room - 1
      local driver, id = string.match(m, '^([^:]*):([^:]*)')
      if waiting and driver and string.sub(driver, 1, 1) ~= '-' then
        if redis.call('PUBLISH', prefix .. driver, id) > 0 or cluster == '1' then
          redis.call('ZREM', k.waiters, m)
          redis.call('ZADD', k.woken, now() + lifetime, m)
          woke = woke + 1
        else
          dequeue(m)
          room = room + 1
        end
      end
    end
  end
  if woke > 0 then
    redis.call('PEXPIRE', k.woken, lifetime)
    redis.call('PEXPIRE', k.queue, lifetime)
  end
  return woke
end
