import type { RequestHold } from './answer-budget.js';

/**
 * What an upstream call needs of the client request it serves: whether that request was aborted
 * (client gone, deadline passed) and a way to hear of it, plus where the answer's memory is held.
 *
 * An AbortSignal has this shape (its hold is found through `attachHold`). So does the request's own
 * `RequestLife` (http/lifecycle.ts, `req.callSignal`), which answers it from plain fields: an
 * AbortController is an EventTarget with its own internal state, and making one per request plus
 * adding and removing the call's listener cost ~4 us of CPU (measured alone), ~2.5% of an
 * embeddings request in a profile. Code that needs a real AbortSignal (`AbortSignal.any`, undici's
 * `request`) converts with `toAbortSignal`.
 */
export interface CallSignal {
  readonly aborted: boolean;
  /** What the abort carried; undefined when nothing was given (the call then fails as an AbortError). */
  readonly reason: unknown;
  /** `listener` runs once, when the request is aborted (never when it already was: check `aborted` first). */
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
  /** The request's answer-memory hold, when the signal carries one itself (RequestLife). */
  readonly answerHold?: RequestHold;
}

/**
 * A real AbortSignal that aborts with `s`: `s` itself when it is one, else a new one linked to it
 * (for the fan-out's `AbortSignal.any` and for callers that hand the signal to undici). The caller
 * links the hold (`inheritHold`) where the answer's bytes should go to it.
 */
export function toAbortSignal(s: CallSignal): AbortSignal {
  if (s instanceof AbortSignal) return s;
  const c = new AbortController();
  if (s.aborted) c.abort(s.reason);
  else s.addEventListener('abort', () => c.abort(s.reason), { once: true });
  return c.signal;
}
