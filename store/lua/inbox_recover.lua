-- Recover claimed items and close the open turn (memory-inbox.md M51, M43 step 1).
-- KEYS: 1 events, 2 admissions, 3 selectable, 4 running, 5 open, 6 terminal, 7 listing,
--       8 key index, 9 turn slot, 10 turn records
-- ARGV: 1 mode: "startup" (always) or "expired" (only if turn ARGV[3] still holds the
--       slot and its lease has passed), 2 now in ms, 3 turn_id (mode "expired")
-- Every running item becomes retryable (selectable again with its seq), or needs-repair
-- when a side effect was marked; claimed_at and turn_id are cleared. Idempotent.
-- Returns {"noop"} or {"ok", closed turn_id or "", retryable ids, needs-repair ids}
-- (id lists space-separated).
local current = redis.call("GET", KEYS[9])
if ARGV[1] == "expired" then
  if current ~= ARGV[3] then return {"noop"} end
  local lease = tonumber(redis.call("HGET", KEYS[10], current .. ":lease_ms") or "0")
  if lease > tonumber(ARGV[2]) then return {"noop"} end
end
local closed = ""
if current then
  if redis.call("HGET", KEYS[10], current .. ":state") == "open" then
    redis.call("HSET", KEYS[10], current .. ":state", "expired")
    closed = current
  end
  redis.call("DEL", KEYS[9])
end
local retryable, repair = {}, {}
local running = redis.call("ZRANGE", KEYS[4], 0, -1, "WITHSCORES")
for i = 1, #running, 2 do
  local id, seq = running[i], running[i + 1]
  if redis.call("HEXISTS", KEYS[2], id .. ":side_effect_started_at") == 1 then
    redis.call("HSET", KEYS[2], id .. ":state", "needs-repair")
    repair[#repair + 1] = id
  else
    redis.call("HSET", KEYS[2], id .. ":state", "retryable")
    redis.call("ZADD", KEYS[3], seq, id)
    retryable[#retryable + 1] = id
  end
  redis.call("HDEL", KEYS[2], id .. ":claimed_at", id .. ":turn_id")
  redis.call("ZREM", KEYS[4], id)
end
return {"ok", closed, table.concat(retryable, " "), table.concat(repair, " ")}
