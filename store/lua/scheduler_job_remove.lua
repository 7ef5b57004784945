-- Remove one scheduler job and its run time (delay.md D16).
-- KEYS: 1 jobs hash, 2 run-times sorted set
-- ARGV: 1 job id
-- Returns 1 if the job existed.
local removed = redis.call("HDEL", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[1])
return removed
