-- Push one record onto a channel's coalescing buffer (channels.md C13).
-- KEYS: 1 buffer list, 2 flush flag, 3 sequence counter, 4 dedup key, 5 buffered-channels set,
--       6 push receipt
-- ARGV: 1 record JSON, 2 flag ttl (s), 3 "1" when deduplicated, 4 event id,
--       5 dedup ttl (s), 6 channel name, 7 receipt ttl (s)
-- Returns {"duplicate", first_event_id} or {"queued", seq, flag_set ("1"/"0")}.
-- The receipt (named by a token the caller drew once per call) makes a re-sent push,
-- the client's retry after a lost reply, answer as its first run did and write nothing.
local receipt = redis.call("GET", KEYS[6])
if receipt then
  local seq, flag = string.match(receipt, "^(%d+):([01])$")
  if seq then
    return {"queued", seq, flag}
  end
end
if ARGV[3] == "1" then
  local first = redis.call("GET", KEYS[4])
  if first then
    return {"duplicate", first}
  end
end
local seq = redis.call("INCR", KEYS[3])
redis.call("RPUSH", KEYS[1], seq .. ":" .. ARGV[1])
if ARGV[3] == "1" then
  redis.call("SET", KEYS[4], ARGV[4], "EX", ARGV[5])
end
redis.call("SADD", KEYS[5], ARGV[6])
local flag = "0"
if redis.call("SET", KEYS[2], "1", "NX", "EX", ARGV[2]) then
  flag = "1"
end
redis.call("SET", KEYS[6], seq .. ":" .. flag, "EX", ARGV[7])
return {"queued", tostring(seq), flag}
