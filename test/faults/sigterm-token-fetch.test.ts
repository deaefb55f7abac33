import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import type { TokenIssuer } from '../../src/sim/google-token.js';
import { videoModule as veo } from '../../src/video/vendors/veo/index.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';

/**
 * SIGTERM while a vendor poll waits for a Google access token that the token endpoint never
 * answers (a Vertex upstream with a service-account key, its token due for renewal). Shutdown
 * aborts the poll's signal; the wait for the token must end with it, and the exchange itself,
 * rather than run out the exchange's own 15 s timeout. The process exits 0 well within its grace.
 * `npm run build` must have run.
 */
const ADMIN = 'sigterm-token-admin-token-0123456789';
const SHUTDOWN_TIMEOUT_MS = 5_000;
const TOKEN = /^\/token$/;
const POLL = /:fetchPredictOperation$/;
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;
let release: () => void = () => undefined;

beforeAll(async () => {
  sim = await veo.simulator.start({ taskMs: 120_000 });
  // Tokens live 2 s, so the gateway renews the one its create fetched a second later.
  (sim.settings['issuer'] as TokenIssuer).ttlSeconds = 2;
  dir = mkdtempSync(join(tmpdir(), 'gw-sigterm-token-'));
});
afterEach(async () => {
  release();
  sim.clearFaults();
  await killLeftover(gw);
  gw = undefined;
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(refresher: boolean, n: number): Record<string, unknown> {
  const demo = veo.simulator.demo(sim);
  return {
    database: `sqlite:${join(dir, `gateway-${n}.db`)}`,
    data_dir: join(dir, `data-${n}`),
    log_level: 'warn',
    admin_token: ADMIN,
    secret: 'sigterm-token-secret-0123456789abcdef',
    server: { shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS },
    // Within the drain (config/load.ts refuses a delivery timeout the drain cannot wait out).
    webhooks: { timeout_ms: 1_000 },
    // A long lease: were it left taken, no process could poll the job for a minute.
    video: { poll_interval_ms: 100, refresher_interval_ms: refresher ? 100 : 0, lease_ms: 60_000 },
    upstreams: [{ ...demo.options, name: 'veo-sim', vendor: 'veo', base_url: sim.url, timeout_ms: 20_000, models: demo.models.map((m) => m.name) }],
    models: Object.fromEntries(demo.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
  };
}

async function jobRow(n: number, publicId: string): Promise<{ state: string; lease_until: number | null }> {
  const store = await openStore(`sqlite:${join(dir, `gateway-${n}.db`)}`, { dataDir: dir });
  try {
    return (await store.driver.query('SELECT state, lease_until FROM jobs WHERE public_id = ?', [publicId]))[0] as never;
  } finally {
    await store.close();
  }
}

describe('SIGTERM while a poll waits for a Google access token', () => {
  it.each([
    ['the background refresher', true, 1],
    ["a client's GET", false, 2],
  ])('made by %s: exits 0 promptly, the job still processing', async (_, refresher, n) => {
    gw = await startGatewayProcess(dir, config(refresher, n), `gateway-${n}.json`);
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await call(gw, 'POST', '/admin/accounts', { headers, body: { name: 'tokens', balance: '10' } })).status).toBe(201);
    const key = (await call(gw, 'POST', '/admin/keys', { headers, body: { account: 'tokens' } })).json.key as string;
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'veo-3.1-generate-001', prompt: 'a token that never comes', seconds: 4 } });
    expect(created.status, created.text).toBe(200);

    // From now on the token endpoint takes requests and never answers them.
    sim.inject({ kind: 'hold', until: new Promise<void>((r) => (release = r)) }, 100, TOKEN);
    const tokens = sim.received('POST', TOKEN).length;
    await new Promise((r) => setTimeout(r, 1_200));
    const get = refresher ? undefined : call(gw, 'GET', `/v1/videos/${created.json.id}`, { key });
    await waitFor(() => sim.received('POST', TOKEN).length > tokens, 'a token renewal to reach the endpoint');
    await new Promise((r) => setTimeout(r, 200));
    const polls = sim.received('POST', POLL).length;

    const signalled = Date.now();
    gw.child.kill('SIGTERM');
    const code = await gw.exited;
    const took = Date.now() - signalled;
    expect(code, gw.output.slice(-10).join('\n')).toBe(0);
    // Promptly: the 15 s exchange (and the 5 s grace) are not waited out.
    expect(took).toBeLessThan(3_000);
    expect(gw.output.join('\n')).not.toMatch(/shutdown deadline passed/);
    if (get) {
      const answered = await get;
      expect(answered.status, answered.text).toBe(200);
      expect(answered.json.status).toBe('processing');
    }
    // Handed back for the next process to poll at once.
    expect(await jobRow(n, created.json.id)).toEqual({ state: 'processing', lease_until: null });
    // Nothing was sent once the token was due: the poll waiting for it was dropped, not sent late.
    expect(sim.received('POST', POLL).length).toBe(polls);
  }, 30_000);
});
