/**
 * The Lua every limiter script shares: the clock, and one scope's sliding window as a Redis hash.
 *
 * A window is the same per-second-bucket sliding window as window.ts. Its hash holds the buckets,
 * r<second> (requests) and t<second> (tokens), and a summary kept current by every script that
 * changes a bucket, so that a check reads five fields instead of summing up to 120 buckets (which
 * cost the Redis server several times more CPU than the rest of a request's limiting):
 *   R, T    the sums of every r / t bucket in the hash;
 *   o       no bucket in the hash is older than this second;
 *   nr, nt  the newest second holding requests / tokens (-1: none).
 * Buckets that leave the window are subtracted and dropped when a script next opens the window
 * (usually the second or two since the last call; a key unused for a whole window has expired).
 */

/** Every script's clock: `now` in ms (ARGV[1], or the Redis server's clock when it is -1) and `sec`. */
export const CLOCK = `
local now = tonumber(ARGV[1])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local sec = math.floor(now / 1000)
`;

/**
 * open(key) -> window table; add(w, prefix, second, n); take_back(w, prefix, amount, from, down);
 * bucket_values(w, prefix) -> {second = value} over the window; save(w) writes what changed.
 * w.changed holds what the script changed per bucket field (r<second>, t<second>), so that a turn
 * can record exactly what it did (TURN_LUA) and a hand-over can undo exactly that (RECORD_LUA).
 * Needs `now`, `sec` and `W` (window seconds) defined before it.
 */
