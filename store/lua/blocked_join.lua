-- Join an agent's blocked set unless the set is full (channels.md C28, C50).
-- KEYS: 1 blocked set
-- ARGV: 1 channel, 2 cap (members)
-- Returns 1 when added, 0 when already a member, -1 when the set is full.
if redis.call("SISMEMBER", KEYS[1], ARGV[1]) == 1 then return 0 end
if redis.call("SCARD", KEYS[1]) >= tonumber(ARGV[2]) then return -1 end
redis.call("SADD", KEYS[1], ARGV[1])
return 1
