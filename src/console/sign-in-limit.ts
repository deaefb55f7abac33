import { isIPv4, isIPv6 } from 'node:net';

/** One attempt counted by SignInLimiter.begin(). */
export interface SignInAttempt {
  /** 0 when the attempt may go ahead (it is counted); else the whole seconds until the address may try again (not counted). */
  retryAfter: number;
  /** Gives the attempt's place back: call it once the attempt succeeded. */
  succeeded(): void;
}

/**
 * Whose attempts an address counts with. An IPv4 address is its own; an IPv6 address counts with its
 * /64, the block one subscriber or one server is given: a host picks any of its 2^64 addresses at
 * will, so counted one by one they would let it guess without limit. An IPv4 address written as IPv6
 * (`::ffff:192.0.2.1`, as a dual-stack socket reports IPv4 clients) is that IPv4 address, not a share
 * of the /64 every IPv4 client would then have in common.
 */
export function addressBucket(address: string): string {
  if (isIPv4(address) || !isIPv6(address)) return address;
  const mapped = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(?:(\d{1,3}(?:\.\d{1,3}){3})|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (mapped) {
    if (mapped[1]) return mapped[1];
    const hi = parseInt(mapped[2]!, 16);
    const lo = parseInt(mapped[3]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight hextets of an IPv6 address (a zone and an embedded IPv4 tail are read too), lower-case, unpadded. */
function expandIPv6(address: string): string[] {
  let text = address.split('%')[0]!.toLowerCase();
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) text = `${text.slice(0, v4.index)}${((+v4[1]! << 8) | +v4[2]!).toString(16)}:${((+v4[3]! << 8) | +v4[4]!).toString(16)}`;
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((h) => parseInt(h, 16).toString(16));
}

/**
 * Failed sign-ins per client address (an IPv6 one by its /64, see addressBucket) in a fixed window: enough for a person who mistypes, far too
 * few to guess a token. Once an address reaches the limit it may not try at all (not even the right
 * token) until the window ends: otherwise the answer to the right token would tell a guesser it was
 * right. Successful sign-ins do not count: an operator who signs in often is no attacker, and live
 * sessions are bounded separately. Bounded memory: past `maxAddresses` the oldest windows are forgotten.
 */
export class SignInLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly now: () => number,
    private readonly maxFailures = 10,
    private readonly windowMs = 60_000,
    private readonly maxAddresses = 50_000,
    /** Whose attempts an address counts with (addressBucket; IPv6 takes some parsing, so once per attempt). */
    private readonly bucketOf: (client: string) => string = addressBucket,
  ) {}

  /**
   * Counts an attempt before it is judged, to be given back if it succeeds. Checking first and counting
   * a failure only after an awaited key lookup let every guess sent at once through (300 concurrent
   * wrong keys were all looked up): counted up front, the attempts in flight take the places themselves.
   */
  begin(client: string): SignInAttempt {
    const address = this.bucketOf(client);
    const wait = this.waitOf(address);
    if (wait > 0) return { retryAfter: wait, succeeded: () => undefined };
    const w = this.count(address);
    let given = false;
    return {
      retryAfter: 0,
      succeeded: () => {
        // Only into the window it was taken from, once: a window that ended meanwhile has nothing of it.
        if (given || this.windows.get(address) !== w || w.count === 0) return;
        given = true;
        w.count -= 1;
      },
    };
  }

  /** 0 when the address (a bucket, bucketOf) may try; else the whole seconds until it may. */
  private waitOf(address: string): number {
    const w = this.windows.get(address);
    const at = this.now();
    if (!w || at - w.start >= this.windowMs || w.count < this.maxFailures) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - at) / 1000));
  }

  /** `address` is a bucket (bucketOf) already. */
  private count(address: string): { start: number; count: number } {
    const at = this.now();
    let w = this.windows.get(address);
    if (!w || at - w.start >= this.windowMs) {
      this.windows.delete(address);
      if (this.windows.size >= this.maxAddresses) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.windows.delete(oldest);
      }
      w = { start: at, count: 0 };
      this.windows.set(address, w);
    }
    w.count += 1;
    return w;
  }
}
