-- Prepended to acquire_exclusive.lua, before queue.lua and holds.lua (not a script
-- of its own): the uncontended grant, made before any of their helpers is, so
-- that it costs the server none of them. It takes a free lock with a token from
-- the counter alone, for a caller that is not queued (ARGV[7]: no earlier attempt
-- queued it, so there is no entry to look up); anything else (a held lock, a
-- queued caller, a fair request, fence_seed=clock) goes on to the whole script. The counter moves
-- only for a grant, so its value is the last token handed out.
-- KEYS and ARGV: see acquire_exclusive.lua.
if ARGV[5] ~= 'clock' and ARGV[8] ~= '1' and not redis.call('GET', KEYS[1])
    and (ARGV[7] ~= '1' or not redis.call('ZSCORE', KEYS[4], ARGV[3])) then
  local token = redis.call('INCR', KEYS[2])
  -- '%d': see holds.lua.
  local value = ARGV[1] .. ':' .. string.format('%d', token)
  if ARGV[6] ~= '' then
    value = value .. ':' .. ARGV[6]
  end
  redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
  return {1, token}
end
