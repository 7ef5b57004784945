-- End a flush run when its buffer is drained (channels.md C14).
-- KEYS: 1 buffer list, 2 flush flag, 3 buffered-channels set
-- ARGV: 1 channel name
-- Deletes the flag only if the buffer is still empty; returns 1 if released.
if redis.call("LLEN", KEYS[1]) == 0 then
  redis.call("DEL", KEYS[2])
  redis.call("SREM", KEYS[3], ARGV[1])
  return 1
end
return 0
