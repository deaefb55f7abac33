import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed, expiring content links: output_url works in a <video> tag or a plain download without
 * any header, carries no vendor secret, and outlives the vendor's short-lived URLs (the gateway
 * fetches from the vendor, or from its own copy, at download time). The same links hand uploads to
 * vendors, which may fetch them long after the create.
 *
 * Signed with the newest configured secret, verified with any of them: a rotation begun by adding a
 * secret (`[old]`, then `[old, new]`, a restart between) must not void the links already handed out,
 * a client's output_url valid for 24 h or the upload a vendor has yet to fetch, as it keeps the ids.
 */
export class LinkSigner {
  private readonly secrets: readonly string[];

  constructor(
    secrets: readonly string[],
    private readonly ttlMs: number,
  ) {
    this.secrets = [...secrets];
    if (this.secrets.length === 0) throw new Error('LinkSigner needs a secret');
  }

  sign(videoId: string, now: number): { expires: number; signature: string } {
    const expires = Math.floor((now + this.ttlMs) / 1000);
    return { expires, signature: this.mac(this.secrets[this.secrets.length - 1]!, videoId, expires) };
  }

  verify(videoId: string, expires: unknown, signature: unknown, now: number): boolean {
    if (typeof expires !== 'string' || typeof signature !== 'string' || !/^\d{1,12}$/.test(expires)) return false;
    if (Number(expires) * 1000 < now) return false;
    const got = Buffer.from(signature);
    // Newest first: links signed since the rotation began are checked with one HMAC.
    for (let i = this.secrets.length - 1; i >= 0; i--) {
      const want = Buffer.from(this.mac(this.secrets[i]!, videoId, Number(expires)));
      if (want.length === got.length && timingSafeEqual(want, got)) return true;
    }
    return false;
  }

  private mac(secret: string, videoId: string, expires: number): string {
    return createHmac('sha256', secret).update(`content\n${videoId}\n${expires}`).digest('base64url');
  }
}
