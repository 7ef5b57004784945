-- Append a wake signal and commit both fingerprints (channels.md C26, C27, C53).
-- KEYS: 1 wake fingerprint, 2 delivered fingerprint, 3 wake stream,
--       4 act generation, 5 acts in flight
-- ARGV: 1 expected wake fingerprint ("" = absent), 2 new wake, 3 new delivered,
--       4 entry kind, 5 entry JSON, 6 approximate stream length kept,
--       7 act generation the tick took before it read anything ("" = none yet), 8 now
-- Returns the new stream id, or false when the committed wake fingerprint moved
-- (a concurrent delivery already handed this state over) or an own act of the agent
-- began, ran or ended since the tick started (what the tick saw may be that act).
if (redis.call("GET", KEYS[1]) or "") ~= ARGV[1] then return false end
if (redis.call("GET", KEYS[4]) or "") ~= ARGV[7] then return false end
if redis.call("ZCOUNT", KEYS[5], "(" .. ARGV[8], "+inf") > 0 then return false end
local id = redis.call("XADD", KEYS[3], "MAXLEN", "~", ARGV[6], "*",
  "kind", ARGV[4], "entry", ARGV[5])
redis.call("SET", KEYS[1], ARGV[2])
redis.call("SET", KEYS[2], ARGV[3])
return id
