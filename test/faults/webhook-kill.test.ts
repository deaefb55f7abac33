import { createServer, type IncomingMessage } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { killLeftover, soraProcessConfig, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';
import { listenOnLoopback, shutReceiver } from '../webhooks/receiver.js';

/**
 * kill -9 of the gateway while a webhook delivery is in flight (the receiver has the request and has
 * not answered): the outbox row stays leased by a dead process. After a restart the lease runs out
 * and the event is delivered (at least once: the receiver may see it twice, with the same webhook-id),
 * the row ends delivered, not stuck pending or leased. `npm run build` must have run.
 */
const ADMIN = 'webhook-kill-admin-token-0123456789';
let sim: SimServer;
let dir: string;
let gw: GatewayProcess | undefined;
const received: { id: string; body: string; at: number }[] = [];
/** The first delivery is held open (never answered); later ones are answered 200. */
let holdFirst = true;
const receiver = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    received.push({ id: String(req.headers['webhook-id']), body, at: Date.now() });
    if (holdFirst) {
      holdFirst = false;
      return;
    }
    res.writeHead(200).end('ok');
  });
});
let receiverUrl: string;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 50 });
  dir = mkdtempSync(join(tmpdir(), 'gw-webhook-kill-'));
  receiverUrl = `${await listenOnLoopback(receiver)}/hook`;
});
afterEach(async () => {
  await killLeftover(gw);
  gw = undefined;
});
afterAll(async () => {
  await shutReceiver(receiver);
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

function config(): Record<string, unknown> {
  return soraProcessConfig(dir, sim, sora.simulator.demo(sim), {
    admin_token: ADMIN,
    secret: 'webhook-kill-secret-0123456789abcdef',
    video: { poll_interval_ms: 100, refresher_interval_ms: 100 },
    // The shortest lease the config allows for a 1 s attempt: the restarted process takes the row over after it.
    webhooks: { allow_private_networks: true, interval_ms: 100, timeout_ms: 1_000, lease_ms: 7_000, retry_base_ms: 1_000 },
  });
}

async function outbox(): Promise<{ state: string; lease_until: number | null; attempts: number }[]> {
  const store = await openStore(`sqlite:${join(dir, 'gateway.db')}`, { dataDir: dir });
  try {
    return (await store.driver.query('SELECT state, lease_until, attempts FROM webhook_outbox')) as never;
  } finally {
    await store.close();
  }
}

describe('kill -9 while a webhook delivery is in flight', () => {
  it('after the restart the event is delivered once the dead lease runs out, and the row ends delivered', async () => {
    gw = await startGatewayProcess(dir, config(), 'first.json');
    const headers = { authorization: `Bearer ${ADMIN}` };
    expect((await call(gw, 'POST', '/admin/accounts', { headers, body: { name: 'hooked', balance: '10' } })).status).toBe(201);
    const key = (await call(gw, 'POST', '/admin/keys', { headers, body: { account: 'hooked' } })).json.key as string;
    const hook = await call(gw, 'POST', '/admin/webhooks', { headers, body: { account: 'hooked', url: receiverUrl } });
    expect(hook.status, hook.text).toBe(201);
    const model = sora.simulator.demo(sim).models[0]!.name;
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'tell me when done', seconds: 4 } });
    expect(created.status, created.text).toBe(200);

    await waitFor(() => received.length === 1, 'the first delivery to reach the receiver', 10_000);
    gw.child.kill('SIGKILL');
    expect(await gw.exited).toBe('SIGKILL');
    const leased = await outbox();
    expect(leased.map((r) => r.state)).toEqual(['pending']);
    expect(leased[0]!.lease_until).toBeGreaterThan(Date.now());

    gw = await startGatewayProcess(dir, config(), 'second.json');
    await waitFor(async () => (await outbox())[0]!.state === 'delivered', 'the event to be delivered after the restart', 15_000, 200);
    expect(received.length).toBeGreaterThanOrEqual(2);
    // The same event both times: a receiver can tell the redelivery by its webhook-id.
    expect(new Set(received.map((r) => r.id)).size).toBe(1);
    expect(JSON.parse(received[1]!.body)).toMatchObject({ type: 'video.completed', data: { id: created.json.id } });
  }, 40_000);
});
