/** Time source in one place so tests can move it. Unix milliseconds. */
export interface Clock {
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Milliseconds that only move forward, at the scale of Unix time (the process's start plus the time
 * elapsed since): for durations and windows, which a wall clock stepped back or forward (NTP) must
 * not freeze or empty. Not for anything stored or compared with times from elsewhere.
 */
export const elapsedMs = (): number => performance.timeOrigin + performance.now();
