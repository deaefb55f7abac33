import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as fal } from '../../src/video/vendors/fal/index.js';
import { videoModule as seedance } from '../../src/video/vendors/seedance/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { Receiver, until } from '../spend/receiver.js';

/**
 * Vendor callbacks in: the gateway registers its own per-job URL with Seedance (callback_url) and fal
 * (fal_webhook); the simulators call back like the real services when the task finishes, and the job
 * settles within a second, long before the next poll (a minute here, no background refresher).
 */
const TASK_MS = 300;
let seedSim: SimServer;
let falSim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  seedSim = await seedance.simulator.start({ taskMs: TASK_MS });
  falSim = await fal.simulator.start({ taskMs: TASK_MS });
  gw = await startTestGateway({
    ...upstreamsFor([
      { module: seedance, sim: seedSim },
      { module: fal, sim: falSim },
    ]),
    // public_url turns vendor callbacks on (the helper then points it at the listening port).
    server: { public_url: 'http://127.0.0.1:1' },
    video: { poll_interval_ms: 60_000, refresher_interval_ms: 0, media: { allow_private_networks: true } },
  });
});
afterAll(async () => {
  await gw?.close();
  await seedSim?.close();
  await falSim?.close();
});

const modelOf = (m: typeof seedance, sim: SimServer) => m.simulator.demo(sim).models[0]!.name;
const TOKEN_URL = /\/callbacks\/video\/[A-Za-z0-9_-]{32}$/;

/** The job as stored: reads the status without triggering a refresh (a GET may refresh a due job). */
async function stored(publicId: string) {
  return (await gw.services.store.getJob(gw.services.video.deps.sealer.open(publicId)!.j))!;
}

async function settlesByCallback(model: string): Promise<string> {
  const { key, account } = await gw.newKey(100);
  const started = Date.now();
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'called back' } });
  expect(created.status, created.text).toBe(200);
  await until(async () => (await stored(created.json.id)).state !== 'processing', 10_000);
  // Ready after TASK_MS; settled within a second or two of that (more than one on a busy machine),
  // against a 60 s poll interval.
  expect(Date.now() - started).toBeLessThan(TASK_MS + 3_000);
  const job = (await call(gw, 'GET', `/v1/videos/${created.json.id}`, { key })).json;
  expect(job.status).toBe('completed');
  expect(job.usage.cost).toBeGreaterThan(0);
  // Charged exactly what was used (balance in micro-units), once.
  expect(await gw.balance(account)).toBe(100_000_000 - Math.round(job.usage.cost * 1e6));
  return created.json.id;
}

