import { CLOCK, WINDOW } from './redis-window-lua.js';

/**
 * Lua for the Redis limiter: one hash per (family, scope) holding its sliding window (see
 * redis-window-lua.ts for the layout). Each script runs atomically, so a check and its consumption
 * across every scope of a request is all or nothing, whichever gateway instance sends it.
 *
 * Time: ARGV[1] is the caller's clock in ms, or -1 to use the Redis server's clock (the default in
 * production, so instances with skewed clocks still agree on one window).
 */

/**
 * One event-loop turn's admissions and token corrections of a family, in one call, each applied
 * in the order it was made exactly as if it had been its own call (the gateway sends a turn's work
 * together: one round trip and one script run instead of one per admission or correction, and a
 * window read and written once however many of them touch it).
 *
 * KEYS[1]: the turn's own key (its id); then the distinct scope hashes of the batch. ARGV[2]:
 * window seconds. ARGV[3]: operations.
 * Then per operation its kind and its fields:
 *   'a' (admission): scope count k, tokens asked, and per scope (KEYS index, rpm, tpm), 0 meaning
 *       unlimited in that dimension;
 *   'c' (correction): scope count k, token delta, the corrected admission's second (-1: not known),
 *       and k KEYS indexes. A positive delta lands in the current second; a negative one is taken
 *       back from that admission's second only (nothing once it left the window), or without one
 *       from the newest buckets first, never below zero.
 * Returns one reply per admission, in order (corrections answer nothing): {allowed, now, then per
 * scope: usedReq, usedTok, resetReqMs, resetTokMs, waitReqMs, waitTokMs}; used and reset describe
 * the window after consumption when allowed; a wait is -1 when that dimension has room.
 *
 * Idempotent turns: a call whose caller timed out may still run, its bytes sent before Redis hung,
 * while the caller's local windows took its operations over and will hand them over too
 * (redis-handover.ts). So each turn leaves, under its key, what it changed in each scope's window,
 * bucket by bucket (a correction's take-back lands in its admission's second, not the turn's). The
 * hand-over undoes exactly that before adding what was decided locally, or, finding no key, leaves
 * one that makes the turn, if it still arrives, change nothing: either way each operation counts
 * once. The record is kept one window: by then every bucket it names has left the window, and a
 * hand-over that finds no record has nothing to undo. A turn that finds its key (a call ioredis
 * sent again after a reconnect, its first answer lost) answers nothing: its caller decides it as a
 * failed call (redis.ts), and the hand-over undoes the first run.
 */
export const TURN_LUA = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {} end
${CLOCK}
local W = tonumber(ARGV[2])
${WINDOW}
local function wait_for(buckets, amount)
  local freed = 0
  for s = oldest, sec do
    freed = freed + (buckets[s] or 0)
    if freed >= amount then return math.max(0, (s + W) * 1000 - now) end
  end
  return W * 1000
end

local function reset_ms(newest)
  if newest < oldest then return 0 end
  return math.max(0, (newest + W) * 1000 - now)
end

local windows = {}
local function window(i)
  local w = windows[i]
  if not w then
    w = open(KEYS[i])
    windows[i] = w
  end
  return w
end

-- An admission's fields start at ARGV[p]; returns its reply and where the next operation starts.
local function admit(p)
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
    if rpm > 0 and w.R + 1 > rpm then
      waitR = wait_for(bucket_values(w, 'r'), w.R + 1 - rpm)
      allowed = 0
    end
    local need = tokens
    if need < 1 then need = 1 end
    if tpm > 0 and w.T + need > tpm then
      waitT = wait_for(bucket_values(w, 't'), w.T + need - tpm)
      allowed = 0
    end
    ws[i] = w
    stats[i] = { w.R, w.T, w.nr, w.nt, waitR, waitT }
  end
  local reply = { allowed, now }
  for i = 1, k do
    local w, st = ws[i], stats[i]
    if allowed == 1 then
      add(w, 'r', sec, 1)
      st[1] = st[1] + 1
      st[3] = sec
      if tokens > 0 then
        add(w, 't', sec, tokens)
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
  return reply, p
end

-- A correction's fields start at ARGV[p]; returns where the next operation starts.
local function correct(p)
  local k = tonumber(ARGV[p])
  local delta = tonumber(ARGV[p + 1])
  local from = tonumber(ARGV[p + 2])
  p = p + 3
  for i = 1, k do
    local w = window(tonumber(ARGV[p]))
    p = p + 1
    if delta > 0 then add(w, 't', sec, delta) else take_back(w, 't', -delta, from) end
  end
  return p
end

local out = {}
local p = 4
for _ = 1, tonumber(ARGV[3]) do
  local kind = ARGV[p]
  if kind == 'a' then
    local reply
    reply, p = admit(p + 1)
    out[#out + 1] = reply
  elseif kind == 'c' then
    p = correct(p + 1)
  else
    return redis.error_reply('unknown operation ' .. tostring(kind))
  end
end

for _, w in pairs(windows) do save(w) end
-- What the turn changed, bucket by bucket: "sec;part;part..." with one part per scope key (KEYS
-- order from 2), each a list of (seconds before sec, requests, tokens), negative where taken back.
local record = { sec }
for i = 2, #KEYS do
  local w, by, part = windows[i], {}, {}
  if w then
    for f, n in pairs(w.changed) do
      if n ~= 0 then
        local s = tonumber(string.sub(f, 2))
        local e = by[s]
        if not e then
          e = { 0, 0 }
          by[s] = e
        end
        if string.sub(f, 1, 1) == 'r' then e[1] = e[1] + n else e[2] = e[2] + n end
      end
    end
  end
  for s, e in pairs(by) do part[#part + 1] = (sec - s) .. ' ' .. e[1] .. ' ' .. e[2] end
  record[#record + 1] = table.concat(part, ' ')
end
redis.call('SET', KEYS[1], table.concat(record, ';'), 'EX', W)
return out
`;

/**
 * KEYS[i]: scope hashes. ARGV[2]: tokens to give back. ARGV[3]: window seconds. ARGV[4]: the
 * admission's second (-1: not known).
 * Takes back one request and the tokens of an admission that did no work, never below zero: from
 * the admission's second only (nothing once it left the window), or without it from the newest
 * buckets first.
 * Returns {now, then per key: usedReq, usedTok, resetReqMs, resetTokMs} after the give-back, so the
 * refused request's answer can describe the windows without another call.
 */
export const RELEASE_LUA = `${CLOCK}
local tokens = tonumber(ARGV[2])
local W = tonumber(ARGV[3])
local from = tonumber(ARGV[4] or '-1')
${WINDOW}
local function reset_ms(newest)
  if newest < oldest then return 0 end
  return math.max(0, (newest + W) * 1000 - now)
end
local out = { now }
for i = 1, #KEYS do
  local w = open(KEYS[i])
  take_back(w, 'r', 1, from)
  if tokens > 0 then take_back(w, 't', tokens, from) end
  save(w)
  out[#out + 1] = w.R
  out[#out + 1] = w.T
  out[#out + 1] = reset_ms(w.nr)
  out[#out + 1] = reset_ms(w.nt)
end
return out
`;

/**
 * KEYS[1]: the epoch key. ARGV[1]: a fresh random value. Returns the key's value, setting it to
 * ARGV[1] first when it is missing: a Redis that lost its data (redis-handover.ts) answers with a
 * value no instance has seen before, however far the heartbeat counter has already climbed again.
 */
export const EPOCH_LUA = `
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1])
  v = ARGV[1]
end
return v
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
