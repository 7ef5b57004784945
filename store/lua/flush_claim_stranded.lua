-- Claim a stranded buffer for a new flush (channels.md C15, sync tick).
-- KEYS: 1 buffer list, 2 flush flag, 3 buffered-channels set
-- ARGV: 1 channel name, 2 flag ttl (s)
-- Returns 1 when the caller set the flag and must enqueue a flush.
if redis.call("LLEN", KEYS[1]) == 0 then
  if redis.call("EXISTS", KEYS[2]) == 0 then
    redis.call("SREM", KEYS[3], ARGV[1])
  end
  return 0
end
if redis.call("SET", KEYS[2], "1", "NX", "EX", ARGV[2]) then
  return 1
end
return 0
