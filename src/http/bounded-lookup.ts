import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';

/**
 * Name lookups of hosts a client or a vendor chose (webhook targets, media URLs, download links a
 * vendor gave), bounded. `dns.lookup` runs getaddrinfo on libuv's thread pool (4 threads unless
 * UV_THREADPOOL_SIZE says otherwise), which it shares with file I/O and with the lookups of every
 * upstream connection. A name whose DNS servers never answer holds a thread for the system
 * resolver's whole timeout (often tens of seconds), and nothing can take the thread back: a few
 * requests naming such hosts would stall every lookup in the process, vendors' included. So at most
 * half of the pool runs these lookups at once; the others wait for a slot, first come first served,
 * until their deadline. A slot is held until its lookup really ends, not until its caller gives up.
 */
const POOL_THREADS = Math.max(1, Math.floor(Number(process.env.UV_THREADPOOL_SIZE)) || 4);
export const MAX_LOOKUPS_IN_FLIGHT = Math.max(1, Math.floor(POOL_THREADS / 2));
/** Callers waiting for a slot, at most; past that a lookup is refused at once (memory stays bounded). */
const MAX_WAITING = 1_000;

/** Code of a lookup that found no free slot before its deadline (or no room to wait). */
export const LOOKUP_BUSY = 'ELOOKUPBUSY';
/** Code of a lookup that started but had no answer by its deadline. */
export const LOOKUP_TIMEOUT = 'ETIMEOUT';

type Done = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void;

let running = 0;
const waiting: Array<() => void> = [];

function fail(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

/** Hands a finished lookup's slot to the next caller waiting, or frees it. */
function release(): void {
  const next = waiting.shift();
  if (next) next();
  else running--;
}

/**
 * Every address of `hostname` (as `dns.lookup` with `all: true`; `options` may narrow the family),
 * or an error with code LOOKUP_BUSY or LOOKUP_TIMEOUT when no answer came within `deadlineMs`.
 * `done` is called once.
 */
export function boundedLookup(hostname: string, deadlineMs: number, done: Done, options: Pick<LookupOptions, 'family' | 'hints'> = {}): void {
  let settled = false;
  const finish = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    done(err, addresses);
  };
  const start = () => {
    dnsLookup(hostname, { family: options.family, hints: options.hints, all: true }, (err, addresses) => {
      release();
      finish(err, err ? [] : addresses);
    });
  };
  const timer = setTimeout(() => {
    const queued = waiting.indexOf(start);
    if (queued >= 0) {
      waiting.splice(queued, 1);
      finish(fail(LOOKUP_BUSY, `too many address lookups in flight to look up ${hostname}`), []);
    } else finish(fail(LOOKUP_TIMEOUT, `no address for ${hostname} within ${deadlineMs} ms`), []);
  }, Math.max(1, deadlineMs));
  timer.unref?.();
  if (running < MAX_LOOKUPS_IN_FLIGHT) {
    running++;
    start();
  } else if (waiting.length >= MAX_WAITING) finish(fail(LOOKUP_BUSY, `too many address lookups in flight to look up ${hostname}`), []);
  else waiting.push(start);
}

/** boundedLookup as a promise. */
export function lookupAll(hostname: string, deadlineMs: number): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => boundedLookup(hostname, deadlineMs, (err, addresses) => (err ? reject(err) : resolve(addresses))));
}
