import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/** The video flow's machinery, proven on vendor D (OpenAI Sora) over real HTTP. */
let primary: SimServer;
let backup: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  primary = await sora.simulator.start({ taskMs: 150 });
  backup = await sora.simulator.start({ taskMs: 150 });
  gw = await startTestGateway(
    upstreamsFor([
      { module: sora, sim: primary, name: 'sora-primary', priority: 1, timeoutMs: 700 },
      { module: sora, sim: backup, name: 'sora-backup', priority: 2, timeoutMs: 700 },
    ]),
  );
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([primary?.close(), backup?.close()]);
});
afterEach(() => {
  primary.reset();
  backup.reset();
});

const creates = (sim: SimServer) => sim.received('POST', '/v1/videos');
const create = (key: string, body: Record<string, unknown>) => call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', ...body } });

describe('pass-through to vendor D, asserted on what the upstream received', () => {
  it('sends seconds as a string, size as it is, and unknown fields unchanged and unwrapped', async () => {
    const { key } = await gw.newKey();
    const r = await create(key, { seconds: 8, size: '1280x720', brand_new_param: { nested: [1, 2, { x: true }] }, another: 'v' });
    expect(r.status, r.text).toBe(200);
    const sent = creates(primary)[0]!.json;
    expect(sent).toMatchObject({ model: 'sora-2', prompt: 'a fox', seconds: '8', size: '1280x720', another: 'v' });
    expect(sent.brand_new_param).toEqual({ nested: [1, 2, { x: true }] });
    expect(r.json.seconds).toBe(8);
  });

  it('takes the common `duration` as Sora seconds (a string) and native `seconds` over it', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await create(key, { duration: 12 });
    expect(r.status, r.text).toBe(200);
    const sent = creates(primary)[0]!.json;
    expect(sent.seconds).toBe('12');
    expect(sent.duration).toBeUndefined();
    expect(await gw.balance(account)).toBe(10_000_000 - 1_200_000); // held for 12 s
    await create(key, { duration: 12, seconds: 4 });
    expect(creates(primary)[1]!.json.seconds).toBe('4');
  });

  it('rejects __proto__, constructor and prototype keys anywhere, before any upstream call', async () => {
    const { key } = await gw.newKey();
    for (const [body, param] of [
      ['{"model":"sora-2","prompt":"x","a":{"__proto__":{"polluted":1}}}', 'a.__proto__'],
      ['{"model":"sora-2","prompt":"x","__proto__":{"polluted":1}}', '__proto__'],
      ['{"model":"sora-2","prompt":"x","a":{"b":[{"constructor":{"prototype":{"p":1}}}]}}', 'a.b[0].constructor'],
      ['{"model":"sora-2","prompt":"x","prototype":1}', 'prototype'],
    ]) {
      const r = await call(gw, 'POST', '/v1/videos/generations', { key, body });
      expect(r.status, body).toBe(400);
      // The key's path names it wherever it stands, at the top too.
      expect(r.json.error, body).toMatchObject({ type: 'invalid_request_error', code: 'forbidden_key', param });
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(creates(primary)).toHaveLength(0);
  });

  it('answers 400 for conflicting size forms and bad types, with param, and creates nothing', async () => {
    const { key, account } = await gw.newKey();
    const before = await gw.balance(account);
    const r = await create(key, { size: '1280x720', resolution: '1080p', aspect_ratio: '16:9' });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'size_conflict' });
    const t = await create(key, { seconds: [8] });
    expect(t.json.error).toMatchObject({ param: 'seconds' });
    expect(creates(primary)).toHaveLength(0);
    expect(await gw.balance(account)).toBe(before);
  });
});

