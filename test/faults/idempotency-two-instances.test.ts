import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { postgresBackend } from '../store/harness.js';

/**
 * Two gateway instances on one PostgreSQL schema, the same Idempotency-Key sent to both at once
 * (as a client retrying through a load balancer does): one job is made, held once and sent to the
 * vendor once; every other answer is that job (replayed) or 409 idempotency_key_in_use, and once
 * the first has answered both instances replay it.
 */
const pg = postgresBackend();
let sim: SimServer;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 60_000 });
  const { url } = await pg.fresh();
  const config = { ...upstreamsFor([{ module: sora, sim }]), database: url, secret: 'two-instances-idempotency-secret-0123' };
  a = await startTestGateway(config);
  b = await startTestGateway(config);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await sim?.close();
  await pg.dispose();
});

const BODY = { model: 'sora-2', prompt: 'two instances, one fox', seconds: 4 };
const creates = () => sim.received('POST', '/v1/videos').length;

describe('one Idempotency-Key sent to two instances at once', () => {
  it('makes one job, held once, whichever instance wins', async () => {
    const { key, account } = await a.newKey(100);
    for (let round = 0; round < 5; round++) {
      const idem = `race-${round}`;
      const before = creates();
      const all = await Promise.all(
        Array.from({ length: 10 }, (_, i) => call(i % 2 ? b : a, 'POST', '/v1/videos/generations', { key, body: BODY, headers: { 'idempotency-key': idem } })),
      );
      const ok = all.filter((r) => r.status === 200);
      expect(ok.length, all.map((r) => r.text).join('\n')).toBeGreaterThanOrEqual(1);
      expect(new Set(ok.map((r) => r.json.id)).size).toBe(1);
      for (const r of all.filter((x) => x.status !== 200)) expect(r.json.error.code, r.text).toBe('idempotency_key_in_use');
      expect(creates()).toBe(before + 1);
      for (const gw of [a, b]) {
        const again = await call(gw, 'POST', '/v1/videos/generations', { key, body: BODY, headers: { 'idempotency-key': idem } });
        expect(again.status).toBe(200);
        expect(again.headers.get('idempotent-replayed')).toBe('true');
        expect(again.json.id).toBe(ok[0]!.json.id);
      }
    }
    const id = (await a.services.store.getAccountByName(account))!.id;
    const ledger = await a.services.store.listLedger(id);
    expect(ledger.filter((e) => e.kind === 'hold')).toHaveLength(5);
    expect(await a.balance(account)).toBe(100_000_000 - 5 * 400_000);
  }, 60_000);
});
