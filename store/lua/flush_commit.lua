-- Commit a written flush batch (channels.md C14, C15).
-- KEYS: 1 buffer list, 2 applied sequence, 3 intent, 4 flush flag,
--       5 buffered-channels set, 6 dead-flush set
-- ARGV: 1 through_seq, 2 flag ttl (s), 3 channel name
-- Removes the head records whose sequence is <= through_seq, records the applied
-- sequence and clears the intent. Then, if the buffer is drained, ends the run as
-- flush_release does (flag deleted, channel off the buffered set) and revives a
-- dead-lettered channel (C52): the run needs no second batch to find the buffer empty.
-- Otherwise renews the flag. Returns {removed, drained (0/1)}.
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
if redis.call("LLEN", KEYS[1]) == 0 then
  redis.call("DEL", KEYS[4])
  redis.call("SREM", KEYS[5], ARGV[3])
  redis.call("SREM", KEYS[6], ARGV[3])
  return {removed, 1}
end
redis.call("SET", KEYS[4], "1", "EX", ARGV[2])
return {removed, 0}
