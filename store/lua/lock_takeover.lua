-- Take a token lock whose holder is known to be gone (memory-inbox.md M52): only if the
-- lock still holds that holder's token.
-- KEYS: 1 lock; ARGV: 1 the gone holder's token, 2 new token, 3 lease in ms.
-- Returns 1 if taken.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
  return 1
end
return 0
