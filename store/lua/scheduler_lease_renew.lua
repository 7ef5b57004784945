-- Extend the host's scheduler leader lease if this holder still owns it (delay.md D18).
-- KEYS: 1 leader key
-- ARGV: 1 the holder's lease value, 2 expiry (ms)
-- Returns 1 when renewed, 0 when the lease is lost.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
