-- Drop agents from one host's index (issue 25).
-- KEYS: 1 index hash, 2 workdir hash, 3 the index's version counter
-- ARGV: 1 the version the caller read the entries at ("" = drop whatever the version),
--       2.. agent ids
-- A reader pruning stale entries passes the version it read them at: if the index moved
-- since, a put may be re-adding one of them (record first, then index), so nothing is
-- dropped and -1 is returned. Otherwise moves the version when anything was dropped and
-- returns how many entries were.
if ARGV[1] ~= "" and (redis.call("GET", KEYS[3]) or "0") ~= ARGV[1] then
  return -1
end
local dropped = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local workdir = redis.call("HGET", KEYS[1], id)
  if workdir then
    redis.call("HDEL", KEYS[1], id)
    if redis.call("HGET", KEYS[2], workdir) == id then
      redis.call("HDEL", KEYS[2], workdir)
    end
    dropped = dropped + 1
  end
end
if dropped > 0 then
  redis.call("INCR", KEYS[3])
end
return dropped
