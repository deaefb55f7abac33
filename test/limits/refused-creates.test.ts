import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A create the gateway refuses (validation 400, unknown model 404, a key without the video action
 * 403, media it will not fetch 400, a balance short of the hold 402) does not spend the video RPM
 * quota: after any number of them, a key limited to 2 creates a minute still makes 2.
 */
let sim: SimServer;
let gw: TestGateway;
let model: string;

beforeAll(async () => {
  sim = await veo.simulator.start({ taskMs: 60_000 });
  gw = await startTestGateway({ ...upstreamsFor([{ module: veo, sim }]), video: { media: { allow_private_networks: false } } });
  model = veo.simulator.demo(sim).models[0]!.name;
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const create = (key: string, body: Record<string, unknown>) => call(gw, 'POST', '/v1/videos/generations', { key, body });

describe('refused video creates', () => {
  it('spend no RPM quota, whichever way they are refused', async () => {
    const account = `refused-${Date.now()}`;
    await gw.createAccount(account, { balance: 100, limits: { video: { rpm: 2 } } });
    const key = await gw.createKey(account);
    const embedOnly = await gw.createKey(account, { actions: ['embeddings'] });
    const poor = await gw.newKey(0.01, { limits: { video: { rpm: 2 } } });

    const refusals: [string, Promise<{ status: number; json: any }>][] = [];
    for (let i = 0; i < 3; i++) {
      refusals.push(['no prompt', create(key, { model })]);
      refusals.push(['bad size', create(key, { model, prompt: 'x', size: 'huge' })]);
      refusals.push(['unknown model', create(key, { model: 'no-such-model', prompt: 'x' })]);
      refusals.push(['wrong action', create(embedOnly, { model, prompt: 'x' })]);
      refusals.push(['private media', create(key, { model, prompt: 'x', frame_images: [{ image_url: 'http://169.254.169.254/latest/meta-data' }] })]);
      refusals.push(['not a url', create(key, { model, prompt: 'x', frame_images: [{ image_url: 'ftp://example.com/a.png' }] })]);
      refusals.push(['short balance', create(poor.key, { model, prompt: 'x' })]);
    }
    const statuses = new Map<string, Set<number>>();
    for (const [why, p] of refusals) {
      const r = await p;
      expect(r.status, why).toBeGreaterThanOrEqual(400);
      expect(r.status, why).toBeLessThan(500);
      expect(r.json.error.type, why).toBeTypeOf('string');
      statuses.set(why, (statuses.get(why) ?? new Set()).add(r.status));
    }
    expect([...statuses.get('private media')!]).toEqual([400]);
    expect([...statuses.get('short balance')!]).toEqual([402]);
    expect([...statuses.get('unknown model')!]).toEqual([404]);
    expect([...statuses.get('wrong action')!]).toEqual([403]);

    // The quota is whole: two creates pass, the third is the one refused by the limit.
    const ok = [await create(key, { model, prompt: 'a lighthouse' }), await create(key, { model, prompt: 'a harbour' })];
    expect(ok.map((r) => r.status)).toEqual([200, 200]);
    const limited = await create(key, { model, prompt: 'one too many' });
    expect(limited.status).toBe(429);
    expect(limited.json.error.type).toBe('rate_limit_error');
    // And the poor account's refusals (402) left its own quota whole too, once it can pay.
    await gw.services.admin.topUp(poor.account, '100');
    const paid = [await create(poor.key, { model, prompt: 'x' }), await create(poor.key, { model, prompt: 'y' })];
    expect(paid.map((r) => r.status)).toEqual([200, 200]);
  });

  it('spend no RPM quota when the upstream refuses the request itself (its 4xx: no task exists), as for embeddings and chat', async () => {
    const { key } = await gw.newKey(100, { limits: { video: { rpm: 2 } } });
    sim.inject({ kind: 'status', status: 400, json: { error: { code: 400, message: 'The prompt was rejected.', status: 'INVALID_ARGUMENT' } } }, 3, /predictLongRunning/);
    for (let i = 0; i < 3; i++) {
      const r = await create(key, { model, prompt: 'refused upstream' });
      expect(r.status, JSON.stringify(r.json)).toBe(400);
      expect(r.json.error.code).toBe('upstream_rejected');
    }
    const ok = [await create(key, { model, prompt: 'a lighthouse' }), await create(key, { model, prompt: 'a harbour' })];
    expect(ok.map((r) => r.status)).toEqual([200, 200]);
    expect((await create(key, { model, prompt: 'one too many' })).status).toBe(429);
  });

  it('give the quota back for a caller that takes no x-ratelimit-* headers too', async () => {
    // The service's create takes its request control as optional: the give-back must not depend on
    // the caller wanting the headers that describe it.
    const poor = await gw.newKey(0.01, { limits: { video: { rpm: 2 } } });
    const ctx = await gw.services.authenticator.authenticate(`Bearer ${poor.key}`);
    const info = gw.services.authorizer.model(ctx, 'video', model, 'video');
    for (let i = 0; i < 3; i++) {
      await expect(gw.services.video.create(ctx, info, { model, prompt: 'x' })).rejects.toMatchObject({ status: 402 });
      await expect(gw.services.video.create(ctx, info, { model, prompt: 'x' }, { signal: new AbortController().signal })).rejects.toMatchObject({ status: 402 });
    }
    // And an upstream's own refusal (the give-back after the upstreams were tried).
    await gw.services.admin.topUp(poor.account, '100');
    sim.inject({ kind: 'status', status: 400, json: { error: { code: 400, message: 'The prompt was rejected.', status: 'INVALID_ARGUMENT' } } }, 3, /predictLongRunning/);
    for (let i = 0; i < 3; i++) {
      await expect(gw.services.video.create(ctx, info, { model, prompt: 'refused upstream' })).rejects.toMatchObject({ code: 'upstream_rejected' });
    }
    const paid = [await create(poor.key, { model, prompt: 'x' }), await create(poor.key, { model, prompt: 'y' })];
    expect(paid.map((r) => r.status)).toEqual([200, 200]);
  });
});
