import { CLOCK, WINDOW } from './redis-window-lua.js';

/**
 * The hand-over's Lua (redis-handover.ts): what an instance owes the shared windows after an outage.
 * Same clock and window layout as the admission scripts (redis-scripts.ts, redis-window-lua.ts).
 */

/**
 * KEYS[1]: one scope hash; KEYS[2]: this call's own key (its id); KEYS[3..]: the keys of the turns
 * that touched the scope and whose calls failed (TURN_LUA): they may have run all the same.
 * ARGV[1]: clock (ms, or -1). ARGV[2]: window seconds. ARGV[3]: how many such turns, then per turn
 * this scope's place in its record (0: the first scope key of its call). Then triples (second,
 * requests, tokens): what one instance decided on its own while Redis was away, those turns'
 * operations included (decided again on the local windows), so the minute after an outage counts
 * it. Positive: added in that second (admissions, corrections that add; one ahead of the server's
 * clock counts as now). Negative:
 * given back (corrections, releases) from that second, the admission's, only; a negative second s
 * stands for "from second -1 - s and older, newest first" (a give-back whose admission's second is
 * unknown, made in second -1 - s). Seconds that left the window are skipped.
 *
 * A turn that ran has what it changed in this window undone first, bucket by bucket: the triples
 * hold what the clients were told instead, and each correction once. One that did not is marked so
 * that it changes nothing if it still arrives (its bytes on their way, or in a Redis that resumes).
 * A turn touching several scopes is handled by the record of each, each undoing its own part.
 *
 * A call that finds its own key already set changes nothing: ioredis sends a command again after a
 * reconnect when its answer did not come (with a client that keeps them, autoResendUnfulfilledCommands),
 * though Redis may have run it. The key is kept two windows, like a voided turn's mark: a call that
 * runs later than that finds every second it names out of the window.
 */
export const RECORD_LUA = `${CLOCK}
local W = tonumber(ARGV[2])
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', 2 * W) then return 0 end
${WINDOW}
local w = open(KEYS[1])
local turns = tonumber(ARGV[3])

-- Puts back what a turn took from second s, or takes back what it added there.
local function undo(prefix, s, n)
  if n > 0 then take_back(w, prefix, n, s) elseif n < 0 and s > sec - W then add(w, prefix, math.min(s, sec), -n) end
end

for j = 1, turns do
  local key = KEYS[2 + j]
  local rec = redis.call('GET', key)
  if not rec then
    redis.call('SET', key, 'void', 'EX', 2 * W)
  elseif rec ~= 'void' then
    -- "sec;part;part...": this scope's part is the (place + 2)th, a list of (seconds before sec, requests, tokens).
    local want, i, at, part = tonumber(ARGV[3 + j]) + 2, 0, nil, nil
    for piece in string.gmatch(rec .. ';', '([^;]*);') do
      i = i + 1
      if i == 1 then at = tonumber(piece) elseif i == want then part = piece end
    end
    if part then
      local f = {}
      for x in string.gmatch(part, '%S+') do f[#f + 1] = tonumber(x) end
      for k = 1, #f - 2, 3 do
        undo('r', at - f[k], f[k + 1])
        undo('t', at - f[k], f[k + 2])
      end
    end
  end
end

local first = 4 + turns
-- What was admitted first, then what was given back: a give-back never misses its own admission.
for i = first, #ARGV, 3 do
  local s = tonumber(ARGV[i])
  if s >= 0 and s > sec - W then
    s = math.min(s, sec)
    local r, t = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if r > 0 then add(w, 'r', s, r) end
    if t > 0 then add(w, 't', s, t) end
  end
end
for i = first, #ARGV, 3 do
  local s = tonumber(ARGV[i])
  local down = s < 0
  if down then s = -1 - s end
  local r, t = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if r < 0 then take_back(w, 'r', -r, s, down) end
  if t < 0 then take_back(w, 't', -t, s, down) end
end
save(w)
return 1
`;

/**
 * KEYS[1]: one scope hash. ARGV[1]: clock (ms, or -1). ARGV[2]: window seconds. Then triples (age
 * in seconds, requests, tokens), oldest first: one instance's view of the window, after Redis lost
 * writes (redis-handover.ts). Raises the window to at least those totals, never lowering it: each
 * instance can send its own view and none is counted twice. What is missing goes into the oldest
 * seconds of the view first (what Redis lost is older than what it took since). Ages, not seconds,
 * so an instance whose clock is not the server's still places them right.
 */
export const RAISE_LUA = `${CLOCK}
local W = tonumber(ARGV[2])
${WINDOW}
local w = open(KEYS[1])
local needR, needT = -w.R, -w.T
for i = 3, #ARGV, 3 do
  if tonumber(ARGV[i]) < W then
    needR = needR + tonumber(ARGV[i + 1])
    needT = needT + tonumber(ARGV[i + 2])
  end
end
for i = 3, #ARGV, 3 do
  if needR <= 0 and needT <= 0 then break end
  local age = tonumber(ARGV[i])
  if age < W then
    local s = sec - math.max(age, 0)
    local r = math.min(tonumber(ARGV[i + 1]), math.max(needR, 0))
    local t = math.min(tonumber(ARGV[i + 2]), math.max(needT, 0))
    if r > 0 then
      add(w, 'r', s, r)
      needR = needR - r
    end
    if t > 0 then
      add(w, 't', s, t)
      needT = needT - t
    end
  end
end
save(w)
return 1
`;
