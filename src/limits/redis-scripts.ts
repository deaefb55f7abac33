/**
 * Lua for the Redis limiter: the same per-second-bucket sliding window as window.ts, with one hash
 * per (family, scope) whose fields are r<second> (requests) and t<second> (tokens). Each script runs
 * atomically, so a check and its consumption across every scope of a request is all or nothing,
 * whichever gateway instance sends it.
 *
 * Time: ARGV[1] is the caller's clock in ms, or -1 to use the Redis server's clock (the default in
 * production, so instances with skewed clocks still agree on one window).
 */

/** Every script's clock (see above): `now` in ms and `sec`, the current one-second bucket. */
const CLOCK = `
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local sec = math.floor(now / 1000)
`;

/**
 * take_back(key, prefix, amount): removes `amount` from the newest buckets of one dimension ('r' or
 * 't') of a scope hash first, never below zero, within the window (needs `sec` and `W`).
 */
const TAKE_BACK = `
local function take_back(key, prefix, amount)
  local left = amount
  local s = sec
  while left > 0 and s > sec - W do
    local f = prefix .. s
    local v = tonumber(redis.call('HGET', key, f)) or 0
    if v > 0 then
      local n = math.min(v, left)
      if n == v then redis.call('HDEL', key, f) else redis.call('HINCRBY', key, f, -n) end
      left = left - n
    end
    s = s - 1
  end
end
`;

/**
 * Admissions, several in one call, decided one after the other exactly as if each had been its own
 * call (the gateway sends those of one event-loop turn together: one round trip and one script run
 * instead of one each).
 *
 * KEYS: the distinct scope hashes of the batch. ARGV[2]: window seconds. ARGV[3]: admissions.
 * Then per admission: scope count k, tokens asked, and per scope (KEYS index, rpm, tpm), 0 meaning
 * unlimited in that dimension.
 * Returns per admission {allowed, now, then per scope: usedReq, usedTok, resetReqMs, resetTokMs,
 * waitReqMs, waitTokMs}; used and reset describe the window after consumption when allowed; a wait
 * is -1 when that dimension has room.
 *
 * Each hash is read once per call into a Lua table that later admissions of the batch see (with
 * the consumption of the earlier ones), and what the batch consumed is written once per hash.
 */
export const ADMIT_MANY_LUA = `${CLOCK}
local W = tonumber(ARGV[2])
local oldest = sec - W + 1

local function wait_for(buckets, amount)
  local freed = 0
  for s = oldest, sec do
    freed = freed + (buckets[s] or 0)
    if freed >= amount then return math.max(0, (s + W) * 1000 - now) end
  end
  return W * 1000
end

local function reset_ms(newest)
  if newest < 0 then return 0 end
  return math.max(0, (newest + W) * 1000 - now)
end

-- The window of KEYS[i] as this batch sees it; stale buckets are dropped on the first read.
local windows = {}
local function window(i)
  local w = windows[i]
  if w then return w end
  w = { req = {}, tok = {}, usedR = 0, usedT = 0, newestR = -1, newestT = -1, addR = 0, addT = 0 }
  local flat = redis.call('HGETALL', KEYS[i])
  local stale = {}
  for j = 1, #flat, 2 do
    local f = flat[j]
    local s = tonumber(string.sub(f, 2))
    local v = tonumber(flat[j + 1]) or 0
    if s == nil or s < oldest then
      stale[#stale + 1] = f
    elseif string.sub(f, 1, 1) == 'r' then
      w.req[s] = v
      w.usedR = w.usedR + v
      if v > 0 and s > w.newestR then w.newestR = s end
    else
      w.tok[s] = v
      w.usedT = w.usedT + v
      if v > 0 and s > w.newestT then w.newestT = s end
    end
  end
  if #stale > 0 then redis.call('HDEL', KEYS[i], unpack(stale)) end
  windows[i] = w
  return w
end

local out = {}
local p = 4
for a = 1, tonumber(ARGV[3]) do
  local k = tonumber(ARGV[p])
  local tokens = tonumber(ARGV[p + 1])
  p = p + 2
  local allowed = 1
  local ws, stats = {}, {}
  for i = 1, k do
    local w = window(tonumber(ARGV[p]))
    local rpm = tonumber(ARGV[p + 1])
    local tpm = tonumber(ARGV[p + 2])
    p = p + 3
    local waitR, waitT = -1, -1
    if rpm > 0 and w.usedR + 1 > rpm then
      waitR = wait_for(w.req, w.usedR + 1 - rpm)
      allowed = 0
    end
    local need = tokens
    if need < 1 then need = 1 end
    if tpm > 0 and w.usedT + need > tpm then
      waitT = wait_for(w.tok, w.usedT + need - tpm)
      allowed = 0
    end
    ws[i] = w
    stats[i] = { w.usedR, w.usedT, w.newestR, w.newestT, waitR, waitT }
  end
  local reply = { allowed, now }
  for i = 1, k do
    local w, st = ws[i], stats[i]
    if allowed == 1 then
      w.req[sec] = (w.req[sec] or 0) + 1
      w.usedR = w.usedR + 1
      w.newestR = sec
      w.addR = w.addR + 1
      st[1] = st[1] + 1
      st[3] = sec
      if tokens > 0 then
        w.tok[sec] = (w.tok[sec] or 0) + tokens
        w.usedT = w.usedT + tokens
        w.newestT = sec
        w.addT = w.addT + tokens
        st[2] = st[2] + tokens
        st[4] = sec
      end
    end
    reply[#reply + 1] = st[1]
    reply[#reply + 1] = st[2]
    reply[#reply + 1] = reset_ms(st[3])
    reply[#reply + 1] = reset_ms(st[4])
    reply[#reply + 1] = st[5]
    reply[#reply + 1] = st[6]
  end
  out[a] = reply
end

for i, w in pairs(windows) do
  if w.addR > 0 then
    redis.call('HINCRBY', KEYS[i], 'r' .. sec, w.addR)
    if w.addT > 0 then redis.call('HINCRBY', KEYS[i], 't' .. sec, w.addT) end
    redis.call('PEXPIRE', KEYS[i], (W + 1) * 1000)
  end
end
return out
`;

