-- Replace both committed fingerprints if neither changed since the caller read them
-- (channels.md C23, C27, C36).
-- KEYS: 1 delivered fingerprint, 2 wake fingerprint
-- ARGV: 1 expected delivered ("" = absent), 2 new delivered,
--       3 expected wake ("" = absent), 4 new wake
-- Returns 1 when swapped, 0 when another writer got there first.
if (redis.call("GET", KEYS[1]) or "") ~= ARGV[1] then return 0 end
if (redis.call("GET", KEYS[2]) or "") ~= ARGV[3] then return 0 end
redis.call("SET", KEYS[1], ARGV[2])
redis.call("SET", KEYS[2], ARGV[4])
return 1
