import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed, expiring content links: output_url works in a <video> tag or a plain download without
 * any header, carries no vendor secret, and outlives the vendor's short-lived URLs (the gateway
 * fetches from the vendor, or from its own copy, at download time).
 */
export class LinkSigner {
  constructor(
    private readonly secret: string,
    private readonly ttlMs: number,
  ) {}

  sign(videoId: string, now: number): { expires: number; signature: string } {
    const expires = Math.floor((now + this.ttlMs) / 1000);
    return { expires, signature: this.mac(videoId, expires) };
  }

  verify(videoId: string, expires: unknown, signature: unknown, now: number): boolean {
    if (typeof expires !== 'string' || typeof signature !== 'string' || !/^\d{1,12}$/.test(expires)) return false;
    if (Number(expires) * 1000 < now) return false;
    const want = Buffer.from(this.mac(videoId, Number(expires)));
    const got = Buffer.from(signature);
    return want.length === got.length && timingSafeEqual(want, got);
  }

  private mac(videoId: string, expires: number): string {
    return createHmac('sha256', this.secret).update(`content\n${videoId}\n${expires}`).digest('base64url');
  }
}
