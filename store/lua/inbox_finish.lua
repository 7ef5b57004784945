-- Settle a turn's claimed items and release the slot (memory-inbox.md M46 steps 3-4, M8).
-- KEYS: 1 events, 2 admissions, 3 selectable, 4 running, 5 open, 6 terminal, 7 listing,
--       8 key index, 9 turn slot, 10 turn records
-- ARGV: 1 turn_id, 2 now in ms, 3 now (ISO ms), 4 "1" if ok, 5 "1" if side effects,
--       6 memory result JSON, 7 not_claimed JSON list, 8 terminal items kept,
--       9 admission attributes (space-separated), 10.. ignored ids this turn claimed
-- Only items still running under this turn change; an item ignored meanwhile stays.
-- Returns {"unknown_turn"}, {"turn_expired"} (nothing written), {"done", stored result}
-- for a repeated call, or {"ok", result JSON}.
local tid = ARGV[1]
local state = redis.call("HGET", KEYS[10], tid .. ":state")
if not state then return {"unknown_turn"} end
if state == "done" then return {"done", redis.call("HGET", KEYS[10], tid .. ":result")} end
local lease = tonumber(redis.call("HGET", KEYS[10], tid .. ":lease_ms") or "0")
if state ~= "open" or lease <= tonumber(ARGV[2]) then return {"turn_expired"} end

local ignored = {}
for i = 10, #ARGV do ignored[ARGV[i]] = true end
local lists = {handled = {}, ignored = {}, retryable = {}, needs_repair = {}}
local function terminal(id)
  redis.call("ZREM", KEYS[5], id)
  redis.call("ZADD", KEYS[6], ARGV[2], id)
end
for id in string.gmatch(redis.call("HGET", KEYS[10], tid .. ":claimed") or "", "%S+") do
  if redis.call("HGET", KEYS[2], id .. ":state") == "running"
      and redis.call("HGET", KEYS[2], id .. ":turn_id") == tid then
    redis.call("ZREM", KEYS[4], id)
    if ignored[id] then
      redis.call("HSET", KEYS[2], id .. ":state", "handled", id .. ":ignored_at", ARGV[3])
      terminal(id)
      table.insert(lists.ignored, id)
    elseif ARGV[4] == "1" then
      redis.call("HSET", KEYS[2], id .. ":state", "handled", id .. ":handled_at", ARGV[3])
      terminal(id)
      table.insert(lists.handled, id)
    else
      redis.call("HDEL", KEYS[2], id .. ":claimed_at", id .. ":turn_id")
      if ARGV[5] == "1" or redis.call("HEXISTS", KEYS[2], id .. ":side_effect_started_at") == 1 then
        redis.call("HSET", KEYS[2], id .. ":state", "needs-repair")
        table.insert(lists.needs_repair, id)
      else
        redis.call("HSET", KEYS[2], id .. ":state", "retryable")
        redis.call("ZADD", KEYS[3], redis.call("HGET", KEYS[2], id .. ":seq"), id)
        table.insert(lists.retryable, id)
      end
    end
  end
end

-- M8: forget the oldest terminal items beyond the retention bound.
forget_beyond(ARGV[8], ARGV[9])  -- prelude_retention.lua

local function json_ids(ids)
  if #ids == 0 then return "[]" end
  return '["' .. table.concat(ids, '","') .. '"]'
end
local result = '{"status":"ok","turn_id":"' .. tid .. '","memory":' .. ARGV[6]
  .. ',"handled":' .. json_ids(lists.handled) .. ',"ignored":' .. json_ids(lists.ignored)
  .. ',"retryable":' .. json_ids(lists.retryable)
  .. ',"needs_repair":' .. json_ids(lists.needs_repair) .. ',"not_claimed":' .. ARGV[7] .. '}'
redis.call("HSET", KEYS[10], tid .. ":state", "done", tid .. ":result", result)
if redis.call("GET", KEYS[9]) == tid then redis.call("DEL", KEYS[9]) end
return {"ok", result}
