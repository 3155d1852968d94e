-- The Redis floor's release: the compare-and-delete every hand-rolled Redis lock
-- sends. KEYS[1] the lock; ARGV[1] the value its acquire set.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
