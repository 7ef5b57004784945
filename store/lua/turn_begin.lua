-- Take the turn slot (memory-inbox.md M43 step 1, M53).
-- KEYS: 1 turn slot, 2 turn records, 3 turn order
-- ARGV: 1 turn_id, 2 kind, 3 now in ms, 4 lease expiry in ms, 5 turn records kept,
--       6 turn attributes, space-separated (for trimming old records)
-- Returns {"busy", turn_id} while an open turn holds its lease, {"expired", turn_id}
-- when it must first be recovered (nothing written in both cases), else {"ok"}. The
-- turn that holds the slot asking again (a re-sent begin) is answered {"ok"}.
local current = redis.call("GET", KEYS[1])
if current and current == ARGV[1] and redis.call("HGET", KEYS[2], current .. ":state") == "open" then
  return {"ok"}
end
if current and redis.call("HGET", KEYS[2], current .. ":state") == "open" then
  local lease = tonumber(redis.call("HGET", KEYS[2], current .. ":lease_ms") or "0")
  if lease > tonumber(ARGV[3]) then
    return {"busy", current}
  end
  return {"expired", current}
end
local tid = ARGV[1]
redis.call("SET", KEYS[1], tid)
redis.call("HSET", KEYS[2], tid .. ":state", "open", tid .. ":kind", ARGV[2],
           tid .. ":lease_ms", ARGV[4])
redis.call("ZADD", KEYS[3], ARGV[3], tid)
local attributes = {}
for attribute in string.gmatch(ARGV[6], "%S+") do attributes[#attributes + 1] = attribute end
while redis.call("ZCARD", KEYS[3]) > tonumber(ARGV[5]) do
  local old = redis.call("ZPOPMIN", KEYS[3])[1]
  for _, attribute in ipairs(attributes) do
    redis.call("HDEL", KEYS[2], old .. ":" .. attribute)
  end
end
return {"ok"}
