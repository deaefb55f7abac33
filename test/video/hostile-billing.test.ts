import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { settleSeconds } from '../../src/video/duration.js';
import { videoModule as azureSora } from '../../src/video/vendors/azure-sora/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createVideo, pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * A vendor that lies about how long the finished video is, over real HTTP: the job must settle,
 * cost at most what it held (so the balance never goes below zero), and leave a reconciliation
 * trail when the vendor's figure was not billed as it came. Every model is priced 0.1 per second,
 * so a 4-second Sora job holds 0.4.
 */
let soraSim: SimServer;
let azureSim: SimServer;
let gw: TestGateway;

const SORA_POLL = /^\/v1\/videos\/[^/]+$/;
const AZURE_POLL = /\/video\/generations\/jobs\/[^/]+$/;
const MICROS = 1_000_000;

beforeAll(async () => {
  soraSim = await sora.simulator.start({ taskMs: 50 });
  azureSim = await azureSora.simulator.start({ taskMs: 50 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim: soraSim }, { module: azureSora, sim: azureSim }]));
});
afterEach(() => {
  soraSim.clearFaults();
  azureSim.clearFaults();
});
afterAll(async () => {
  await gw?.close();
  await soraSim?.close();
  await azureSim?.close();
});

/** Every poll of the vendor answers `answer` (with HTTP 200) until the faults are cleared. */
function everyPollAnswers(sim: SimServer, match: RegExp, answer: Record<string, unknown>): void {
  sim.inject({ kind: 'status', status: 200, json: answer }, 10_000, match);
}

function soraAnswer(status: 'completed' | 'failed', seconds: unknown): Record<string, unknown> {
  return {
    id: 'video_hostile',
    object: 'video',
    model: 'sora-2',
    status,
    progress: 100,
    seconds,
    size: '720x1280',
    error: status === 'failed' ? { code: 'internal_error', message: 'Video generation failed due to an internal error.' } : null,
  };
}

async function reconcileFor(jobId: string) {
  const r = await call(gw, 'GET', '/admin/reconcile', { headers: { authorization: `Bearer ${gw.adminToken}` } });
  expect(r.status, r.text).toBe(200);
  return (r.json.data as Array<{ jobId: string; reason: string }>).filter((x) => x.jobId === jobId);
}

async function createSora(key: string): Promise<{ id: string; jobId: string }> {
  const r = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: 4 } });
  expect(r.status, r.text).toBe(200);
  expect(r.json.usage).toEqual({ held: 0.4 });
  return { id: r.json.id, jobId: gw.services.video.deps.sealer.open(r.json.id)!.j };
}

describe('a Sora vendor reporting a duration it cannot have made', () => {
  it('bills at most the held seconds when it reports 100000 s, and records the excess', async () => {
    const { key, account } = await gw.newKey(0.4);
    const { id, jobId } = await createSora(key);
    everyPollAnswers(soraSim, SORA_POLL, soraAnswer('completed', '100000'));
    const done = await pollUntilDone(gw, key, id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.usage.cost).toBe(0.4);
    expect(done.seconds).toBe(4);
    expect(await gw.balance(account)).toBe(0);
    const job = (await gw.services.store.getJob(jobId))!;
    expect(job.billableSeconds).toBe(4);
    expect(job.costMicros).toBe(0.4 * MICROS);
    const trail = await reconcileFor(jobId);
    expect(trail).toHaveLength(1);
    expect(trail[0]!.reason).toContain('100000');
  });

  it('bills at most the held seconds for a huge JSON number', async () => {
    const { key, account } = await gw.newKey(0.4);
    const { id } = await createSora(key);
    everyPollAnswers(soraSim, SORA_POLL, soraAnswer('completed', 1e300));
    const done = await pollUntilDone(gw, key, id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.usage.cost).toBe(0.4);
    expect(await gw.balance(account)).toBe(0);
  });

  // Negative and zero used to be billed as they came: a negative cost failed the ledger's check on
  // every poll, and the job stayed processing, holding its money, until its deadline.
  it.each([['-5'], [-5], [0], ['0'], ['NaN'], ['Infinity'], ['1e999'], ['four'], [null], [true]])(
    'settles a job reported as %j seconds as completed, at the held seconds, never negative',
    async (seconds) => {
      const { key, account } = await gw.newKey(0.4);
      const { id, jobId } = await createSora(key);
      everyPollAnswers(soraSim, SORA_POLL, soraAnswer('completed', seconds));
      const done = await pollUntilDone(gw, key, id, 5_000);
      expect(done.status).toBe('completed');
      expect(done.seconds).toBe(4);
      expect(done.usage.cost).toBe(0.4);
      expect(await gw.balance(account)).toBe(0);
      const ledger = await gw.services.store.listLedger((await gw.services.store.getAccountByName(account))!.id);
      expect(ledger.filter((e) => e.kind === 'capture').map((e) => e.delta)).toEqual([-0.4 * MICROS]);
      expect((await gw.services.store.getJob(jobId))!.state).toBe('completed');
      // The video the vendor delivered is served (once the simulator's own task, 50 ms, is done too).
      await new Promise((r) => setTimeout(r, 100));
      const content = await fetch(`${gw.url}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${key}` } });
      expect(content.status).toBe(200);
      await content.arrayBuffer();
    },
  );

  it('bills a believable shorter duration as reported, with no trail', async () => {
    const { key, account } = await gw.newKey(0.4);
    const { id, jobId } = await createSora(key);
    everyPollAnswers(soraSim, SORA_POLL, soraAnswer('completed', '2.5'));
    const done = await pollUntilDone(gw, key, id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.seconds).toBe(2.5);
    expect(done.usage.cost).toBe(0.25);
    expect(await gw.balance(account)).toBe(0.15 * MICROS);
    expect(await reconcileFor(jobId)).toEqual([]);
  });

  // A figure of more digits than a double holds is kept as a marker string (core/lossless-json.ts);
  // it used to read as no figure at all, and the held length was billed instead of the vendor's.
  it('bills a long-digit duration as the number it is, within the held seconds', async () => {
    const answer = (seconds: string) => JSON.stringify(soraAnswer('completed', 0)).replace('"seconds":0', `"seconds":${seconds}`);
    const { key, account } = await gw.newKey(0.4);
    const { id, jobId } = await createSora(key);
    soraSim.inject({ kind: 'status', status: 200, body: answer('2.50000000000000000001') }, 10_000, SORA_POLL);
    const done = await pollUntilDone(gw, key, id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.seconds).toBe(2.5);
    expect(done.usage.cost).toBe(0.25);
    expect(await gw.balance(account)).toBe(0.15 * MICROS);
    expect((await gw.services.store.getJob(jobId))!.billableSeconds).toBe(2.5);
    expect(await reconcileFor(jobId)).toEqual([]);

    // More than was held is still capped at the hold, with its trail.
    soraSim.clearFaults();
    const long = await gw.newKey(0.4);
    const capped = await createSora(long.key);
    soraSim.inject({ kind: 'status', status: 200, body: answer('100000.000000000000000000001') }, 10_000, SORA_POLL);
    const over = await pollUntilDone(gw, long.key, capped.id, 5_000);
    expect(over.usage.cost).toBe(0.4);
    expect(await gw.balance(long.account)).toBe(0);
    const trail = await reconcileFor(capped.jobId);
    expect(trail).toHaveLength(1);
    expect(trail[0]!.reason).toContain('100000');
  });

  it('charges nothing for a failed job, whatever duration it claims', async () => {
    const { key, account } = await gw.newKey(0.4);
    const { id } = await createSora(key);
    everyPollAnswers(soraSim, SORA_POLL, soraAnswer('failed', '100000'));
    const done = await pollUntilDone(gw, key, id, 5_000);
    expect(done.status).toBe('failed');
    expect(done.usage).toEqual({ cost: 0 });
    expect(await gw.balance(account)).toBe(0.4 * MICROS);
  });
});

