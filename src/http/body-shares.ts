import type { FastifyRequest } from 'fastify';
import { addressBucket } from '../console/sign-in-limit.js';

/** No share is smaller than the largest body an unidentified route takes (a vendor callback, 64 KiB). */
const MIN_SHARE = 64 * 1024;

/**
 * Bytes held under two caps: `total` for all clients together and `perClient` for each. A take
 * that would pass either takes nothing.
 */
export class ByteShares {
  private used = 0;
  private readonly byClient = new Map<string, number>();

  constructor(
    readonly total: number,
    readonly perClient: number,
    /** Whether a client holding nothing is dropped from the map (else kept, for a bounded set of clients). */
    private readonly forgetEmpty: boolean,
  ) {}

  get inUse(): number {
    return this.used;
  }

  tryTake(client: string, bytes: number): boolean {
    const mine = this.byClient.get(client) ?? 0;
    if (mine + bytes > this.perClient || this.used + bytes > this.total) return false;
    this.used += bytes;
    this.byClient.set(client, mine + bytes);
    return true;
  }

  give(client: string, bytes: number): void {
    if (bytes <= 0) return;
    const mine = this.byClient.get(client);
    if (mine === undefined) return;
    const left = Math.max(0, mine - bytes);
    if (left > 0 || !this.forgetEmpty) this.byClient.set(client, left);
    else this.byClient.delete(client);
    this.used = Math.max(0, this.used - bytes);
  }
}

/**
 * The part of the request-body budget that requests whose caller is not known may hold: the console
 * sign-in, vendor callbacks, paths no route matches. Anyone who can reach the port can send those,
 * so without a share of their own a few of them, sent slowly, held the budget every keyed request
 * needs. Together they hold at most a sixteenth of the budget, and one client address (an IPv6
 * one by its /64, as the sign-in limit counts it) at most a quarter of that, so that one address
 * cannot lock the others out of signing in either. Past either, the request is shed with 503
 * `overloaded` as it would be past the budget itself.
 */
export class AnonymousShares extends ByteShares {
  constructor(budgetLimit: number) {
    const total = Math.min(budgetLimit, Math.max(MIN_SHARE, Math.floor(budgetLimit / 16)));
    // Addresses are forgotten once they hold nothing: anyone can bring new ones.
    super(total, Math.min(total, Math.max(MIN_SHARE, Math.floor(total / 4))), true);
  }
}

/**
 * Whose share a request's body takes: undefined when its caller is known by the time the body is
 * read (every matched /v1 and /admin route checks its key, signed link or admin token in onRequest,
 * which runs before the body is read, and refuses there: auth/request-gate.ts, routes/admin.ts),
 * else the client's address bucket.
 */
export function anonymousClient(req: FastifyRequest): string | undefined {
  const url = req.routeOptions.url;
  if (url !== undefined && (url.startsWith('/v1/') || url.startsWith('/admin/'))) return undefined;
  return addressBucket(req.ip ?? '');
}
