-- Prepended after queue.lua to the single-server and Cluster scripts (not a script
-- of its own): tokens, and the shared holds and permits in holders and holds.

-- The key's next fencing token: the counter plus one. With seed 'clock', never
-- below the server's clock in microseconds, so that a counter that is missing
-- (first use, or lost in a restart without persistence) or behind (a replica
-- promoted before the last grants reached it) still hands out tokens above every
-- one before, as long as the key saw fewer than a million grants a second and the
-- clock did not go back. Numbers are exact below 2^53; the counter is stored with
-- '%d': Lua would print the number with 14 significant digits.
local function next_token(seed)
  if seed ~= 'clock' then
    return redis.call('INCR', k.fence)
  end
  now()
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = math.max(tonumber(redis.call('GET', k.fence) or 0) + 1, clock)
  redis.call('SET', k.fence, string.format('%d', token))
  return token
end

-- Drops the shared holds and permits whose lease has ended. `now` is TIME cut to
-- the millisecond, as was the instant a lease was counted from: a lease ends only
-- once `now` has passed its end (as Redis's own PX expiry does), never up to a
-- millisecond before the holder's own deadline.
local function drop_expired_holds()
  local expired = redis.call('ZRANGEBYSCORE', k.holders, '-inf', '(' .. now())
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', k.holders, '-inf', '(' .. now())
    -- In chunks: unpack() is bounded by Lua's stack.
    for i = 1, #expired, 1000 do
      redis.call('HDEL', k.holds, unpack(expired, i, math.min(i + 999, #expired)))
    end
  end
end

-- Whether `owner` has a live shared hold or permit.
local function holds_live(owner)
  return live(redis.call('ZSCORE', k.holders, owner))
end

-- Grants `owner` a shared hold or a permit for `ttl` ms: its live one renewed with
-- the same token, or a new one with the next token. The lock holds `sentinel`, and
-- both sets live, until the last lease ends. Returns the token.
local function grant_hold(owner, sentinel, ttl, seed, label)
  local token
  local kept = holds_live(owner) and redis.call('HGET', k.holds, owner)
  if kept then
    token = tonumber(string.match(kept, '^%d+'))
  else
    token = next_token(seed)
    -- '%d', not `..`: concatenating a number keeps only 14 significant digits,
    -- and a clock-seeded token has 16.
    local value = string.format('%d', token)
    if label ~= '' then
      value = value .. ':' .. label
    end
    redis.call('HSET', k.holds, owner, value)
  end
  redis.call('ZADD', k.holders, now() + ttl, owner)
  local last = tonumber(redis.call('ZRANGE', k.holders, -1, -1, 'WITHSCORES')[2])
  redis.call('SET', k.lock, sentinel, 'PXAT', last)
  redis.call('PEXPIREAT', k.holders, last)
  redis.call('PEXPIREAT', k.holds, last)
  return token
end

-- After a hold left: the sentinel and both sets live until the last lease ends,
-- and are deleted when none is left.
local function settle_holds()
  drop_expired_holds()
  local last = redis.call('ZRANGE', k.holders, -1, -1, 'WITHSCORES')[2]
  if not last then
    redis.call('DEL', k.lock, k.holders, k.holds)
    return
  end
  redis.call('PEXPIREAT', k.lock, last)
  redis.call('PEXPIREAT', k.holders, last)
  redis.call('PEXPIREAT', k.holds, last)
end

-- An exclusive value's owner and token: 'owner:token[:label]'.
local function exclusive_holder(value)
  local owner, token = string.match(value, '^([^:]*):(%d+)')
  return owner, tonumber(token)
end

-- If `value` is `owner`'s exclusive hold: renews it for `ttl` ms, takes `member`
-- ('' for none) out of the queue and returns its token (a read under one's own
-- write hold gets the write token). Otherwise nil.
local function reenter_exclusive(value, owner, ttl, member)
  local holder, token = exclusive_holder(value)
  if holder ~= owner then
    return nil
  end
  redis.call('PEXPIRE', k.lock, ttl)
  if member ~= '' then
    dequeue(member)
  end
  return token
end
