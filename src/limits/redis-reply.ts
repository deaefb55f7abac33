import { refusedDecision, TightestScope, type LimitDecision } from './decision.js';
import type { LimitFamily, LimitScope } from './types.js';
import type { Dimension } from './window.js';

/** Per scope, what the shared window holds after the admission (requests, tokens). */
export function usedPerScope(reply: number[], index: number): [number, number] {
  const base = 2 + 6 * index;
  return [Number(reply[base]), Number(reply[base + 1])];
}

/** Turns the admission script's flat reply into a decision with OpenAI-style headers. */
export function decide(family: LimitFamily, scopes: readonly LimitScope[], tokens: number, reply: number[]): LimitDecision {
  const allowed = Number(reply[0]) === 1;
  const tight = new TightestScope();
  let worstWait = -1;
  let worstScope: LimitScope | undefined;
  let worstDim: Dimension = 'requests';
  let worstUsed = 0;
  for (let i = 0; i < scopes.length; i++) {
    const s = scopes[i]!;
    const base = 2 + 6 * i;
    const usedR = Number(reply[base]);
    const usedT = Number(reply[base + 1]);
    const resetR = Number(reply[base + 2]);
    const resetT = Number(reply[base + 3]);
    const waitR = Number(reply[base + 4]);
    const waitT = Number(reply[base + 5]);
    const rpm = s.quota.rpm ?? 0;
    const tpm = s.quota.tpm ?? 0;
    if (rpm > 0) tight.offer('requests', rpm, usedR, resetR);
    if (tpm > 0) tight.offer('tokens', tpm, usedT, resetT);
    if (allowed) continue;
    if (waitR >= 0 && waitR > worstWait) {
      worstWait = waitR;
      worstScope = s;
      worstDim = 'requests';
      worstUsed = usedR;
    }
    if (waitT >= 0 && waitT > worstWait) {
      worstWait = waitT;
      worstScope = s;
      worstDim = 'tokens';
      worstUsed = usedT;
    }
  }
  const headers = tight.headers();
  // reply[1] is the script's clock (ms): the second this admission was counted in.
  if (allowed) return { allowed: true, retryAfterSeconds: 0, headers, second: Math.floor(Number(reply[1]) / 1000) };
  return refusedDecision(family, worstScope ?? scopes[0]!, worstDim, worstUsed, worstDim === 'requests' ? 1 : tokens, worstWait, headers);
}

/** The x-ratelimit-* headers from the give-back script's reply ({now, then per scope: usedReq, usedTok, resetReqMs, resetTokMs}). */
export function releasedHeaders(scopes: readonly LimitScope[], reply: number[]): Record<string, string> | undefined {
  if (!Array.isArray(reply) || reply.length !== 1 + 4 * scopes.length) return undefined;
  const tight = new TightestScope();
  for (let i = 0; i < scopes.length; i++) {
    const s = scopes[i]!;
    const base = 1 + 4 * i;
    if ((s.quota.rpm ?? 0) > 0) tight.offer('requests', s.quota.rpm!, Number(reply[base]), Number(reply[base + 2]));
    if ((s.quota.tpm ?? 0) > 0) tight.offer('tokens', s.quota.tpm!, Number(reply[base + 1]), Number(reply[base + 3]));
  }
  return tight.headers();
}
