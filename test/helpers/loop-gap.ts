import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Runs `run` and measures the longest the event loop was held meanwhile (a timer's lateness, every
 * 5 ms): what a request to /health would have waited. In ms.
 */
export async function longestLoopHold<T>(run: () => Promise<T>): Promise<{ value: T; maxMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  try {
    const value = await run();
    return { value, maxMs: h.max / 1e6 };
  } finally {
    h.disable();
  }
}
