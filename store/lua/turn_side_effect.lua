-- Mark that a turn's side effects started (memory-inbox.md M47).
-- KEYS: 1 admissions, 2 turn records
-- ARGV: 1 turn_id, 2 now in ms, 3 now (ISO ms)
-- Stamps the turn and each item it claimed that is still running under it (first stamp
-- wins). Returns {"unknown_turn"}, {"turn_expired"}, {"turn_finished"} or {"ok", id...}.
local tid = ARGV[1]
local state = redis.call("HGET", KEYS[2], tid .. ":state")
if not state then return {"unknown_turn"} end
if state == "done" then return {"turn_finished"} end
local lease = tonumber(redis.call("HGET", KEYS[2], tid .. ":lease_ms") or "0")
if state ~= "open" or lease <= tonumber(ARGV[2]) then return {"turn_expired"} end
redis.call("HSETNX", KEYS[2], tid .. ":side_effect_at", ARGV[3])
local reply = {"ok"}
for id in string.gmatch(redis.call("HGET", KEYS[2], tid .. ":claimed") or "", "%S+") do
  if redis.call("HGET", KEYS[1], id .. ":state") == "running"
      and redis.call("HGET", KEYS[1], id .. ":turn_id") == tid then
    redis.call("HSETNX", KEYS[1], id .. ":side_effect_started_at", ARGV[3])
    reply[#reply + 1] = id
  end
end
return reply
