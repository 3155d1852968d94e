-- Takes several free locks at once, all or none, for one owner: each an exclusive
-- hold with its key's next token, as acquire_exclusive_fast.lua takes one. A lock
-- that exists (held in any mode) refuses the whole call, and nothing is written.
-- Single server only (the keys of several locks are in several Cluster slots), and
-- not with fence_seed=clock: the caller then takes the locks one by one.
-- KEYS: for each lock in turn, its lock and its fence (queue.lua's 1 and 2).
-- ARGV[1] owner, ARGV[2] ttl ms, ARGV[3] label ('' for none).
-- Returns every token, in the locks' order; an empty array if any lock is held.
local locks = #KEYS / 2
for i = 1, locks do
  if redis.call('EXISTS', KEYS[2 * i - 1]) == 1 then
    return {}
  end
end
local tokens = {}
for i = 1, locks do
  local token = redis.call('INCR', KEYS[2 * i])
  -- '%d': see holds.lua.
  local value = ARGV[1] .. ':' .. string.format('%d', token)
  if ARGV[3] ~= '' then
    value = value .. ':' .. ARGV[3]
  end
  redis.call('SET', KEYS[2 * i - 1], value, 'PX', ARGV[2])
  tokens[i] = token
end
return tokens
