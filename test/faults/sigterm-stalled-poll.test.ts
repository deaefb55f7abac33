import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, soraProcessConfig, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';

/**
 * SIGTERM while a vendor does not answer a poll (the upstream's `timeout_ms` is longer than
 * `server.shutdown_timeout_ms`, as 30 s is longer than 25 s by default), made by the background
 * refresher or by a client's GET. Shutdown cuts the poll short instead of waiting out the vendor:
 * the GET is answered 200 with the job as stored, the process exits 0 within its grace, and the job
 * is left processing with its poll lease handed back, so the next process (or another instance)
 * polls it at once. `npm run build` must have run.
 */
const ADMIN = 'sigterm-poll-admin-token-0123456789';
const SHUTDOWN_TIMEOUT_MS = 3_000;
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;
let release: () => void = () => undefined;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 60_000 });
  dir = mkdtempSync(join(tmpdir(), 'gw-sigterm-poll-'));
});
afterEach(async () => {
  release();
  await killLeftover(gw);
  gw = undefined;
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(refresher: boolean): Record<string, unknown> {
  const base = soraProcessConfig(dir, sim, sora.simulator.demo(sim), {
    admin_token: ADMIN,
    secret: 'sigterm-poll-secret-0123456789abcdef',
    server: { shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS },
    // Within the drain (config/load.ts refuses a delivery timeout the drain cannot wait out).
    webhooks: { timeout_ms: 1_000 },
    // A long lease: were it left taken, no process could poll the job for a minute.
    video: { poll_interval_ms: 100, refresher_interval_ms: refresher ? 100 : 0, lease_ms: 60_000 },
  });
  return { ...base, upstreams: (base.upstreams as Record<string, unknown>[]).map((u) => ({ ...u, timeout_ms: 20_000 })) };
}

async function jobRow(publicId: string): Promise<{ state: string; lease_until: number | null }> {
  const store = await openStore(`sqlite:${join(dir, 'gateway.db')}`, { dataDir: dir });
  try {
    return (await store.driver.query('SELECT state, lease_until FROM jobs WHERE public_id = ?', [publicId]))[0] as never;
  } finally {
    await store.close();
  }
}

describe('SIGTERM while a vendor poll waits on the vendor', () => {
  it.each([
    ['the background refresher', true],
    ["a client's GET", false],
  ])('made by %s: exits 0 within the grace, the job still processing and its lease handed back', async (_, refresher) => {
    gw = await startGatewayProcess(dir, config(refresher), 'first.json');
    const headers = { authorization: `Bearer ${ADMIN}` };
    const name = `stalled-${refresher}`;
    expect((await call(gw, 'POST', '/admin/accounts', { headers, body: { name, balance: '10' } })).status).toBe(201);
    const key = (await call(gw, 'POST', '/admin/keys', { headers, body: { account: name } })).json.key as string;
    const model = sora.simulator.demo(sim).models[0]!.name;
    sim.inject({ kind: 'hold', until: new Promise<void>((r) => (release = r)) }, 1, /^\/v1\/videos\/[^/]+$/);
    const polls = sim.received('GET', /^\/v1\/videos\/[^/]+$/).length;
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a slow vendor', seconds: 4 } });
    expect(created.status, created.text).toBe(200);
    await new Promise((r) => setTimeout(r, 150));
    const get = refresher ? undefined : call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
    await waitFor(() => sim.received('GET', /^\/v1\/videos\/[^/]+$/).length > polls, 'a poll to reach the vendor');
    expect((await jobRow(created.json.id)).lease_until).not.toBeNull();

    gw.child.kill('SIGTERM');
    const code = await gw.exited;
    // Within the grace: past it the process exits 1 (and says so), whatever the machine's speed.
    expect(code, gw.output.slice(-10).join('\n')).toBe(0);
    if (get) {
      const answered = await get;
      expect(answered.status, answered.text).toBe(200);
      expect(answered.json.status).toBe('processing');
    }
    expect(await jobRow(created.json.id)).toEqual({ state: 'processing', lease_until: null });
    expect(gw.output.join('\n')).not.toMatch(/shutdown deadline passed/);

    // The next process polls it straight away (the vendor answers now).
    release();
    gw = await startGatewayProcess(dir, config(refresher), 'second.json');
    const before = sim.received('GET', /^\/v1\/videos\/[^/]+$/).length;
    const got = await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
    expect(got.json.status).toBe('processing');
    expect(sim.received('GET', /^\/v1\/videos\/[^/]+$/).length).toBeGreaterThan(before);
  }, 30_000);
});
