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

forget_beyond(ARGV[4], ARGV[5])  -- prelude_retention.lua
return {"ok", state}
