import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { signFalWebhook, videoModule as fal } from '../../src/video/vendors/fal/index.js';
import { JWKS_PATH } from '../../src/video/vendors/fal/simulator.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { until } from '../spend/receiver.js';

/**
 * fal signs its webhooks (ED25519 over request id, user id, timestamp and the body's SHA-256, keys
 * as a JWKS). The gateway checks every fal callback: a valid one refreshes the job, anything else is
 * 401 invalid_callback_signature and triggers nothing, and an unreachable key set fails closed.
 */
const LONG_TASK_MS = 60_000;
let sim: SimServer;
let gw: TestGateway;

async function gatewayFor(jwksUrl?: string): Promise<TestGateway> {
  const video = upstreamsFor([{ module: fal, sim }]);
  if (jwksUrl) for (const u of video.upstreams) u['webhook_jwks_url'] = jwksUrl;
  return startTestGateway({
    ...video,
    server: { public_url: 'http://127.0.0.1:1' },
    video: { poll_interval_ms: 60_000, refresher_interval_ms: 0, media: { allow_private_networks: true } },
  });
}

beforeAll(async () => {
  sim = await fal.simulator.start({ taskMs: LONG_TASK_MS });
  gw = await gatewayFor();
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

/** A fal job that will not finish by itself during the test; returns its token, task id and a poll counter. */
async function longJob(on: TestGateway) {
  const { key } = await on.newKey(100);
  const created = await call(on, 'POST', '/v1/videos/generations', { key, body: { model: fal.simulator.demo(sim).models[0]!.name, prompt: 'signed' } });
  expect(created.status, created.text).toBe(200);
  const job = (await on.services.store.getJob(on.services.video.deps.sealer.open(created.json.id)!.j))!;
  const polls = () => sim.requests.filter((r) => r.method === 'GET' && r.path.includes(`/requests/${job.taskId}`)).length;
  return { token: job.callbackToken!, taskId: job.taskId!, polls };
}

function post(on: TestGateway, token: string, body: Buffer, headers: Record<string, string>) {
  return fetch(`${on.url}/callbacks/video/${token}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: new Uint8Array(body) }).then(async (r) => ({
    status: r.status,
    json: (await r.json()) as any,
  }));
}

const payload = (taskId: string) => Buffer.from(JSON.stringify({ request_id: taskId, gateway_request_id: taskId, status: 'OK', payload: {} }));
const jwksFetches = () => sim.requests.filter((r) => r.path === JWKS_PATH).length;

describe('fal webhook signatures', () => {
  it('a valid signature is accepted and refreshes the job from fal; the key set is fetched once and cached', async () => {
    const job = await longJob(gw);
    const before = jwksFetches();
    const body = payload(job.taskId);
    const r = await post(gw, job.token, body, signFalWebhook(sim, job.taskId, body));
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ received: true });
    await until(() => job.polls() === 1, 3_000);
    // Another valid callback (after the per-job window) uses the cached keys.
    await new Promise((res) => setTimeout(res, 1_100));
    expect((await post(gw, job.token, body, signFalWebhook(sim, job.taskId, body))).status).toBe(200);
    await until(() => job.polls() === 2, 3_000);
    expect(jwksFetches() - before).toBeLessThanOrEqual(1);
  });

  it('refuses a tampered body, another key, a stale or future timestamp, and missing headers: 401, nothing polled', async () => {
    const job = await longJob(gw);
    const body = payload(job.taskId);
    const stranger = generateKeyPairSync('ed25519').privateKey;
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, Buffer, Record<string, string>][] = [
      ['tampered body', Buffer.from(body.toString().replace('"OK"', '"ERROR"')), signFalWebhook(sim, job.taskId, body)],
      ['wrong key', body, signFalWebhook(sim, job.taskId, body, { key: stranger })],
      ['stale timestamp', body, signFalWebhook(sim, job.taskId, body, { timestamp: now - 600 })],
      ['future timestamp', body, signFalWebhook(sim, job.taskId, body, { timestamp: now + 600 })],
      ['no signature headers', body, {}],
      ['garbage signature', body, { ...signFalWebhook(sim, job.taskId, body), 'x-fal-webhook-signature': 'zz' }],
    ];
    for (const [what, sent, headers] of cases) {
      const r = await post(gw, job.token, sent, headers);
      expect(r.status, what).toBe(401);
      expect(r.json.error, what).toMatchObject({ type: 'authentication_error', code: 'invalid_callback_signature' });
    }
    await new Promise((res) => setTimeout(res, 300));
    expect(job.polls()).toBe(0);
    // An unknown token is still 404 (the token is checked before the signature).
    expect((await post(gw, 'B'.repeat(32), body, signFalWebhook(sim, job.taskId, body))).status).toBe(404);
  });

  it('an unreachable key set fails closed: 401 every time, no crash, nothing triggered (polling remains)', async () => {
    // A port that accepts and immediately closes: the fetch fails at once.
    const dead: Server = createServer((s) => s.destroy());
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const other = await gatewayFor(`http://127.0.0.1:${(dead.address() as AddressInfo).port}${JWKS_PATH}`);
    try {
      const job = await longJob(other);
      const body = payload(job.taskId);
      for (let i = 0; i < 3; i++) {
        const r = await post(other, job.token, body, signFalWebhook(sim, job.taskId, body));
        expect(r.status).toBe(401);
        expect(r.json.error.code).toBe('invalid_callback_signature');
      }
      expect(job.polls()).toBe(0);
      expect((await call(other, 'GET', '/health')).status).toBe(200);
    } finally {
      await other.close();
      await new Promise((r) => dead.close(r));
    }
  });
});
