-- Commit one memory observation (memory-inbox.md M40): compare the checkpoint's
-- stored version, then write the event and its admission (when there is one) and the
-- advanced checkpoint together. Baselines, refreshes and absorbs pass no event.
-- KEYS: 1 events, 2 admissions, 3 selectable, 4 running, 5 open, 6 terminal, 7 listing,
--       8 key index, 9 sequence, 10 checkpoint
-- ARGV: 1 the version the observation read ("" = absent), 2 "1" when there is an event,
--       3 open-item bound, 4 event_id, 5 event JSON, 6 created_at in ms,
--       7.. checkpoint field name, value pairs (the script sets "version" itself)
-- Returns {"conflict"}, {"inbox_full"} (nothing written) or {"ok", new_version}.
local current = redis.call("HGET", KEYS[10], "version") or ""
if current ~= ARGV[1] then
  return {"conflict"}
end
local id = ARGV[4]
if ARGV[2] == "1" then
  if redis.call("ZCARD", KEYS[5]) >= tonumber(ARGV[3]) then
    return {"inbox_full"}
  end
  if redis.call("HEXISTS", KEYS[1], id) == 0 then
    local seq = redis.call("INCR", KEYS[9])
    redis.call("HSET", KEYS[1], id, ARGV[5])
    redis.call("HSET", KEYS[2], id .. ":state", "pending", id .. ":seq", seq,
               id .. ":attempts", 0, id .. ":memory", "1")
    redis.call("ZADD", KEYS[3], seq, id)
    redis.call("ZADD", KEYS[5], seq, id)
    redis.call("ZADD", KEYS[7], ARGV[6], id)
  end
end
local previous = tonumber(current)
if previous == nil or previous < 0 or previous ~= math.floor(previous) then
  previous = 0
end
local version = tostring(previous + 1)
redis.call("DEL", KEYS[10])
for i = 7, #ARGV - 1, 2 do
  redis.call("HSET", KEYS[10], ARGV[i], ARGV[i + 1])
end
redis.call("HSET", KEYS[10], "version", version)
return {"ok", version}
