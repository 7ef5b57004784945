-- Remember a persistent spill by content (block-cap.md B11).
-- KEYS: 1 hash sha256 -> basename, 2 sorted set sha256 by last use
-- ARGV: 1 sha256 hex, 2 basename, 3 score (Unix seconds), 4 entries kept
-- Trims both keys together to the most recent ARGV[4] entries; returns the count evicted.
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
redis.call("ZADD", KEYS[2], ARGV[3], ARGV[1])
local excess = redis.call("ZCARD", KEYS[2]) - tonumber(ARGV[4])
if excess <= 0 then
  return 0
end
local evicted = redis.call("ZRANGE", KEYS[2], 0, excess - 1)
for _, sha in ipairs(evicted) do
  redis.call("HDEL", KEYS[1], sha)
end
redis.call("ZREMRANGEBYRANK", KEYS[2], 0, excess - 1)
return excess
