-- Add agents to one host's index (issue 25): agent id -> workdir and workdir -> agent id.
-- KEYS: 1 index hash, 2 workdir hash, 3 the index's version counter
-- ARGV: agent id, workdir[, agent id, workdir ...]
-- Moves the version once when anything changed; returns how many entries changed.
local changed = 0
for i = 1, #ARGV, 2 do
  local id, workdir = ARGV[i], ARGV[i + 1]
  local old = redis.call("HGET", KEYS[1], id)
  if old ~= workdir or redis.call("HGET", KEYS[2], workdir) ~= id then
    if old and old ~= workdir and redis.call("HGET", KEYS[2], old) == id then
      redis.call("HDEL", KEYS[2], old)
    end
    redis.call("HSET", KEYS[1], id, workdir)
    redis.call("HSET", KEYS[2], workdir, id)
    changed = changed + 1
  end
end
if changed > 0 then
  redis.call("INCR", KEYS[3])
end
return changed
