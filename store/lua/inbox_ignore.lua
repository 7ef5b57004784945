-- Ignore one item (memory-inbox.md M6, M8).
-- KEYS: 1 events, 2 admissions, 3 selectable, 4 running, 5 open, 6 terminal, 7 listing,
--       8 key index
-- ARGV: 1 event_id, 2 now (ISO ms), 3 now in ms, 4 terminal items kept,
--       5 admission attributes (space-separated)
-- Returns {"not_found"}, {"unchanged"} (already ignored), {"not_ignorable", state} or
-- {"ok", previous state}.
local id = ARGV[1]
local state = redis.call("HGET", KEYS[2], id .. ":state")
if not state then return {"not_found"} end
if state == "handled" then
  if redis.call("HEXISTS", KEYS[2], id .. ":ignored_at") == 1 then return {"unchanged"} end
  return {"not_ignorable", state}
end
if state == "needs-repair" then return {"not_ignorable", state} end
redis.call("HSET", KEYS[2], id .. ":state", "handled", id .. ":ignored_at", ARGV[2])
redis.call("ZREM", KEYS[3], id)
redis.call("ZREM", KEYS[4], id)
redis.call("ZREM", KEYS[5], id)
redis.call("ZADD", KEYS[6], ARGV[3], id)

local attributes = {}
for attribute in string.gmatch(ARGV[5], "%S+") do attributes[#attributes + 1] = attribute end
while redis.call("ZCARD", KEYS[6]) > tonumber(ARGV[4]) do
  local old = redis.call("ZPOPMIN", KEYS[6])[1]
  local digest = redis.call("HGET", KEYS[2], old .. ":key")
  if digest and redis.call("HGET", KEYS[8], digest) == old then
    redis.call("HDEL", KEYS[8], digest)
  end
  redis.call("HDEL", KEYS[1], old)
  for _, attribute in ipairs(attributes) do
    redis.call("HDEL", KEYS[2], old .. ":" .. attribute)
  end
  redis.call("ZREM", KEYS[7], old)
end
return {"ok", state}
