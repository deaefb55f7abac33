import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { errors } from '../core/errors.js';
import { boundedLookup, LOOKUP_BUSY, lookupAll } from './bounded-lookup.js';
import { isBlockedAddress } from './ssrf.js';

/** How long a target's name may take to resolve when it is registered (or named by a job). */
const CHECK_LOOKUP_MS = 5_000;

/** Whether an error is a guarded agent's refusal of an address (its code, or its cause's, is EBLOCKED). */
export function isRefusedAddress(e: unknown): boolean {
  const err = e as { code?: unknown; cause?: { code?: unknown } } | null;
  return err?.code === 'EBLOCKED' || err?.cause?.code === 'EBLOCKED';
}

/**
 * An undici Agent whose DNS lookup refuses private, loopback and other internal addresses (unless
 * allowed): the address that is checked is the one connected to, so a name that re-resolves to an
 * internal address between a check and the connection still cannot be reached. A host that is an
 * IP literal is checked before connecting. A refused address fails with code EBLOCKED.
 */
export function guardedAgent(opts: { allowPrivateNetworks: boolean; connectTimeoutMs: number }): Agent {
  // undici asks for every address ({all: true}) when it races IPv4 and IPv6; each one is checked,
  // and only checked addresses are handed back to connect to.
  // The names are the client's or a vendor's choice: their lookups are bounded (bounded-lookup.ts).
  const lookup = ((hostname: string, options: LookupAllOptions | LookupOneOptions, callback: (...a: unknown[]) => void) => {
    const done = (err: NodeJS.ErrnoException | null, list: LookupAddress[]) => {
      if (err) return callback(err);
      if (list.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
      if (!opts.allowPrivateNetworks && list.some((a) => isBlockedAddress(a.address)))
        return callback(Object.assign(new Error(`address of ${hostname} is not allowed`), { code: 'EBLOCKED' }));
      if ((options as LookupAllOptions).all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    };
    boundedLookup(hostname, opts.connectTimeoutMs, done, { family: options.family, hints: options.hints });
  }) as unknown as LookupFunction;
  const connect = buildConnector({ lookup, timeout: opts.connectTimeoutMs });
  // Node never calls the lookup for a host that is already an IP (http://127.0.0.1/,
  // http://[::ffff:127.0.0.1]/): such a host is checked here, before any socket is opened.
  const checked: buildConnector.connector = (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    if (!opts.allowPrivateNetworks && isIP(host) !== 0 && isBlockedAddress(host)) {
      process.nextTick(callback, Object.assign(new Error(`address ${host} is not allowed`), { code: 'EBLOCKED' }), null);
      return;
    }
    connect(options, callback);
  };
  return new Agent({ connect: checked });
}

/**
 * Why a target URL must be refused, or undefined when it may be used: not http(s), credentials in it,
 * or (unless allowed) a literal or resolved private address. Used when a URL is registered, so a bad
 * target is a 400 then rather than a silent delivery failure later. A name that does not resolve
 * within CHECK_LOOKUP_MS does not resolve; one that finds no lookup slot in that time is a 503.
 */
export async function unsafeTargetReason(raw: string, allowPrivateNetworks: boolean): Promise<string | undefined> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'is not a valid URL';
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'must be an http(s) URL';
  if (u.username || u.password) return 'must not carry credentials';
  if (raw.length > 2048) return 'is longer than 2048 characters';
  if (allowPrivateNetworks) return undefined;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (/^[\d.]+$|:/.test(host)) return isBlockedAddress(host) ? 'points at a private or local address' : undefined;
  try {
    const addresses = await lookupAll(host, CHECK_LOOKUP_MS);
    if (addresses.some((a) => isBlockedAddress(a.address))) return 'resolves to a private or local address';
  } catch (e) {
    // No slot for the lookup in time: the gateway is busy (with other such names), not the URL wrong.
    if ((e as { code?: unknown }).code === LOOKUP_BUSY) throw errors.overloaded();
    return 'does not resolve';
  }
  return undefined;
}
