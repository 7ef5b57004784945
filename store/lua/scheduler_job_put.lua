-- Store one scheduler job as JSON with its next run time (delay.md D16).
-- KEYS: 1 jobs hash, 2 run-times sorted set
-- ARGV: 1 job id, 2 job JSON, 3 next run time (epoch seconds) or "" when paused,
--       4 "add" (fails if the id exists) or "update" (fails if it does not)
-- Returns 1 when stored, 0 when the add/update precondition failed. An add of the very
-- job stored (a re-sent add) is answered 1.
local exists = redis.call("HEXISTS", KEYS[1], ARGV[1])
if ARGV[4] == "add" and exists == 1 and redis.call("HGET", KEYS[1], ARGV[1]) == ARGV[2] then
  return 1
end
if (ARGV[4] == "add" and exists == 1) or (ARGV[4] == "update" and exists == 0) then
  return 0
end
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
if ARGV[3] == "" then
  redis.call("ZREM", KEYS[2], ARGV[1])
else
  redis.call("ZADD", KEYS[2], ARGV[3], ARGV[1])
end
return 1
