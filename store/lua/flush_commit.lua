-- Commit a written flush batch (channels.md C14, C15).
-- KEYS: 1 buffer list, 2 applied sequence, 3 intent, 4 flush flag
-- ARGV: 1 through_seq, 2 flag ttl (s)
-- Removes the head records whose sequence is <= through_seq, records the applied
-- sequence, clears the intent and renews the flag. Returns the number removed.
local through = tonumber(ARGV[1])
local removed = 0
while true do
  local head = redis.call("LINDEX", KEYS[1], 0)
  if not head then break end
  local seq = tonumber(string.match(head, "^(%d+):"))
  if seq == nil or seq > through then break end
  redis.call("LPOP", KEYS[1])
  removed = removed + 1
end
local applied = tonumber(redis.call("GET", KEYS[2]) or "0")
if through > applied then
  redis.call("SET", KEYS[2], ARGV[1])
end
redis.call("DEL", KEYS[3])
redis.call("SET", KEYS[4], "1", "EX", ARGV[2])
return removed
