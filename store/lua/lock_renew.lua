-- Renew a token lock's lease if the caller still holds it (memory-inbox.md M52).
-- KEYS: 1 lock; ARGV: 1 token, 2 lease in ms. Returns 1 if renewed.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
