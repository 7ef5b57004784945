-- An own act ends after it committed its wake fingerprint (channels.md C53): it leaves
-- the in-flight set and bumps the generation again, so a tick that read before this
-- point cannot commit what it saw.
-- KEYS: 1 act generation, 2 acts in flight
-- ARGV: 1 token
redis.call("ZREM", KEYS[2], ARGV[1])
return redis.call("INCR", KEYS[1])
