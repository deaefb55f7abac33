import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';

/**
 * A remix continues its source's task, so only the upstream that made the source can take it. When
 * the account may no longer use that upstream, the remix is refused as the permission it is (403
 * permission_denied), before any quota or money is touched; it is neither sent to another upstream
 * nor answered as an outage (503).
 */
let simA: SimServer;
let simB: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  simA = await sora.simulator.start({ taskMs: 50 });
  simB = await sora.simulator.start({ taskMs: 50 });
  const { upstreams, models } = upstreamsFor([
    { module: sora, sim: simA, name: 'sora-a', priority: 1 },
    { module: sora, sim: simB, name: 'sora-b', priority: 2 },
  ]);
  gw = await startTestGateway({ upstreams, models });
});
afterAll(async () => {
  await gw?.close();
  await simA?.close();
  await simB?.close();
});

describe('remix and the account\'s upstreams', () => {
  it('403 when the source\'s upstream is no longer enabled for the account; nothing reaches either upstream', async () => {
    const { key, account } = await gw.newKey(100, { limits: { video: { rpm: 2 } } });
    const created = await call(gw, 'POST', '/v1/videos', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: '4' } });
    expect(created.status, created.text).toBe(200);
    let status = created.json.status;
    for (let i = 0; i < 200 && status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key })).json.status;
    }
    expect(status).toBe('completed');
    expect(simA.received('POST', '/v1/videos')).toHaveLength(1);

    await gw.services.admin.updateAccount(account, { upstreams: ['sora-b'] });
    const remix = await call(gw, 'POST', `/v1/videos/${created.json.id}/remix`, { key, body: { prompt: 'in watercolour' } });
    expect(remix.status, remix.text).toBe(403);
    expect(remix.json.error).toMatchObject({ type: 'permission_denied' });
    expect(simA.received('POST', /^\/v1\/videos/)).toHaveLength(1);
    expect(simB.received('POST', /^\/v1\/videos/)).toHaveLength(0);
    // Refused before its admission: the key's second create of the minute still goes through.
    expect((await call(gw, 'POST', '/v1/videos', { key, body: { model: 'sora-2', prompt: 'a hare', seconds: '4' } })).status).toBe(200);
  });
});
