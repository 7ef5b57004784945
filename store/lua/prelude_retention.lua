-- Prelude shared by the scripts that make inbox items terminal (memory-inbox.md M8).
-- Uses the item keys: KEYS 1 events, 2 admissions, 6 terminal, 7 listing, 8 key index.
-- forget_beyond(kept, attributes): forget the oldest terminal items beyond ``kept``
-- (event, admission attributes listed space-separated, listing entry, key index entry).
local function forget_beyond(kept, attribute_list)
  local attributes = {}
  for attribute in string.gmatch(attribute_list, "%S+") do attributes[#attributes + 1] = attribute end
  while redis.call("ZCARD", KEYS[6]) > tonumber(kept) do
    local old = redis.call("ZPOPMIN", KEYS[6])[1]
    local digest = redis.call("HGET", KEYS[2], old .. ":key")
    if digest and redis.call("HGET", KEYS[8], digest) == old then
      redis.call("HDEL", KEYS[8], digest)
    end
    redis.call("HDEL", KEYS[1], old)
    for _, attribute in ipairs(attributes) do
      redis.call("HDEL", KEYS[2], old .. ":" .. attribute)
    end
    redis.call("ZREM", KEYS[7], old)
  end
end
