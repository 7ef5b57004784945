-- Claim up to N selectable items for a prepared turn (memory-inbox.md M43 step 3, M44).
-- KEYS: 1 events, 2 admissions, 3 selectable, 4 running, 5 open, 6 terminal, 7 listing,
--       8 key index, 9 turn slot, 10 turn records
-- ARGV: 1 turn_id, 2 now (ISO ms), 3 "1" for an observing kind, 4 N,
--       5 pre-turn memory status, 6 its checkpoint version ("" = none)
-- Oldest first by seq; a non-observing turn skips memory items (they stay selectable).
-- Records the claimed ids and the memory status on the turn. Returns {"lost"} when the
-- turn no longer holds the slot (recovered meanwhile), else {"ok", id...}. A turn claims
-- once: a re-sent claim (the client's retry after a lost reply) answers the ids recorded.
local tid = ARGV[1]
if redis.call("GET", KEYS[9]) ~= tid or redis.call("HGET", KEYS[10], tid .. ":state") ~= "open" then
  return {"lost"}
end
local recorded = redis.call("HGET", KEYS[10], tid .. ":claimed")
if recorded then
  local reply = {"ok"}
  for id in string.gmatch(recorded, "%S+") do reply[#reply + 1] = id end
  return reply
end
local limit = tonumber(ARGV[4])
local observing = ARGV[3] == "1"
local claimed = {}
local offset = 0
while #claimed < limit do
  local batch = redis.call("ZRANGE", KEYS[3], offset, offset + 99)
  if #batch == 0 then break end
  for _, id in ipairs(batch) do
    if observing or redis.call("HGET", KEYS[2], id .. ":memory") ~= "1" then
      claimed[#claimed + 1] = id
      if #claimed == limit then break end
    end
  end
  offset = offset + 100
end
for _, id in ipairs(claimed) do
  local seq = redis.call("ZSCORE", KEYS[3], id)
  redis.call("ZREM", KEYS[3], id)
  redis.call("ZADD", KEYS[4], seq, id)
  redis.call("HSET", KEYS[2], id .. ":state", "running", id .. ":claimed_at", ARGV[2],
             id .. ":turn_id", tid)
  redis.call("HINCRBY", KEYS[2], id .. ":attempts", 1)
end
redis.call("HSET", KEYS[10], tid .. ":claimed", table.concat(claimed, " "),
           tid .. ":memory_status", ARGV[5], tid .. ":memory_version", ARGV[6])
local reply = {"ok"}
for _, id in ipairs(claimed) do reply[#reply + 1] = id end
return reply
