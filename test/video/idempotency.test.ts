import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { fingerprintOf } from '../../src/routes/idempotency.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { postgresBackend, sqliteBackend, type Backend } from '../store/harness.js';

/**
 * Idempotency-Key on the spec's create (POST /v1/videos/generations), over real HTTP against the
 * Sora simulator, on SQLite and on PostgreSQL: a repeat makes no second job, holds nothing more and
 * counts against no rate limit; a repeat while the first runs is 409, another request under the key
 * 422; a failed request leaves the key free; keys are per account; an abandoned key is taken over.
 */
const BODY = { model: 'sora-2', prompt: 'a fox in the snow', seconds: 4 };
const ENDPOINT = 'POST /v1/videos/generations';
const creates = (sim: SimServer) => sim.received('POST', '/v1/videos').length;

describe.each([
  ['sqlite', sqliteBackend],
  ['postgres', postgresBackend],
] as const)('Idempotency-Key on %s', (_name, backend: () => Backend) => {
  let sim: SimServer;
  let gw: TestGateway;
  let db: Backend;

  beforeAll(async () => {
    sim = await sora.simulator.start({ taskMs: 60_000 });
    db = backend();
    const { url } = await db.fresh();
    gw = await startTestGateway({ ...upstreamsFor([{ module: sora, sim }]), database: url });
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
    await db?.dispose();
  });

  const create = (key: string, idem: string | undefined, body: object = BODY, path = '/v1/videos/generations') =>
    call(gw, 'POST', path, { key, body, headers: idem === undefined ? {} : { 'idempotency-key': idem } });
  const accountId = async (name: string) => (await gw.services.store.getAccountByName(name))!.id;
  const holds = async (name: string) => (await gw.services.store.listLedger(await accountId(name))).filter((e) => e.kind === 'hold');

  it('a repeat answers the same job with the same status, holds nothing more and counts against no rate limit', async () => {
    const { key, account } = await gw.newKey(100, { limits: { video: { rpm: 1 } } });
    const first = await create(key, 'order-1');
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const balance = await gw.balance(account);
    const before = creates(sim);

    // The same fields in another order are the same request.
    const again = await create(key, 'order-1', { seconds: 4, prompt: BODY.prompt, model: 'sora-2' });
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json.id).toBe(first.json.id);
    expect(again.json).toMatchObject({ object: first.json.object, status: 'processing', model: 'sora-2' });
    expect(creates(sim)).toBe(before);
    expect(await gw.balance(account)).toBe(balance);
    expect(await holds(account)).toHaveLength(1);
    // The quota's one request a minute went to the first: replays were not admitted, a new request is.
    expect((await create(key, 'order-1')).status).toBe(200);
    expect((await create(key, 'order-2')).status).toBe(429);
  });

  it('a repeat while the first is processed is 409 idempotency_key_in_use; one job in the end', async () => {
    const { key, account } = await gw.newKey(100);
    let answer!: () => void;
    sim.inject({ kind: 'hold', until: new Promise<void>((r) => (answer = r)) }, 1, /^\/v1\/videos$/, 'POST');
    const before = creates(sim);
    const first = create(key, 'same');
    await expect.poll(() => creates(sim), { timeout: 5_000 }).toBe(before + 1);
    const during = await Promise.all([create(key, 'same'), create(key, 'same'), create(key, 'same')]);
    for (const r of during) {
      expect(r.status, r.text).toBe(409);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_in_use', param: 'Idempotency-Key' });
      expect(r.headers.get('retry-after')).toBe('1');
    }
    answer();
    const made = await first;
    expect(made.status, made.text).toBe(200);
    const after = await create(key, 'same');
    expect(after.json.id).toBe(made.json.id);
    expect(creates(sim)).toBe(before + 1);
    expect(await holds(account)).toHaveLength(1);
  });

  it('concurrent requests with one key make one job: the others are 409 or the same job', async () => {
    const { key, account } = await gw.newKey(100);
    const before = creates(sim);
    const all = await Promise.all(Array.from({ length: 8 }, () => create(key, 'burst')));
    const ok = all.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((r) => r.json.id)).size).toBe(1);
    for (const r of all.filter((x) => x.status !== 200)) expect(r.json.error.code, r.text).toBe('idempotency_key_in_use');
    expect(creates(sim)).toBe(before + 1);
    expect(await holds(account)).toHaveLength(1);
  });

  it('the key with other fields or on another endpoint is 422 idempotency_key_reused', async () => {
    const { key } = await gw.newKey(100);
    expect((await create(key, 'k-reuse')).status).toBe(200);
    const before = creates(sim);
    const other = await create(key, 'k-reuse', { ...BODY, prompt: 'a cat' });
    expect(other.status).toBe(422);
    expect(other.json.error).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    // The very same body on another create route.
    const elsewhere = await create(key, 'k-reuse', BODY, '/v1/videos');
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.json.error.code).toBe('idempotency_key_reused');
    expect(creates(sim)).toBe(before);
  });

  it('a request that failed leaves its key free: the retry is processed anew', async () => {
    const { key, account } = await gw.newKey(0);
    // 402: nothing made; the retry after a top-up goes through.
    const poor = await create(key, 'k-fail');
    expect(poor.status).toBe(402);
    await gw.services.admin.topUp(account, 100);
    // The vendor refuses it: the job is refused, the key is free again.
    sim.inject({ kind: 'status', status: 400, json: { error: { message: 'bad prompt', type: 'invalid_request_error' } } }, 1, /^\/v1\/videos$/, 'POST');
    const refused = await create(key, 'k-fail');
    expect(refused.status, refused.text).toBe(400);
    const retried = await create(key, 'k-fail');
    expect(retried.status, retried.text).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect((await create(key, 'k-fail')).json.id).toBe(retried.json.id);
  });

  it("keys are per account: another account's same key makes its own job, and each replays its own", async () => {
    const a = await gw.newKey(100);
    const b = await gw.newKey(100);
    const madeA = await create(a.key, 'shared-value');
    const madeB = await create(b.key, 'shared-value');
    expect(madeB.status).toBe(200);
    expect(madeB.headers.get('idempotent-replayed')).toBeNull();
    expect(madeB.json.id).not.toBe(madeA.json.id);
    expect((await create(a.key, 'shared-value')).json.id).toBe(madeA.json.id);
    expect((await create(b.key, 'shared-value')).json.id).toBe(madeB.json.id);
    expect(await holds(b.account)).toHaveLength(1);
  });

  it('a key whose request died without a job is taken over once past its bound; a young one is in use', async () => {
    const { key, account } = await gw.newKey(100);
    const id = await accountId(account);
    const now = Date.now();
    const record = (idem: string, at: number) =>
      gw.services.store.claimIdempotencyKey({ accountId: id, key: idem, claim: `dead-${idem}`, endpoint: ENDPOINT, fingerprint: fingerprintOf({ fields: BODY }), now: at, expiresAt: at + 86_400_000 });
    expect(await record('young', now)).toBe('claimed');
    expect(await record('abandoned', now - 10 * 60_000)).toBe('claimed');
    expect((await create(key, 'young')).status).toBe(409);
    const taken = await create(key, 'abandoned');
    expect(taken.status, taken.text).toBe(200);
    expect((await create(key, 'abandoned')).json.id).toBe(taken.json.id);
    // Expired records are pruned by the refresher's pass.
    expect(await record('old', now - 2 * 86_400_000)).toBe('claimed');
    await gw.services.poller.tick();
    expect(await gw.services.store.claimIdempotencyKey({ accountId: id, key: 'old', claim: 'c', endpoint: 'x', fingerprint: 'y', now, expiresAt: now + 1 })).toBe('claimed');
  });

  it('an Idempotency-Key that is not 1-255 printable ASCII characters is 400 naming the header', async () => {
    const { key } = await gw.newKey(100);
    const before = creates(sim);
    for (const bad of ['', 'x'.repeat(256), 'a\tb']) {
      const r = await create(key, bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_parameter', param: 'Idempotency-Key' });
    }
    expect(creates(sim)).toBe(before);
    expect((await create(key, `${'x'.repeat(254)}~`)).status).toBe(200);
  });
});
