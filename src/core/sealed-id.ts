import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { RecentKeys } from './recent-keys.js';

/**
 * Public video ids: AES-256-GCM sealed, base64url (no padding) tokens.
 * Layout: version(1) | keyId(1) | iv(12) | ciphertext | tag(16). The version and key id are
 * authenticated as additional data, so neither can be swapped. Keys are derived per key id from
 * the configured secrets, which lets an operator rotate: new ids use the newest key, old ids
 * still open with the key they were sealed with.
 */
export interface VideoIdClaims {
  /** Internal job row id. */
  j: string;
  /** Account id. */
  a: string;
  /** Upstream name. */
  u: string;
  /** Vendor id. */
  v: string;
  /** Model name. */
  m: string;
  /** Requested duration in seconds (the estimate the job was held for). */
  d: number;
  /** Upstream task id. */
  t: string;
  /** The surface that created the job, when not the spec's: 'o' = POST /v1/videos. */
  s?: 'o';
  /**
   * What the id names when not a video job: 'c' = a character (POST /v1/videos/characters), whose
   * vendor id is `t` and which has no job (`j` is empty). Each kind opens only where it belongs.
   */
  k?: 'c';
}

const VERSION = 1;
const IV_LEN = 12;
const TAG_LEN = 16;
const HEADER_LEN = 2;

/** Opened ids are remembered (the claims of a sealed id never change); bounded. */
const OPENED_CACHE_MAX = 20_000;
/**
 * Only ids opened again within this are remembered: a job polled now and then (or one of many polled
 * at random) would have its claims kept for nothing, and each kept entry is copied out of the young
 * generation (core/recent-keys.ts). A client polling every few seconds gets its claims remembered.
 */
const OPENED_AGAIN_WITHIN_MS = 10_000;

export class IdSealer {
  private readonly keys = new Map<number, Buffer>();
  /** Per key id of an id's header: the keys every configured secret derives for it (see `keysFor`). */
  private readonly derived = new Map<number, readonly Buffer[]>();
  private readonly secrets: readonly string[];
  private readonly opened = new Map<string, VideoIdClaims>();
  private readonly recent = new RecentKeys(OPENED_AGAIN_WITHIN_MS);
  private readonly currentKeyId: number;

  /** `secrets[i]` gets key id i; the last one seals new ids. `now` is only for the remembering policy. */
  constructor(
    secrets: readonly string[],
    private readonly now: () => number = () => performance.now(),
  ) {
    if (secrets.length === 0 || secrets.length > 255) throw new Error('IdSealer needs 1 to 255 secrets');
    secrets.forEach((s, i) => {
      if (s.length < 16) throw new Error('each id secret must be at least 16 characters');
      this.keys.set(i, deriveKey(s, i));
    });
    this.secrets = [...secrets];
    this.currentKeyId = secrets.length - 1;
  }

  /**
   * The keys an id whose header says `keyId` may have been sealed with: the secret now at that
   * position first, then every other configured secret as derived for that position. The key id is
   * the secret's position when the id was sealed, and a rotation finished by dropping the old secret
   * (`[old, new]`, then `[new]`) moves the new one from position 1 to 0: looked up by position alone,
   * every id sealed since the rotation began would stop opening. GCM's tag tells the right key; the
   * header byte is authenticated, so nothing opens that a configured secret did not seal.
   */
  private keysFor(keyId: number): readonly Buffer[] {
    let keys = this.derived.get(keyId);
    if (!keys) {
      const own = this.keys.get(keyId);
      keys = [...(own ? [own] : []), ...this.secrets.filter((_, i) => i !== keyId).map((s) => deriveKey(s, keyId))];
      // At most 256 header values, each holding a 32-byte key per secret.
      this.derived.set(keyId, keys);
    }
    return keys;
  }

  seal(claims: VideoIdClaims): string {
    const key = this.keys.get(this.currentKeyId)!;
    const header = Buffer.from([VERSION, this.currentKeyId]);
    const iv = randomBytes(IV_LEN);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(header);
    const body = Buffer.concat([cipher.update(JSON.stringify(claims), 'utf8'), cipher.final()]);
    return Buffer.concat([header, iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** Returns the claims, or undefined for anything malformed, tampered or sealed with an unknown key. */
  open(token: string): VideoIdClaims | undefined {
    const hit = this.opened.get(token);
    if (hit) return hit;
    const decrypted = this.decrypt(token);
    if (!decrypted) return undefined;
    // Frozen whether remembered or not, so no caller can come to depend on changing them.
    const claims = Object.freeze(decrypted);
    if (this.recent.seenAgain(token, this.now())) {
      if (this.opened.size >= OPENED_CACHE_MAX) this.opened.clear();
      this.opened.set(token, claims);
    }
    return claims;
  }

  private decrypt(token: string): VideoIdClaims | undefined {
    if (typeof token !== 'string' || token.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < HEADER_LEN + IV_LEN + TAG_LEN + 2) return undefined;
    // Only the one spelling `seal` makes: base64url decoding ignores the unused low bits of the last
    // character, so up to 16 strings would open to the same claims and each be an id of its own.
    if (raw.toString('base64url') !== token) return undefined;
    if (raw[0] !== VERSION) return undefined;
    for (const key of this.keysFor(raw[1]!)) {
      const json = openWith(key, raw);
      if (json === undefined) continue;
      try {
        const c = JSON.parse(json) as VideoIdClaims;
        if (typeof c.j !== 'string' || typeof c.a !== 'string' || typeof c.t !== 'string') return undefined;
        return c;
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}

function deriveKey(secret: string, keyId: number): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'video-id-salt', `video-id-key-${keyId}`, 32));
}

/** The plaintext of a sealed id under `key`, or undefined when the tag does not verify. */
function openWith(key: Buffer, raw: Buffer): string | undefined {
  try {
    const iv = raw.subarray(HEADER_LEN, HEADER_LEN + IV_LEN);
    const tag = raw.subarray(raw.length - TAG_LEN);
    const body = raw.subarray(HEADER_LEN + IV_LEN, raw.length - TAG_LEN);
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAAD(raw.subarray(0, HEADER_LEN));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