describe('an Azure vendor reporting impossible durations per generation', () => {
  it('bills two variants at most at the held seconds, skipping a negative figure', async () => {
    const { key, account } = await gw.newKey(1);
    const { created, jobId } = await createVideo(gw, key, { model: 'sora', prompt: 'a fox', n_seconds: 5, n_variants: 2 });
    expect(created.json.usage).toEqual({ held: 1 });
    everyPollAnswers(azureSim, AZURE_POLL, {
      object: 'video.generation.job',
      id: 'task_hostile',
      status: 'succeeded',
      n_seconds: 5,
      n_variants: 2,
      generations: [
        { object: 'video.generation', id: 'gen_a', n_seconds: 100000 },
        { object: 'video.generation', id: 'gen_b', n_seconds: -3 },
      ],
    });
    const done = await pollUntilDone(gw, key, created.json.id, 5_000);
    expect(done.status).toBe('completed');
    expect(done.usage.cost).toBe(1);
    expect(await gw.balance(account)).toBe(0);
    expect((await gw.services.store.getJob(jobId))!.billableSeconds).toBe(10);
    expect(await reconcileFor(jobId)).toHaveLength(1);
  });
});

describe('settleSeconds (the rule behind the above)', () => {
  it('bills min(reported, held); an unusable figure bills the held seconds; nothing is ever negative', () => {
    expect(settleSeconds({ seconds: 4 }, 4, 1)).toEqual({ seconds: 4, billable: 4 });
    expect(settleSeconds({ seconds: 3 }, 4, 1)).toEqual({ seconds: 3, billable: 3 });
    expect(settleSeconds({ seconds: 8, billableSeconds: 16 }, 16, 2)).toEqual({ seconds: 8, billable: 16 });
    expect(settleSeconds({ seconds: 1e5 }, 4, 1)).toMatchObject({ seconds: 4, billable: 4, adjusted: expect.stringContaining('100000') });
    for (const bad of [-5, 0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(settleSeconds({ seconds: bad }, 4, 1)).toMatchObject({ seconds: 4, billable: 4, adjusted: expect.any(String) });
    }
    // Two videos, the figure unusable: each is shown at its share of the hold.
    expect(settleSeconds({ seconds: -1, billableSeconds: -2 }, 10, 2)).toMatchObject({ seconds: 5, billable: 10 });
    // Nothing held (a free or broken estimate): nothing to bill.
    expect(settleSeconds({ seconds: 4 }, 0, 1)).toMatchObject({ seconds: 0, billable: 0 });
    expect(settleSeconds({ seconds: 4 }, Number.NaN, 1)).toMatchObject({ seconds: 0, billable: 0 });
  });

  it("an extension shows its stitched total but bills only the new segment, never past its hold", () => {
    expect(settleSeconds({ seconds: 12, billableSeconds: 8, sourceSeconds: 4 }, 8, 1)).toEqual({ seconds: 12, billable: 8 });
    // A total beyond source plus hold is shown no longer than that, and the segment is capped at the hold.
    expect(settleSeconds({ seconds: 60, billableSeconds: 56, sourceSeconds: 4 }, 8, 1)).toMatchObject({ seconds: 12, billable: 8, adjusted: expect.any(String) });
    // An unusable source length carries nothing.
    expect(settleSeconds({ seconds: 12, billableSeconds: 8, sourceSeconds: -4 }, 8, 1)).toEqual({ seconds: 8, billable: 8 });
  });
});
