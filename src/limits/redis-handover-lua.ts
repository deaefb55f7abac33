import { CLOCK, WINDOW } from './redis-window-lua.js';

/**
 * The hand-over's Lua (redis-handover.ts): what an instance owes the shared windows after an outage.
 * Same clock and window layout as the admission scripts (redis-scripts.ts, redis-window-lua.ts).
 */

/**
 * KEYS[1]: one scope hash; KEYS[2..]: the keys of the turns that touched it and whose calls failed
 * (TURN_LUA): they may have run all the same. ARGV[1]: clock (ms, or -1). ARGV[2]: window seconds.
 * ARGV[3]: how many such turns, then per turn this scope's place in its record (0: the first scope
 * key of its call). Then triples (second, requests, tokens): what one instance admitted on its own
 * while Redis was away, those turns' operations included (decided again on the local windows),
 * added to the shared window so the minute after an outage counts it. Seconds that left the window
 * are skipped; a second ahead of the server's clock counts as now.
 *
 * A turn that ran has what it changed in this window taken back first: the triples hold what the
 * clients were told instead. One that did not is marked so that it changes nothing if it still
 * arrives (its bytes on their way, or in a Redis that resumes). A turn touching several scopes is
 * handled by the record of each, each taking back its own part.
 */
export const RECORD_LUA = `${CLOCK}
local W = tonumber(ARGV[2])
${WINDOW}
local w = open(KEYS[1])
local turns = tonumber(ARGV[3])
for j = 1, turns do
  local rec = redis.call('GET', KEYS[1 + j])
  if not rec then
    redis.call('SET', KEYS[1 + j], 'void', 'EX', 2 * W)
  elseif rec ~= 'void' then
    local f = {}
    for x in string.gmatch(rec, '%S+') do f[#f + 1] = tonumber(x) end
    local at, place = f[1], tonumber(ARGV[3 + j])
    local r, t = f[2 + 2 * place] or 0, f[3 + 2 * place] or 0
    if r > 0 then take_back(w, 'r', r, at) end
    -- Tokens a correction of the turn took back are put back (its local copy is in the triples).
    if t > 0 then take_back(w, 't', t, at) elseif t < 0 and at > sec - W then add(w, 't', math.min(at, sec), -t) end
  end
end
for i = 4 + turns, #ARGV, 3 do
  local s = math.min(tonumber(ARGV[i]), sec)
  local r = tonumber(ARGV[i + 1])
  local t = tonumber(ARGV[i + 2])
  if s > sec - W then
    if r > 0 then add(w, 'r', s, r) end
    if t > 0 then add(w, 't', s, t) end
  end
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