/**
 * Token corrections, several in one call, applied in the order given (the same as one call each).
 * KEYS: the distinct scope hashes of the batch. ARGV[2]: window seconds. ARGV[3]: corrections.
 * Then per correction: scope count k, token delta, and k KEYS indexes.
 * A positive delta lands in the current second; a negative one is taken back from the newest
 * buckets first, never below zero (the admission it corrects is recent).
 */
export const ADJUST_MANY_LUA = `${CLOCK}
local W = tonumber(ARGV[2])
${TAKE_BACK}
local p = 4
for a = 1, tonumber(ARGV[3]) do
  local k = tonumber(ARGV[p])
  local delta = tonumber(ARGV[p + 1])
  p = p + 2
  for i = 1, k do
    local key = KEYS[tonumber(ARGV[p])]
    p = p + 1
    if delta > 0 then
      redis.call('HINCRBY', key, 't' .. sec, delta)
      redis.call('PEXPIRE', key, (W + 1) * 1000)
    else
      take_back(key, 't', -delta)
    end
  end
end
return 1
`;

/**
 * KEYS[i]: scope hashes. ARGV[2]: tokens to give back. ARGV[3]: window seconds.
 * Takes back one request and the tokens of an admission that did no work, from the newest
 * buckets first, never below zero.
 */
export const RELEASE_LUA = `${CLOCK}
local tokens = tonumber(ARGV[2])
local W = tonumber(ARGV[3])
${TAKE_BACK}
for i = 1, #KEYS do
  take_back(KEYS[i], 'r', 1)
  if tokens > 0 then take_back(KEYS[i], 't', tokens) end
end
return 1
`;

/**
 * KEYS[1]: one scope hash. ARGV[1]: clock (ms, or -1). ARGV[2]: window seconds. Then triples
 * (second, requests, tokens): what one instance admitted on its own while Redis was away, added
 * to the shared window so the minute after an outage counts it. Seconds that left the window are
 * skipped; a second ahead of the server's clock counts as now.
 */
export const RECORD_LUA = `${CLOCK}
local W = tonumber(ARGV[2])
for i = 3, #ARGV, 3 do
  local s = math.min(tonumber(ARGV[i]), sec)
  local r = tonumber(ARGV[i + 1])
  local t = tonumber(ARGV[i + 2])
  if s > sec - W then
    if r > 0 then redis.call('HINCRBY', KEYS[1], 'r' .. s, r) end
    if t > 0 then redis.call('HINCRBY', KEYS[1], 't' .. s, t) end
  end
end
redis.call('PEXPIRE', KEYS[1], (W + 1) * 1000)
return 1
`;

/**
 * KEYS[1]: the instance registry (a sorted set scored by last heartbeat, server clock).
 * ARGV[1]: this instance's id. ARGV[2]: how long a silent instance still counts (ms).
 * Returns how many instances are live, this one included.
 */
export const HEARTBEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return redis.call('ZCARD', KEYS[1])
`;