describe('vendor callbacks settle jobs at once', () => {
  it('Seedance: callback_url is the gateway callback, and the job settles through it', async () => {
    seedSim.reset();
    await settlesByCallback(modelOf(seedance, seedSim));
    const sent = seedSim.requests.find((r) => r.method === 'POST');
    expect(sent!.json.callback_url).toMatch(new RegExp(`^${gw.url}${TOKEN_URL.source}`));
  });

  it('fal: fal_webhook is the gateway callback, and the job settles through it', async () => {
    falSim.reset();
    await settlesByCallback(modelOf(fal, falSim));
    const submit = falSim.requests.find((r) => r.method === 'POST');
    expect(submit!.query.get('fal_webhook')).toMatch(new RegExp(`^${gw.url}${TOKEN_URL.source}`));
    expect(submit!.json.webhook_url).toBeUndefined();
  });

  it("a client's own Seedance callback_url reaches Seedance unchanged (and the client is called back)", async () => {
    const receiver = await Receiver.start();
    try {
      const { key } = await gw.newKey(100);
      seedSim.reset();
      const created = await call(gw, 'POST', '/v1/videos/generations', {
        key,
        body: { model: modelOf(seedance, seedSim), prompt: 'mine', callback_url: receiver.url },
      });
      expect(created.status, created.text).toBe(200);
      expect(seedSim.requests.find((r) => r.method === 'POST')!.json.callback_url).toBe(receiver.url);
      await until(() => receiver.log.length === 1, 5_000);
      expect(JSON.parse(receiver.log[0]!.body)).toMatchObject({ status: 'succeeded' });
      // No gateway callback was registered: the job waits for its next poll.
      await new Promise((r) => setTimeout(r, 300));
      const job = await stored(created.json.id);
      expect(job.state).toBe('processing');
      expect(job.callbackToken).toBeNull();
    } finally {
      await receiver.close();
    }
  });

  it('an unknown or malformed token is a 404 in the error shape; a callback for a settled job changes nothing', async () => {
    for (const token of ['x', 'A'.repeat(32), '..%2F..%2Fv1%2Fvideos']) {
      const r = await call(gw, 'POST', `/callbacks/video/${token}`, { body: {} });
      expect(r.status, token).toBe(404);
      expect(r.json.error.type).toBe('not_found');
      expect(r.text).not.toMatch(/at .*\.ts/);
    }
    const { key, account } = await gw.newKey(100);
    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(seedance, seedSim), prompt: 'twice' } });
    await until(async () => (await stored(created.json.id)).state === 'completed', 5_000);
    const balance = await gw.balance(account);
    const token = (await stored(created.json.id)).callbackToken!;
    // A forged body claiming failure is not read: the settled job and its charge stay as they are.
    const again = await call(gw, 'POST', `/callbacks/video/${token}`, { body: { status: 'failed', usage: { completion_tokens: 1 } } });
    expect(again.status).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    expect(await gw.balance(account)).toBe(balance);
    expect((await stored(created.json.id)).state).toBe('completed');
  });

  it('a flood of callbacks for one job costs one vendor poll per second, and the last one is not lost', async () => {
    const { key } = await gw.newKey(100);
    seedSim.settings.taskMs = 30_000;
    let created;
    try {
      created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model: modelOf(seedance, seedSim), prompt: 'flood' } });
    } finally {
      seedSim.settings.taskMs = TASK_MS;
    }
    expect(created.status, created.text).toBe(200);
    const job = await stored(created.json.id);
    const pollTimes = () => seedSim.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/${job.taskId}`)).map((r) => r.at);
    const polls = () => pollTimes().length;
    const replies = await Promise.all(Array.from({ length: 20 }, () => call(gw, 'POST', `/callbacks/video/${job.callbackToken}`, { body: {} })));
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    // One poll at once; the callbacks inside its one-second window arm exactly one trailing refresh,
    // at the window's end (told by when the simulator saw them: however late this test looks, the
    // second is not inside the first half of the window).
    await until(() => polls() >= 2, 5_000);
    const [first, second] = pollTimes();
    expect(second! - first!).toBeGreaterThanOrEqual(500);
    // Nothing more: the trailing refresh's own window had no callback.
    await new Promise((r) => setTimeout(r, 1_300));
    expect(polls()).toBe(2);
  });
});

describe('simulated vendor callbacks survive a failing receiver', () => {
  it('a callback answered 500 is retried; a receiver that is gone is given up on quietly', async () => {
    const receiver = await Receiver.start();
    const sim = await seedance.simulator.start({ taskMs: 50 });
    try {
      receiver.statuses = [500];
      const body = { model: modelOf(seedance, sim), content: [{ type: 'text', text: 'x' }], callback_url: receiver.url };
      const headers = { authorization: `Bearer ${seedance.simulator.demo(sim).apiKey}`, 'content-type': 'application/json' };
      const res = await fetch(`${sim.url}/api/v3/contents/generations/tasks`, { method: 'POST', headers, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      await until(() => receiver.accepted().length === 1, 3_000);
      expect(receiver.log.map((r) => r.status)).toEqual([500, 200]);
      // Nobody listening: the simulator's retries fail and stop, nothing throws.
      const gone = await Receiver.start();
      await gone.close();
      const res2 = await fetch(`${sim.url}/api/v3/contents/generations/tasks`, { method: 'POST', headers, body: JSON.stringify({ ...body, callback_url: gone.url }) });
      expect(res2.status).toBe(200);
      await new Promise((r) => setTimeout(r, 800));
    } finally {
      await sim.close();
      await receiver.close();
    }
  });
});
