/** Time source in one place so tests can move it. Unix milliseconds. */
export interface Clock {
  now(): number;
}
export const systemClock: Clock = { now: () => Date.now() };
