-- Admit one generic source event (memory-inbox.md M3, M4, M8).
-- KEYS: 1 events, 2 admissions, 3 selectable, 4 running, 5 open, 6 terminal, 7 listing,
--       8 key index, 9 sequence, 10 wake stream
-- ARGV: 1 event_id, 2 event JSON, 3 created_at in ms, 4 key digest ("" = none),
--       5 open-item bound, 6 "1" to wake, 7 wake entry JSON (stream fields "kind" and
--       "entry", as every producer of the wake stream writes them: jobs/consumer/wake_stream.py)
-- Returns {"replay"} when this event id exists (a redelivery), {"duplicate", event_id}
-- when a retained item has the key, {"inbox_full"}, or {"ok", seq}. Writes nothing
-- unless "ok".
local id = ARGV[1]
if redis.call("HEXISTS", KEYS[1], id) == 1 then
  return {"replay"}
end
if ARGV[4] ~= "" then
  local existing = redis.call("HGET", KEYS[8], ARGV[4])
  if existing and redis.call("HEXISTS", KEYS[1], existing) == 1 then
    return {"duplicate", existing}
  end
end
if redis.call("ZCARD", KEYS[5]) >= tonumber(ARGV[5]) then
  return {"inbox_full"}
end
local seq = redis.call("INCR", KEYS[9])
redis.call("HSET", KEYS[1], id, ARGV[2])
redis.call("HSET", KEYS[2], id .. ":state", "pending", id .. ":seq", seq,
           id .. ":attempts", 0, id .. ":memory", "0")
if ARGV[4] ~= "" then
  redis.call("HSET", KEYS[2], id .. ":key", ARGV[4])
  redis.call("HSET", KEYS[8], ARGV[4], id)
end
redis.call("ZADD", KEYS[3], seq, id)
redis.call("ZADD", KEYS[5], seq, id)
redis.call("ZADD", KEYS[7], ARGV[3], id)
if ARGV[6] == "1" then
  redis.call("XADD", KEYS[10], "MAXLEN", "~", 1000, "*", "kind", "inbox", "entry", ARGV[7])
end
return {"ok", tostring(seq)}
