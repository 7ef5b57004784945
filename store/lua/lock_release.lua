-- Release a token lock only if the caller still holds it (memory-inbox.md M52).
-- KEYS: 1 lock; ARGV: 1 token. Returns 1 if released.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