export const WINDOW = `
local oldest = sec - W + 1

-- Rebuilds the summary from the buckets (a clock that jumped by more than a window, or an old hash).
local function rebuild(w)
  local flat = redis.call('HGETALL', w.key)
  local stale = {}
  w.R, w.T, w.nr, w.nt = 0, 0, -1, -1
  for j = 1, #flat, 2 do
    local f = flat[j]
    local p = string.sub(f, 1, 1)
    local s = tonumber(string.sub(f, 2))
    local v = tonumber(flat[j + 1]) or 0
    if (p == 'r' or p == 't') and s ~= nil then
      if s < oldest then
        stale[#stale + 1] = f
      elseif p == 'r' then
        w.R = w.R + v
        if v > 0 and s > w.nr then w.nr = s end
      else
        w.T = w.T + v
        if v > 0 and s > w.nt then w.nt = s end
      end
    end
  end
  if #stale > 0 then redis.call('HDEL', w.key, unpack(stale)) end
  w.o = oldest
  w.dirty = true
  w.meta = true
end

local function open(key)
  local v = redis.call('HMGET', key, 'R', 'T', 'o', 'nr', 'nt')
  local w = { key = key, R = tonumber(v[1]) or 0, T = tonumber(v[2]) or 0, o = tonumber(v[3]),
              nr = tonumber(v[4]) or -1, nt = tonumber(v[5]) or -1, pending = {}, changed = {} }
  if w.o == nil then
    if redis.call('EXISTS', key) == 1 then
      rebuild(w)
    else
      w.o = oldest
      w.meta = true
    end
  elseif oldest - w.o > W then
    rebuild(w)
  elseif w.o < oldest then
    local fields = {}
    for s = w.o, oldest - 1 do
      fields[#fields + 1] = 'r' .. s
      fields[#fields + 1] = 't' .. s
    end
    local vals = redis.call('HMGET', key, unpack(fields))
    for j = 1, #fields, 2 do
      w.R = w.R - (tonumber(vals[j]) or 0)
      w.T = w.T - (tonumber(vals[j + 1]) or 0)
    end
    redis.call('HDEL', key, unpack(fields))
    w.o = oldest
    w.dirty = true
    w.meta = true
  end
  return w
end

-- Buckets grow in memory during a script and are written once each (flush), however many
-- admissions of a batch added to them.
local function add(w, prefix, s, n)
  local f = prefix .. s
  w.pending[f] = (w.pending[f] or 0) + n
  w.changed[f] = (w.changed[f] or 0) + n
  -- Requests ('r') and tokens ('t') keep the same summary fields under their own names.
  local sum, newest = 'T', 'nt'
  if prefix == 'r' then sum, newest = 'R', 'nr' end
  w[sum] = w[sum] + n
  if s > w[newest] then
    w[newest] = s
    w.meta = true
    w.newsecond = true
  elseif s < w[newest] then
    -- The clock went back (Redis's TIME was stepped): the expiry set with the newest second would
    -- run out with this bucket still in the window, taking every admission with it. Renew it too.
    w.newsecond = true
  end
  if s < w.o then
    w.o = s
    w.meta = true
  end
  w.dirty = true
end

local function flush(w)
  for f, n in pairs(w.pending) do redis.call('HINCRBY', w.key, f, n) end
  w.pending = {}
end

-- The newest second at or before 'from' whose bucket holds something, or -1.
local function newest_from(w, prefix, from)
  for s = math.min(from, sec), oldest, -1 do
    if (tonumber(redis.call('HGET', w.key, prefix .. s)) or 0) > 0 then return s end
  end
  return -1
end

-- Removes 'amount', never below zero, within the window: from second 'from' only (the corrected
-- admission's; nothing once it left the window) when it is given and >= 0, else from the newest
-- buckets first; with 'down', from the newest buckets at or before 'from' (a give-back whose
-- admission's second is unknown, made in second 'from').
local function take_back(w, prefix, amount, from, down)
  local only = from ~= nil and from >= 0 and not down
  local top = sec
  if from ~= nil and from >= 0 then top = math.min(from, sec) end
  if top <= sec - W then return end
  -- What this script added to that second covers it and more: the bucket keeps something, so
  -- taking it from the additions not yet written ends the same and costs no Redis command (a
  -- correction sent with the admissions of its turn).
  local f = prefix .. top
  local p = w.pending[f]
  if amount > 0 and p ~= nil and p > amount then
    w.pending[f] = p - amount
    w.changed[f] = w.changed[f] - amount
    if prefix == 'r' then w.R = w.R - amount else w.T = w.T - amount end
    w.dirty = true
    return
  end
  flush(w)
  local left = amount
  local s = top
  local emptied = false
  while left > 0 and s > sec - W do
    local f = prefix .. s
    local v = tonumber(redis.call('HGET', w.key, f)) or 0
    if v > 0 then
      local n = math.min(v, left)
      if n == v then
        redis.call('HDEL', w.key, f)
        emptied = true
      else
        redis.call('HINCRBY', w.key, f, -n)
      end
      left = left - n
      w.changed[f] = (w.changed[f] or 0) - n
      if prefix == 'r' then w.R = w.R - n else w.T = w.T - n end
      w.dirty = true
    end
    if only then break end
    s = s - 1
  end
  if emptied then
    if prefix == 'r' then w.nr = newest_from(w, 'r', w.nr) else w.nt = newest_from(w, 't', w.nt) end
    w.meta = true
  end
end

-- Only a refusal needs the buckets themselves (to say when enough of them leave the window).
local function bucket_values(w, prefix)
  local fields = {}
  for s = oldest, sec do fields[#fields + 1] = prefix .. s end
  local vals = redis.call('HMGET', w.key, unpack(fields))
  local out = {}
  for j = 1, #fields do out[oldest + j - 1] = (tonumber(vals[j]) or 0) + (w.pending[fields[j]] or 0) end
  return out
end

-- Writes the grown buckets and the summary. The expiry moves when a bucket of a new second appears:
-- set in that second's first write, it still outlives every bucket by the time they leave the window.
local function save(w)
  flush(w)
  if not w.dirty then return end
  if w.meta then
    redis.call('HSET', w.key, 'R', w.R, 'T', w.T, 'o', w.o, 'nr', w.nr, 'nt', w.nt)
  else
    redis.call('HSET', w.key, 'R', w.R, 'T', w.T)
  end
  if w.newsecond then redis.call('PEXPIRE', w.key, (W + 1) * 1000) end
  w.dirty, w.meta, w.newsecond = false, false, false
end
`;
