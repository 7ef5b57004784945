-- Give up the host's scheduler leader lease if this holder still owns it (delay.md D18).
-- KEYS: 1 leader key
-- ARGV: 1 the holder's lease value
-- Returns 1 when released.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