describe('billing', () => {
  it('402 when the balance cannot cover the estimate, with no upstream call', async () => {
    const { key, account } = await gw.newKey(0.5); // 8 s x 0.1 = 0.8 > 0.5
    const r = await create(key, { seconds: 8 });
    expect(r.status).toBe(402);
    expect(r.json.error.type).toBe('insufficient_quota');
    expect(creates(primary)).toHaveLength(0);
    expect(await gw.balance(account)).toBe(500_000);
  });

  it('captures exactly actual seconds x price once under 20 concurrent polls', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await create(key, { seconds: 4 });
    expect(r.status, r.text).toBe(200);
    await new Promise((res) => setTimeout(res, 300));
    const polls = await Promise.all(Array.from({ length: 20 }, () => call(gw, 'GET', `/v1/videos/${r.json.id}`, { key })));
    for (const p of polls) expect(p.status).toBe(200);
    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.status).toBe('completed');
    expect(done.seconds).toBe(4);
    expect(await gw.balance(account)).toBe(10_000_000 - 400_000);
    const id = (await gw.services.store.getAccountByName(account))!.id;
    const ledger = await gw.services.store.listLedger(id);
    expect(ledger.filter((e) => e.kind === 'capture')).toHaveLength(1);
    expect(ledger.filter((e) => e.kind === 'release')).toHaveLength(1);
  });

  it('a moderation rejection at create is a 400 and releases the hold', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await create(key, { prompt: 'bad [moderation-create]' });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('content_policy_violation');
    expect(creates(backup)).toHaveLength(0); // a client-side rejection is not failed over
    expect(await gw.balance(account)).toBe(10_000_000);
  });
});

describe('ids and isolation', () => {
  it('404 for tampered, truncated and other accounts’ ids, on poll and on content', async () => {
    const a = await gw.newKey();
    const b = await gw.newKey();
    const r = await create(a.key, {});
    const id: string = r.json.id;
    const tampered = id.slice(0, 30) + (id[30] === 'A' ? 'B' : 'A') + id.slice(31);
    for (const bad of [tampered, id.slice(0, -4), 'nope', `${id}x`]) {
      const p = await call(gw, 'GET', `/v1/videos/${bad}`, { key: a.key });
      expect(p.status, bad).toBe(404);
      expect(p.json.error.type).toBe('not_found');
    }
    const other = await call(gw, 'GET', `/v1/videos/${id}`, { key: b.key });
    expect(other.status).toBe(404);
    expect(other.text).not.toContain('fox');
    expect((await call(gw, 'GET', `/v1/videos/${id}/content`, { key: b.key })).status).toBe(404);
    expect((await call(gw, 'GET', `/v1/videos/${id}`, { key: a.key })).status).toBe(200);
  });

  it('rejects a forged or expired signed link', async () => {
    const { key } = await gw.newKey();
    const r = await create(key, {});
    const done = await pollUntilDone(gw, key, r.json.id);
    const url = new URL(done.output_url);
    url.searchParams.set('signature', 'A'.repeat(43));
    expect((await fetch(url)).status).toBe(401);
    url.searchParams.set('expires', '1000');
    expect((await fetch(url)).status).toBe(401);
  });
});

