import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, upstreamsFor } from '../helpers/video.js';

/**
 * Video creates are limited like embeddings and chat, so they describe the limit the same way: every
 * create route (the spec's, the OpenAI Videos API's create and remix) sends the x-ratelimit-* headers
 * of its admission on success, on its 429 and on a refusal that comes after the admission.
 */
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  gw = await startTestGateway(upstreamsFor([{ module: sora, sim }]));
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

const body = { model: 'sora-2', prompt: 'a fox', seconds: '4' };

function limitHeaders(h: Headers): Record<string, string | null> {
  return {
    limit: h.get('x-ratelimit-limit-requests'),
    remaining: h.get('x-ratelimit-remaining-requests'),
    reset: h.get('x-ratelimit-reset-requests'),
  };
}

describe('x-ratelimit-* headers on video creates', () => {
  it('every create route counts down on success, and the 429 after the last carries them with Retry-After', async () => {
    const { key } = await gw.newKey(100, { limits: { video: { rpm: 4 } } });
    const spec = await call(gw, 'POST', '/v1/videos/generations', { key, body });
    expect(spec.status, spec.text).toBe(200);
    expect(limitHeaders(spec.headers)).toMatchObject({ limit: '4', remaining: '3' });
    expect(spec.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+(\.\d+)?s|\d+ms|1m0s)$/);

    const openai = await call(gw, 'POST', '/v1/videos', { key, body });
    expect(openai.status, openai.text).toBe(200);
    expect(limitHeaders(openai.headers)).toMatchObject({ limit: '4', remaining: '2' });

    const form = new FormData();
    form.set('model', 'sora-2');
    form.set('prompt', 'a hare');
    form.set('seconds', '4');
    const multipart = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(multipart.status, await multipart.clone().text()).toBe(200);
    expect(limitHeaders(multipart.headers)).toMatchObject({ limit: '4', remaining: '1' });

    expect((await pollUntilDone(gw, key, openai.json.id)).status).toBe('completed');
    const remix = await call(gw, 'POST', `/v1/videos/${openai.json.id}/remix`, { key, body: { prompt: 'in watercolour' } });
    expect(remix.status, remix.text).toBe(200);
    expect(limitHeaders(remix.headers)).toMatchObject({ limit: '4', remaining: '0' });

    for (const [path, b] of [
      ['/v1/videos/generations', body],
      ['/v1/videos', body],
      [`/v1/videos/${openai.json.id}/remix`, { prompt: 'again' }],
    ] as const) {
      const refused = await call(gw, 'POST', path, { key, body: b });
      expect(refused.status, path).toBe(429);
      expect(Number(refused.headers.get('retry-after')), path).toBeGreaterThanOrEqual(1);
      expect(limitHeaders(refused.headers), path).toMatchObject({ limit: '4', remaining: '0' });
    }
  });

  it('a refusal after the admission (the upstream rejects the prompt) carries the headers too', async () => {
    const { key } = await gw.newKey(100, { limits: { video: { rpm: 5 } } });
    sim.inject({ kind: 'status', status: 400, json: { error: { message: 'rejected', type: 'invalid_request_error', code: 'moderation_blocked' } } }, 1, /\/v1\/videos$/);
    const r = await call(gw, 'POST', '/v1/videos', { key, body });
    expect(r.status, r.text).toBe(400);
    expect(r.headers.get('x-ratelimit-limit-requests')).toBe('5');
  });

  it('a key and account set to unlimited (0) get no x-ratelimit-* headers (there is no limit to describe)', async () => {
    const account = `unlimited-${Date.now()}`;
    await gw.createAccount(account, { balance: 100, limits: { video: { rpm: 0 } } });
    const key = await gw.createKey(account, { limits: { video: { rpm: 0 } } });
    const r = await call(gw, 'POST', '/v1/videos/generations', { key, body });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-ratelimit-limit-requests')).toBeNull();
  });

  it('the OpenAI create records the request id on the job, as the spec route does', async () => {
    const { key } = await gw.newKey(100);
    const created = await call(gw, 'POST', '/v1/videos', { key, body });
    expect(created.status, created.text).toBe(200);
    const asAdmin = { headers: { authorization: `Bearer ${gw.adminToken}` } };
    const job = await call(gw, 'GET', `/admin/jobs/${created.json.id}`, asAdmin);
    expect(job.json.request_id).toBe(created.headers.get('x-request-id'));
  });
});
