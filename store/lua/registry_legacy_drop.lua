-- Forget migrated entries of the pre-issue-25 registry hash (one key).
-- KEYS: 1 the legacy hash
-- ARGV: agent id, the record JSON that was migrated[, agent id, JSON ...]
-- An entry whose value changed since it was read (an old process wrote it again) stays,
-- for the next migration pass. Returns how many entries were dropped.
local dropped = 0
for i = 1, #ARGV, 2 do
  if redis.call("HGET", KEYS[1], ARGV[i]) == ARGV[i + 1] then
    dropped = dropped + redis.call("HDEL", KEYS[1], ARGV[i])
  end
end
return dropped
