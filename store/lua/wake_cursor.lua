-- Advance an agent's wake cursor if nobody else moved it (channels.md C26).
-- KEYS: 1 cursor
-- ARGV: 1 expected cursor ("" = absent), 2 new cursor
-- Returns 1 when advanced, 0 when another reader consumed first.
if (redis.call("GET", KEYS[1]) or "") ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[2])
return 1