describe('failover and pinning', () => {
  it('moves to the next upstream when the first answers 500, and stays pinned to the one that accepted', async () => {
    const { key } = await gw.newKey();
    primary.inject({ kind: 'status', status: 500, json: { error: { message: 'boom' } } }, 1, /^\/v1\/videos$/);
    const r = await create(key, {});
    expect(r.status, r.text).toBe(200);
    expect(creates(primary)).toHaveLength(1);
    expect(creates(backup)).toHaveLength(1);
    await pollUntilDone(gw, key, r.json.id);
    expect(primary.received('GET', /^\/v1\/videos\//)).toHaveLength(0);
    expect(backup.received('GET', /^\/v1\/videos\//).length).toBeGreaterThan(0);
  });

  it('moves on when the first upstream times out, and records the maybe-created task for reconciliation', async () => {
    const { key } = await gw.newKey();
    primary.inject({ kind: 'timeout' }, 1, /^\/v1\/videos$/);
    const r = await create(key, {});
    expect(r.status, r.text).toBe(200);
    expect(creates(backup)).toHaveLength(1);
    const rec = await gw.services.store.listReconcile(10);
    expect(rec.some((x) => x.upstream === 'sora-primary')).toBe(true);
  });

  it('answers 504 when every upstream times out, 502 when every one fails, and holds nothing', async () => {
    const { key, account } = await gw.newKey(10);
    primary.inject({ kind: 'timeout' }, 1, /^\/v1\/videos$/);
    backup.inject({ kind: 'timeout' }, 1, /^\/v1\/videos$/);
    const t = await create(key, {});
    expect(t.status).toBe(504);
    expect(t.json.error.type).toBe('server_error');
    primary.inject({ kind: 'status', status: 503 }, 1, /^\/v1\/videos$/);
    backup.inject({ kind: 'status', status: 500 }, 1, /^\/v1\/videos$/);
    const f = await create(key, {});
    expect(f.status).toBe(502);
    expect(await gw.balance(account)).toBe(10_000_000);
  });

  it('a transient poll failure keeps the job processing, then it completes', async () => {
    const { key } = await gw.newKey();
    const r = await create(key, {});
    primary.inject({ kind: 'status', status: 503 }, 2, /^\/v1\/videos\/[^/]+$/);
    const first = await call(gw, 'GET', `/v1/videos/${r.json.id}`, { key });
    expect(first.json.status).toBe('processing');
    // recordPoll backed off; let the next poll through immediately.
    const job = await gw.services.store.getJob(gw.services.video.deps.sealer.open(r.json.id)!.j);
    await gw.services.store.recordPoll(job!.id, { vendorData: {}, progress: null, nextPollAt: 0, now: Date.now() });
    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.status).toBe('completed');
  });
});

describe('poll throttling', () => {
  it('a client GET refreshes from the upstream at most once per poll interval', async () => {
    const { key } = await gw.newKey();
    const r = await create(key, {});
    const settings = gw.services.video.deps.settings as { pollIntervalMs: number };
    const jobId = gw.services.video.deps.sealer.open(r.json.id)!.j;
    settings.pollIntervalMs = 60_000;
    try {
      await gw.services.store.recordPoll(jobId, { vendorData: {}, progress: null, nextPollAt: 0, now: Date.now() });
      for (let i = 0; i < 10; i++) expect((await call(gw, 'GET', `/v1/videos/${r.json.id}`, { key })).status).toBe(200);
      expect(primary.received('GET', /^\/v1\/videos\/[^/]+$/)).toHaveLength(1);
    } finally {
      settings.pollIntervalMs = 0;
    }
  });
});

describe('background refresher and deadline', () => {
  it('settles a job nobody polls', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await create(key, { seconds: 4 });
    await new Promise((res) => setTimeout(res, 300));
    await gw.services.poller.tick();
    const job = await gw.services.store.getJob(gw.services.video.deps.sealer.open(r.json.id)!.j);
    expect(job!.state).toBe('completed');
    expect(await gw.balance(account)).toBe(10_000_000 - 400_000);
  });

  it('fails a job past the deadline at no charge', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await create(key, { prompt: 'slow one' });
    const jobId = gw.services.video.deps.sealer.open(r.json.id)!.j;
    // Refresh as if the clock were past the job's deadline.
    const job = (await gw.services.store.getJob(jobId))!;
    const { refreshJob } = await import('../../src/video/refresh.js');
    await refreshJob({ ...gw.services.video.deps, clock: { now: () => job.deadlineAt + 1 } }, job);
    const after = await call(gw, 'GET', `/v1/videos/${r.json.id}`, { key });
    expect(after.json.status).toBe('failed');
    expect(after.json.error.code).toBe('timeout');
    expect(await gw.balance(account)).toBe(10_000_000);
  });
});
