import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { call } from '../helpers/gateway.js';
import { startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';

/**
 * SIGTERM (and SIGHUP, SIGINT) on the real process (bin/gateway.js): in-flight requests are answered
 * and billed, new connections are refused, the exit code is 0; a second SIGTERM ends it at once, and requests still
 * in flight near the deadline are cut (exit code 1; test/app/shutdown-cut.test.ts for a stream).
 */
const ADMIN = 'shutdown-admin-token-0123456789';
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;

beforeAll(async () => {
  sim = await startOpenAISimulator();
  dir = mkdtempSync(join(tmpdir(), 'gw-shutdown-'));
});
afterEach(async () => {
  sim.reset();
  if (gw && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
  await gw?.exited;
  gw = undefined;
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

let runs = 0;
async function start(server: Record<string, unknown> = {}): Promise<{ gw: GatewayProcess; key: string; account: string; database: string }> {
  const n = ++runs;
  const database = `sqlite:${join(dir, `gw-${n}.db`)}`;
  gw = await startGatewayProcess(dir, {
    database,
    data_dir: join(dir, `data-${n}`),
    admin_token: ADMIN,
    secret: 'shutdown-secret-0123456789abcdef',
    server,
    // Within the shortest drain below (config/load.ts refuses a delivery timeout the drain cannot wait out).
    webhooks: { timeout_ms: 500 },
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: ['text-embedding-3-small'] }],
    models: { 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 1000 } } },
  }, `gateway-${n}.json`);
  const headers = { authorization: `Bearer ${ADMIN}` };
  const account = `acct-${n}`;
  expect((await call(gw, 'POST', '/admin/accounts', { headers, body: { name: account, balance: '10' } })).status).toBe(201);
  const k = await call(gw, 'POST', '/admin/keys', { headers, body: { account } });
  expect(k.status, k.text).toBe(201);
  return { gw, key: k.json.key, account, database };
}

async function balanceMicros(g: GatewayProcess, account: string): Promise<number> {
  const r = await call(g, 'GET', `/admin/accounts/${account}`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return r.json.balance_micros;
}

const embed = (g: GatewayProcess, key: string) =>
  call(g, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'drain me gently' } });

/** True when a new TCP connection to the gateway is refused. */
async function refused(g: GatewayProcess): Promise<boolean> {
  try {
    await fetch(`${g.url}/health`, { signal: AbortSignal.timeout(1_000) });
    return false;
  } catch (e) {
    return /ECONNREFUSED/.test(String((e as { cause?: unknown }).cause ?? e));
  }
}

/**
 * How long an exit may take where it must not wait: for a request the upstream holds 20 s, or for
 * the default drain deadline (25 s). A process exit on a busy machine can take a few seconds.
 */
const PROMPT_MS = 5_000;

describe('graceful shutdown of the real process', () => {
  it('answers and bills the requests in flight, refuses new connections, and exits 0', async () => {
    const { gw: g, key, account, database } = await start();
    const before = await balanceMicros(g, account);
    sim.latencyMs = 3_000;
    let answered = false;
    const inflight = Promise.all([embed(g, key), embed(g, key)]).finally(() => (answered = true));
    await waitFor(() => sim.received('POST', '/v1/embeddings').length === 2, 'both requests to reach the upstream');
    g.child.kill('SIGTERM');
    await waitFor(() => refused(g), 'new connections to be refused', 5_000);
    // Refused while the requests are still in flight (the upstream holds them 3 s).
    expect(answered).toBe(false);
    const answers = await inflight;
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(await g.exited).toBe(0);
    expect(g.output.join('\n')).toMatch(/shutdown complete/);
    // Both answers were billed before the process exited: the store, read afterwards, shows it.
    const store = await openStore(database, { dataDir: dir });
    try {
      const acct = (await store.getAccountByName(account))!;
      const charges = (await store.listLedger(acct.id)).filter((e) => e.kind === 'charge');
      expect(charges).toHaveLength(2);
      expect(acct.balance).toBe(before + charges[0]!.delta + charges[1]!.delta);
      expect(acct.balance).toBeLessThan(before);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('a second SIGTERM ends the drain at once with exit code 1', async () => {
    const { gw: g, key } = await start();
    sim.latencyMs = 20_000;
    const slow = embed(g, key).catch((e: unknown) => e);
    await waitFor(() => sim.received('POST', '/v1/embeddings').length === 1, 'the request to reach the upstream');
    g.child.kill('SIGTERM');
    await waitFor(() => refused(g), 'the drain to begin (new connections refused)');
    const at = Date.now();
    g.child.kill('SIGTERM');
    expect(await g.exited).toBe(1);
    expect(Date.now() - at).toBeLessThan(PROMPT_MS);
    await slow;
  }, 30_000);

  it('the deadline (server.shutdown_timeout_ms) ends a drain that takes too long', async () => {
    const { gw: g, key } = await start({ shutdown_timeout_ms: 700 });
    sim.latencyMs = 20_000;
    const slow = embed(g, key).catch((e: unknown) => e);
    await waitFor(() => sim.received('POST', '/v1/embeddings').length === 1, 'the request to reach the upstream');
    const at = Date.now();
    g.child.kill('SIGTERM');
    expect(await g.exited).toBe(1);
    expect(Date.now() - at).toBeGreaterThanOrEqual(600);
    expect(Date.now() - at).toBeLessThan(PROMPT_MS);
    // Cut shortly before the deadline (shutdown.ts, cutMarginMs): answered, not dropped.
    expect(g.output.join('\n')).toMatch(/shutdown deadline near: cutting the requests still in flight/);
    const answer = (await slow) as Awaited<ReturnType<typeof embed>>;
    expect(answer.status, answer.text).toBe(503);
    expect(answer.json.error.code).toBe('shutting_down');
  }, 30_000);

  it('SIGHUP drains as SIGTERM does: the request in flight is answered, exit code 0', async () => {
    const { gw: g, key } = await start();
    sim.latencyMs = 1_500;
    const inflight = embed(g, key);
    await waitFor(() => sim.received('POST', '/v1/embeddings').length === 1, 'the request to reach the upstream');
    g.child.kill('SIGHUP');
    await waitFor(() => refused(g), 'new connections to be refused', 5_000);
    expect((await inflight).status).toBe(200);
    expect(await g.exited).toBe(0);
    const out = g.output.join('\n');
    expect(out).toMatch(/"signal":"SIGHUP".*shutting down/);
    expect(out).toMatch(/shutdown complete/);
  }, 30_000);

  it('with nothing in flight, SIGTERM exits 0 promptly', async () => {
    const { gw: g } = await start();
    const at = Date.now();
    g.child.kill('SIGTERM');
    expect(await g.exited).toBe(0);
    expect(Date.now() - at).toBeLessThan(PROMPT_MS);
  }, 30_000);
});
