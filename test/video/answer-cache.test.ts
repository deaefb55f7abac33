import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import type { JobRecord } from '../../src/store/job-types.js';
import { AnswerCache } from '../../src/video/answer-cache.js';

/** Only the fields the cache reads; `present` below stands in for the real renderers. */
function row(over: Partial<JobRecord>): JobRecord {
  return { id: 'job-1', state: 'processing', dialect: 'spec', phase: null, progress: null, ...over } as JobRecord;
}

function counting(): { cache: AnswerCache; calls: () => number; now: { t: number } } {
  let calls = 0;
  const now = { t: 0 };
  const cache = new AnswerCache((job): JsonObject => {
    calls++;
    return { id: job.id, status: job.state, progress: job.progress, at: now.t };
  });
  return { cache, calls: () => calls, now };
}

describe('poll answer cache', () => {
  it('renders a processing row once and answers exactly its JSON text', () => {
    const { cache, calls } = counting();
    const job = row({ progress: 40 });
    const first = cache.json(job);
    expect(first).toBe(JSON.stringify({ id: 'job-1', status: 'processing', progress: 40, at: 0 }));
    expect(cache.json(job)).toBe(first);
    expect(calls()).toBe(1);
  });

  it('renders again for a new row object, so a state change shows at once', () => {
    const { cache } = counting();
    const before = row({ progress: 40 });
    expect(JSON.parse(cache.json(before)).status).toBe('processing');
    const after = row({ state: 'failed', progress: 40 });
    expect(JSON.parse(cache.json(after)).status).toBe('failed');
    // The old row's answer stays its own.
    expect(JSON.parse(cache.json(before)).status).toBe('processing');
  });

  it('renders clock-dependent answers every time', () => {
    const { cache, calls, now } = counting();
    // A completed job in the spec's dialect: its output_url is signed to expire from now.
    const completed = row({ state: 'completed' });
    cache.json(completed);
    now.t = 1;
    expect(JSON.parse(cache.json(completed)).at).toBe(1);
    // OpenAI's dialect, running without a vendor figure: progress is read off the clock.
    const running = row({ dialect: 'openai', phase: 'running', progress: null });
    cache.json(running);
    now.t = 2;
    expect(JSON.parse(cache.json(running)).at).toBe(2);
    expect(calls()).toBe(4);
  });

  it('keeps OpenAI-dialect answers that depend on the row alone', () => {
    const { cache, calls } = counting();
    for (const job of [row({ dialect: 'openai', phase: 'queued' }), row({ dialect: 'openai', phase: 'running', progress: 30 }), row({ dialect: 'openai', state: 'completed' })]) {
      cache.json(job);
      cache.json(job);
    }
    expect(calls()).toBe(3);
  });
});
