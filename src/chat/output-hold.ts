import type { Micros } from '../core/money.js';
import type { LimitScope } from '../limits/types.js';
import type { OutputAllowance } from './tokens.js';

/**
 * The output tokens a chat request counts against TPM at admission. A cap the client set counts in
 * full (a cap no minute can hold is the client's to lower: 400 request_too_large). The allowance
 * the gateway holds for a request without one counts up to half the tightest TPM quota, less the
 * prompt. Counted in full, it would have every uncapped request under a quota below it refused as
 * too large for a cap it never asked for. Counted as the whole rest of the minute, one finished
 * request's few real tokens would lock the next uncapped request out until they age out. Half keeps
 * two such requests in flight at most, and the real usage corrects the window either way.
 */
export function admittedOutputTokens(output: OutputAllowance, promptTokens: number, scopes: readonly LimitScope[]): number {
  if (!output.defaulted) return output.tokens;
  let room = Number.POSITIVE_INFINITY;
  for (const s of scopes) {
    const tpm = s.quota.tpm ?? 0;
    if (tpm > 0) room = Math.min(room, Math.floor(tpm / 2) - promptTokens);
  }
  return Math.max(0, Math.min(output.tokens, room));
}

/** What a 402 says when the hold that did not fit was set by the gateway, not by the client. */
export interface HoldRefusals {
  balance?: string;
  keyBudget?: string;
}

/**
 * A client that set no max_tokens is told why a request that looks small was refused, and how to
 * hold less; a client that set its own cap gets the usual messages.
 */
export function holdRefusals(output: OutputAllowance, hold: Micros): HoldRefusals {
  if (!output.defaulted || output.tokens === 0) return {};
  const why = `holds ${hold / 1e6} while it runs (its prompt and ${output.tokens} output tokens, as it sets no max_tokens)`;
  const fix = 'Set max_tokens (or max_completion_tokens) to hold less.';
  return {
    balance: `This request ${why}, more than the balance can cover. ${fix}`,
    keyBudget: `This request ${why}, more than the API key's budget has left. ${fix}`,
  };
}
