-- An own act (delay, cancel, dismissal) starts: before it changes any state it bumps
-- the agent's act generation and registers as in flight (channels.md C53).
-- KEYS: 1 act generation, 2 acts in flight (sorted set: token -> expiry epoch)
-- ARGV: 1 token, 2 expiry epoch, 3 now (epoch)
-- Acts that died mid-way (expired) are forgotten here. Returns the new generation.
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", ARGV[3])
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
return redis.call("INCR", KEYS[1])
