import { randomBytes } from 'node:crypto';
import type { JsonObject } from '../core/json.js';
import type { VideoVendor } from './types.js';

/** The path a vendor calls back on: outside /v1 (no API key), authorised by the token alone. */
export const CALLBACK_PATH = '/callbacks/video/';

/** Shape of a token: 24 random bytes in base64url. Anything else is refused before the store is asked. */
export const CALLBACK_TOKEN = /^[A-Za-z0-9_-]{32}$/;

/** 192 random bits, URL-safe: unguessable, so the path alone authorises a callback. */
export function newCallbackToken(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * The natives sent upstream: when the vendor can call back and the client did not set that
 * parameter itself, the gateway's own per-job URL is added under the vendor's native name (the
 * adapter translates it like any native, e.g. fal's becomes the `fal_webhook` query parameter). A
 * client's own value always wins and reaches the vendor unchanged; the job is then polled.
 */
export function withGatewayCallback(vendor: VideoVendor, native: JsonObject, publicUrl: string, token: string): JsonObject | undefined {
  const param = vendor.callbackParam;
  if (!param || native[param] !== undefined) return undefined;
  return { ...native, [param]: `${publicUrl}${CALLBACK_PATH}${token}` };
}

/**
 * At most one callback-driven refresh per job per window. A callback inside the window is not
 * dropped (it may be the vendor's real one after a forged one): it arms a single trailing refresh
 * at the window's end, so a flood costs one upstream poll per window and the job still settles.
 */
export class CallbackThrottle {
  private readonly windows = new Map<string, { trailing: boolean; timer?: NodeJS.Timeout }>();
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly windowMs: number,
    /** Jobs tracked at once; beyond it a callback is answered but only the regular poll serves it. */
    private readonly maxJobs = 10_000,
  ) {}

  /** Runs `refresh` now, or once at the end of the job's current window. */
  run(jobId: string, refresh: () => Promise<void>): void {
    if (this.stopped) return;
    const open = this.windows.get(jobId);
    if (open) {
      open.trailing = true;
      return;
    }
    if (this.windows.size >= this.maxJobs) return;
    const state: { trailing: boolean; timer?: NodeJS.Timeout } = { trailing: false };
    this.windows.set(jobId, state);
    const p: Promise<void> = refresh()
      .catch(() => undefined)
      .finally(() => this.running.delete(p));
    this.running.add(p);
    state.timer = setTimeout(() => {
      this.windows.delete(jobId);
      if (state.trailing) this.run(jobId, refresh);
    }, this.windowMs);
    state.timer.unref();
  }

  /**
   * At shutdown: no new refreshes, armed trailing ones dropped (polling settles those jobs), and
   * the ones running awaited, so none touches the store after it is closed.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.windows.values()) clearTimeout(w.timer);
    this.windows.clear();
    await Promise.allSettled([...this.running]);
  }
}
