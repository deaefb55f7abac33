/**
 * One scope's sliding minute, as a ring of per-second buckets. A unit recorded in second `s`
 * counts until the start of second `s + 60`; the window total is kept as a running sum so a check
 * is O(1), and moving the clock forward clears only the buckets that fell out (at most 60).
 *
 * Precision: a unit recorded at 10.7 s leaves the window at 70.0 s, up to one second before a
 * continuous window would release it. The error is always in the client's favour and well below
 * the whole-second resolution of Retry-After.
 */
export const WINDOW_SECONDS = 60;
const WINDOW_MS = WINDOW_SECONDS * 1000;

export type Dimension = 'requests' | 'tokens';

export class SlidingWindow {
  readonly requests = new Float64Array(WINDOW_SECONDS);
  readonly tokens = new Float64Array(WINDOW_SECONDS);
  usedRequests = 0;
  usedTokens = 0;
  /** Absolute second of the newest bucket (the one new units go into). */
  head: number;

  constructor(nowSecond: number) {
    this.head = nowSecond;
  }

  /** Moves the window to `second`, dropping what left it. A clock that went back keeps the head. */
  advance(second: number): void {
    const gap = second - this.head;
    if (gap <= 0) return;
    if (gap >= WINDOW_SECONDS) {
      this.requests.fill(0);
      this.tokens.fill(0);
      this.usedRequests = 0;
      this.usedTokens = 0;
    } else {
      for (let s = this.head + 1; s <= second; s++) {
        const i = slot(s);
        this.usedRequests -= this.requests[i]!;
        this.usedTokens -= this.tokens[i]!;
        this.requests[i] = 0;
        this.tokens[i] = 0;
      }
    }
    this.head = second;
  }

  consume(tokens: number): void {
    const i = slot(this.head);
    this.requests[i]! += 1;
    this.tokens[i]! += tokens;
    this.usedRequests += 1;
    this.usedTokens += tokens;
  }

  /** Records requests counted elsewhere (a mirror of the shared window) in the newest bucket. */
  addRequests(n: number): void {
    this.requests[slot(this.head)]! += n;
    this.usedRequests += n;
  }

  /**
   * Adds tokens to the newest bucket, or takes them back, never leaving a bucket below zero: from
   * second `from`'s bucket only (the admission being corrected; nothing once it left the window),
   * or without it from the newest buckets first.
   */
  adjust(delta: number, from?: number): void {
    if (delta > 0) {
      this.tokens[slot(this.head)]! += delta;
      this.usedTokens += delta;
      return;
    }
    const top = from === undefined ? this.head : Math.min(from, this.head);
    let left = -delta;
    for (let s = top; s > this.head - WINDOW_SECONDS && left > 0; s--) {
      const i = slot(s);
      const take = Math.min(this.tokens[i]!, left);
      this.tokens[i]! -= take;
      this.usedTokens -= take;
      left -= take;
      if (from !== undefined) break;
    }
  }

  /**
   * Takes back one request and its tokens (an admission that did no work), never below zero: from
   * second `from`'s buckets only (the admission's; nothing once it left the window), or without it
   * from the newest buckets first.
   */
  release(tokens: number, from?: number): void {
    const top = from === undefined ? this.head : Math.min(from, this.head);
    for (let s = top; s > this.head - WINDOW_SECONDS; s--) {
      const i = slot(s);
      if (this.requests[i]! > 0) {
        this.requests[i]! -= 1;
        this.usedRequests -= 1;
        break;
      }
      if (from !== undefined) break;
    }
    if (tokens > 0) this.adjust(-tokens, from);
  }

  /** Milliseconds from `nowMs` until at least `amount` units of `dim` have left the window. */
  waitFor(dim: Dimension, amount: number, nowMs: number): number {
    const arr = dim === 'requests' ? this.requests : this.tokens;
    let freed = 0;
    for (let s = this.head - WINDOW_SECONDS + 1; s <= this.head; s++) {
      freed += arr[slot(s)]!;
      if (freed >= amount) return Math.max(0, (s + WINDOW_SECONDS) * 1000 - nowMs);
    }
    return WINDOW_MS;
  }

  /** Milliseconds until everything of `dim` now in the window has left it (0 when empty). */
  resetMs(dim: Dimension, nowMs: number): number {
    const arr = dim === 'requests' ? this.requests : this.tokens;
    for (let s = this.head; s > this.head - WINDOW_SECONDS; s--) {
      if (arr[slot(s)]! > 0) return Math.max(0, (s + WINDOW_SECONDS) * 1000 - nowMs);
    }
    return 0;
  }

  /** The seconds holding something, oldest first, as [age in seconds behind the newest, requests, tokens]. */
  buckets(): [number, number, number][] {
    const out: [number, number, number][] = [];
    for (let s = this.head - WINDOW_SECONDS + 1; s <= this.head; s++) {
      const i = slot(s);
      const r = this.requests[i]!;
      const t = this.tokens[i]!;
      if (r > 0 || t > 0) out.push([this.head - s, r, t]);
    }
    return out;
  }

  /** True when nothing recorded can still be in the window at `second`. */
  idleAt(second: number): boolean {
    return second - this.head >= WINDOW_SECONDS;
  }
}

function slot(second: number): number {
  const i = second % WINDOW_SECONDS;
  return i < 0 ? i + WINDOW_SECONDS : i;
}
