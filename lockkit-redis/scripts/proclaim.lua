-- Stores a new label and election value on our exclusive hold, keeping its token
-- and its lease (KEEPTTL).
-- KEYS[1] the lock key. ARGV[1] owner, ARGV[2] the text ('' for none).
-- Returns 1 when stored; 0 when the key is not our exclusive hold (free, expired,
-- another owner's, or shared holds or permits).
local current = redis.call('GET', KEYS[1])
if not current or string.sub(current, 1, 1) == '~' then
  return 0
end
local owner_end = string.find(current, ':', 1, true)
if not owner_end or string.sub(current, 1, owner_end - 1) ~= ARGV[1] then
  return 0
end
local token_end = string.find(current, ':', owner_end + 1, true)
local value
if token_end then
  value = string.sub(current, 1, token_end - 1)
else
  value = current
end
if ARGV[2] ~= '' then
  value = value .. ':' .. ARGV[2]
end
redis.call('SET', KEYS[1], value, 'KEEPTTL')
return 1
