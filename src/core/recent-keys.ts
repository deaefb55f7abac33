/**
 * Which keys were seen a moment ago, remembered by hash in typed arrays so that remembering a key
 * allocates nothing. Caches use it to keep an entry only for a key asked for again soon: an entry
 * kept for a key asked for once costs more than it saves, because under requests for many keys each
 * one outlives two young collections and is copied into the old generation (bench/README.md, "A
 * poll that misses every cache").
 *
 * A slot holds the last key hashed to it: a collision either reports a key as seen that was not (a
 * cache keeps one entry it need not) or forgets one that was (one more miss). Neither is an error.
 */
export class RecentKeys {
  private readonly hashes: Int32Array;
  private readonly times: Float64Array;
  private readonly mask: number;

  /** `slots` is rounded up to a power of two; each costs 12 bytes. */
  constructor(
    private readonly windowMs: number,
    slots = 4_096,
  ) {
    const size = 2 ** Math.ceil(Math.log2(Math.max(2, slots)));
    this.hashes = new Int32Array(size);
    this.times = new Float64Array(size).fill(Number.NEGATIVE_INFINITY);
    this.mask = size - 1;
  }

  /** True when `key` was noted less than the window ago; notes it now either way. */
  seenAgain(key: string, now: number): boolean {
    const h = hashOf(key);
    const slot = h & this.mask;
    const again = this.hashes[slot] === h && now - this.times[slot]! < this.windowMs;
    this.hashes[slot] = h;
    this.times[slot] = now;
    return again;
  }
}

/** FNV-1a over the key's UTF-16 code units, as a 32-bit integer. */
function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h | 0;
}
