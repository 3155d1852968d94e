-- Prepended to acquire_exclusive.lua, before queue.lua and holds.lua (not a script
-- of its own): the uncontended grant, made before any of their helpers is, so
-- that it costs the server none of them. It takes a free lock for a caller that
-- is not queued, with a token from the counter alone, in two commands: the
-- counter first, then SET NX (a GET first would make three). A lock that turns
-- out taken costs a token, which is harmless (tokens must only increase); it,
-- a queued caller, and fence_seed=clock go on to the whole script.
-- KEYS and ARGV: see acquire_exclusive.lua.
if ARGV[5] ~= 'clock' and (ARGV[7] ~= '1' or not redis.call('ZSCORE', KEYS[4], ARGV[3])) then
  local token = redis.call('INCR', KEYS[2])
  -- '%d': see holds.lua.
  local value = ARGV[1] .. ':' .. string.format('%d', token)
  if ARGV[6] ~= '' then
    value = value .. ':' .. ARGV[6]
  end
  if redis.call('SET', KEYS[1], value, 'PX', ARGV[2], 'NX') then
    return {1, token}
  end
end
