import { randomFillSync } from 'node:crypto';

/**
 * UUIDs made on every request (the request id, an embeddings charge's ledger ref) without the
 * garbage of `crypto.randomUUID`: Node 20 builds its text by adding 20 short strings, about 0.9 KB
 * of V8 heap per id. Here the 36 characters are written into a reused buffer and read out as one
 * string. The random bytes come, as randomUUID's do, from the system's CSPRNG, 128 ids at a time.
 */
const IDS_PER_FILL = 128;
const pool = Buffer.alloc(16 * IDS_PER_FILL);
let nextId = IDS_PER_FILL;
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Where each byte's two hex digits go in `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
text[8] = text[13] = text[18] = text[23] = 0x2d; // '-'

/** The offset in `pool` of 16 fresh random bytes. */
function freshBytes(): number {
  if (nextId === IDS_PER_FILL) {
    randomFillSync(pool);
    nextId = 0;
  }
  return 16 * nextId++;
}

/** Stamps RFC 9562's version nibble and variant bits, and renders the 16 bytes at `o` as lowercase text. */
function render(o: number, version: number): string {
  pool[o + 6] = (pool[o + 6]! & 0x0f) | (version << 4);
  pool[o + 8] = (pool[o + 8]! & 0x3f) | 0x80;
  for (let i = 0; i < 16; i++) {
    const b = pool[o + i]!;
    text[AT[i]!] = HEX[b >> 4]!;
    text[AT[i]! + 1] = HEX[b & 0x0f]!;
  }
  return text.toString('latin1', 0, 36);
}

/** A random (version 4) UUID, as `crypto.randomUUID()` makes. */
export function randomUuid(): string {
  return render(freshBytes(), 4);
}

/**
 * A version 7 UUID: the first 48 bits are `t` (whole unix milliseconds, 0 to 2^48 - 1), the other
 * 74 free bits random.
 */
export function uuidV7(t: number): string {
  const o = freshBytes();
  // 48 bits do not fit JavaScript's 32-bit integer operators: the high 16 and the low 32 apart.
  const high = Math.floor(t / 2 ** 32);
  pool.writeUInt16BE(high, o);
  pool.writeUInt32BE(t - high * 2 ** 32, o + 2);
  return render(o, 7);
}
