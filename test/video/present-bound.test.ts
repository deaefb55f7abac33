import { describe, expect, it } from 'vitest';
import { presentOpenAiVideo } from '../../src/video/openai/present.js';
import { presentJob } from '../../src/video/present.js';
import type { JobRecord } from '../../src/store/job-types.js';
import { toJob } from '../../src/store/rows.js';
import { VENDOR_DATA_TRUNCATED } from '../../src/core/vendor-data.js';

/**
 * A job row stored before poll answers were bounded can hold megabytes of vendor_data; it is bounded
 * when the row is read (store/rows.ts), so both job surfaces (the spec's and OpenAI's Videos API)
 * present it within the same bound as new rows, and nothing walks it on each presentation.
 */
/** The job as the store reads it back: its vendor_data column holds `vendorData` as JSON text. */
function job(vendorData: JobRecord['vendorData']): JobRecord {
  return toJob(rowOf(built(vendorData)));
}

/** A stored row of the job: camelCase fields to snake_case columns, objects as JSON text. */
function rowOf(j: JobRecord): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(j)) row[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v !== null && typeof v === 'object' ? JSON.stringify(v) : v;
  return row;
}

function built(vendorData: JobRecord['vendorData']): JobRecord {
  const now = Date.now();
  return {
    id: 'job_1', accountId: 'acct', keyId: 'key', model: 'sora-2', vendor: 'sora', upstream: 'u', taskId: 'task', publicId: 'vid_public',
    state: 'processing', estSeconds: 4, holdMicros: 400_000, pricePerSecondMicros: 100_000, seconds: null, billableSeconds: null, costMicros: null,
    errorCode: null, errorMessage: null, request: { model: 'sora-2', prompt: 'p', seconds: 4 }, taskMeta: {}, vendorData, outputs: [], usage: null,
    progress: 10, createdAt: now, updatedAt: now, completedAt: null, nextPollAt: now, leaseUntil: null, deadlineAt: now + 3_600_000, requestId: null, webhookUrl: null,
  } as unknown as JobRecord;
}

describe('vendor_data of a stored job, presented', () => {
  const legacy = { status: 'in_progress', blob: 'x'.repeat(2_000_000) };
  it('the spec surface keeps it within 64 KiB, marked', () => {
    const out = presentJob(job(legacy), undefined) as { vendor_data: Record<string, unknown> };
    expect(JSON.stringify(out.vendor_data).length).toBeLessThanOrEqual(64 * 1024);
    expect(out.vendor_data.status).toBe('in_progress');
    expect(out.vendor_data[VENDOR_DATA_TRUNCATED]).toMatchObject({ omitted_fields: ['blob'] });
  });
  it("OpenAI's Videos surface does too", () => {
    const out = presentOpenAiVideo(job(legacy), undefined, Date.now()) as { vendor_data: Record<string, unknown> };
    expect(JSON.stringify(out.vendor_data).length).toBeLessThanOrEqual(64 * 1024);
    expect(out.vendor_data[VENDOR_DATA_TRUNCATED]).toMatchObject({ omitted_fields: ['blob'] });
  });
  it('small vendor_data is presented as stored', () => {
    const small = { status: 'in_progress', size: '1280x720' };
    expect((presentOpenAiVideo(job(small), undefined, Date.now()) as { vendor_data: unknown }).vendor_data).toEqual(small);
  });
});

describe("a vendor's progress figure, presented", () => {
  const withProgress = (progress: number): JobRecord => ({ ...job({}), progress });
  it('is a whole percentage in 0-100 on both surfaces, whatever the vendor reported', () => {
    for (const [given, shown] of [[1e308, 100], [-50, 0], [42.6, 43], [100, 100]] as const) {
      expect(presentJob(withProgress(given), undefined).progress).toBe(shown);
      expect(presentOpenAiVideo(withProgress(given), undefined, Date.now()).progress).toBe(shown);
    }
  });
});
