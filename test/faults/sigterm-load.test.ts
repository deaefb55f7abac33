import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { call } from '../helpers/gateway.js';
import { startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';

/**
 * SIGTERM while clients keep sending embeddings requests over keep-alive connections (the real
 * process, bin/gateway.js). Every request ends cleanly: answered 200, refused 503 `shutting_down`
 * in the error shape, or its connection refused or closed before the gateway read it; never a 500.
 * Every 200 is in the ledger once the process has exited (the charge queue is written before the
 * store closes), nothing else is, the balance equals the ledger, and the exit is 0 within
 * `server.shutdown_timeout_ms`. `npm run build` must have run.
 */
const ADMIN = 'sigterm-load-admin-token-0123456789';
const CLIENTS = 8;
const SHUTDOWN_TIMEOUT_MS = 5_000;
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;

beforeAll(async () => {
  sim = await startOpenAISimulator();
  // Each request spends a little while at the upstream, so some are always in flight.
  sim.latencyMs = 30;
  dir = mkdtempSync(join(tmpdir(), 'gw-sigterm-load-'));
});
afterAll(async () => {
  if (gw && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SIGTERM under load', () => {
  it('ends every request cleanly, bills exactly the answered ones, and exits 0 within the drain time', async () => {
    const database = `sqlite:${join(dir, 'gateway.db')}`;
    const g = await startGatewayProcess(dir, {
      database,
      data_dir: join(dir, 'data'),
      admin_token: ADMIN,
      secret: 'sigterm-load-secret-0123456789abcdef',
      log_level: 'warn',
      server: { shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS },
      // Within the drain (config/load.ts refuses a delivery timeout the drain cannot wait out).
      webhooks: { timeout_ms: 1_000 },
      limits: { defaults: { embeddings: { rpm: 100_000, tpm: 100_000_000 } } },
      upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: ['text-embedding-3-small'] }],
      models: { 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 1000 } } },
    });
    gw = g;
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await call(g, 'POST', '/admin/accounts', { headers, body: { name: 'loaded', balance: '100' } })).status).toBe(201);
    const key = (await call(g, 'POST', '/admin/keys', { headers, body: { account: 'loaded' } })).json.key as string;

    const statuses: (number | 'closed')[] = [];
    const unclean: string[] = [];
    let stopped = false;
    const client = async () => {
      while (!stopped) {
        try {
          const r = await call(g, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'keep going' } });
          statuses.push(r.status);
          if (r.status === 503 && r.json?.error?.code !== 'shutting_down') unclean.push(r.text);
          if (r.status !== 200 && r.status !== 503) unclean.push(`${r.status} ${r.text}`);
        } catch {
          // Refused, or closed before the gateway read the request: the client can tell nothing ran.
          statuses.push('closed');
          if (g.child.exitCode !== null || g.child.signalCode !== null) break;
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, client));
    await waitFor(() => statuses.filter((s) => s === 200).length >= 50, 'the load to get going', 15_000);

    const termAt = Date.now();
    g.child.kill('SIGTERM');
    const code = await g.exited;
    const took = Date.now() - termAt;
    stopped = true;
    await load;

    expect(code, g.output.slice(-20).join('\n')).toBe(0);
    expect(took).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(unclean).toEqual([]);
    const ok = statuses.filter((s) => s === 200).length;
    const store = await openStore(database, { dataDir: dir });
    try {
      const acct = (await store.getAccountByName('loaded'))!;
      const entries = await store.listLedger(acct.id, { limit: 10_000 });
      const charges = entries.filter((e) => e.kind === 'charge');
      expect(charges.length, `${ok} answered 200`).toBe(ok);
      expect(acct.balance).toBe(entries.reduce((s, e) => s + e.delta, 0));
    } finally {
      await store.close();
    }
    console.info(`SIGTERM under load: ${ok} answered and billed, ${statuses.length - ok} refused or closed, exit 0 after ${took} ms`);
  }, 60_000);
});
