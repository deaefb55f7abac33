import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone } from '../helpers/video.js';

/**
 * Rotating the id secret (`secret`, which seals video ids and signs links) across several instances
 * sharing one store, as a rolling restart does: for a while some instances run the new list and
 * some the old one, and a client's next request may reach either.
 *
 * The last secret of the list seals and signs; every listed one opens and verifies. Adding the new
 * secret at the end in one step (`[old]` to `[old, new]`) makes the restarted instances seal under
 * a secret the others do not know yet: ids and links made there fail on the others until the roll
 * is done. Two steps keep every instance able to read what any other makes: first `[new, old]`
 * everywhere (the new secret known, the old one still sealing), then `[old, new]` (the new one
 * sealing, known everywhere already). docs/configuration.md (`secret`) gives the procedure.
 */
const OLD = 'rotation-old-secret-0123456789';
const NEW = 'rotation-new-secret-0123456789';
let sim: SimServer;
let dir: string;
let running: TestGateway[] = [];

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 20 });
  dir = mkdtempSync(join(tmpdir(), 'gw-rotation-'));
});
afterEach(async () => {
  await Promise.all(running.map((g) => g.close().catch(() => undefined)));
  running = [];
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One instance with `secret` on the store (SQLite file and data dir) given. */
async function instance(database: string, dataDir: string, secret: string[]): Promise<TestGateway> {
  const d = sora.simulator.demo(sim);
  const gw = await startTestGateway({
    database,
    data_dir: dataDir,
    secret,
    upstreams: [{ ...d.options, name: 'sora-sim', vendor: 'sora', base_url: sim.url, api_key: d.apiKey, models: d.models.map((m) => m.name) }],
    models: Object.fromEntries(d.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
  });
  running.push(gw);
  return gw;
}

let stores = 0;
/** Two instances on one new store, each with its own secret list. */
async function pair(a: string[], b: string[]): Promise<[TestGateway, TestGateway]> {
  const n = ++stores;
  const database = `sqlite:${join(dir, `gateway-${n}.db`)}`;
  const dataDir = join(dir, `data-${n}`);
  return [await instance(database, dataDir, a), await instance(database, dataDir, b)];
}

/** A rolling restart's step: `gw` closed, another started on its store with `secret`. */
async function restart(gw: TestGateway, secret: string[]): Promise<TestGateway> {
  const { database, data_dir } = gw.services.config;
  await gw.close();
  running = running.filter((g) => g !== gw);
  return instance(database, data_dir, secret);
}

/** A completed job made on `gw`: its id, and its output_url as a path (to ask any instance). */
async function jobOn(gw: TestGateway, key: string): Promise<{ id: string; link: string }> {
  const model = sora.simulator.demo(sim).models[0]!.name;
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'rotation', seconds: 4 } });
  expect(created.status, created.text).toBe(200);
  const job = await pollUntilDone(gw, key, created.json.id);
  expect(job.status).toBe('completed');
  const url = new URL(job.output_url);
  return { id: job.id, link: url.pathname + url.search };
}

/** Whether `gw` opens the id (200 on GET) and plays the link (200 without a key). */
async function reads(gw: TestGateway, key: string, job: { id: string; link: string }): Promise<[number, number]> {
  const got = await call(gw, 'GET', `/v1/videos/${job.id}`, { key });
  const link = await fetch(gw.url + job.link);
  await link.arrayBuffer();
  return [got.status, link.status];
}

describe('rotating the id secret across instances sharing a store', () => {
  it('adding the new secret at the end in one step: ids and links made on a restarted instance fail on the others', async () => {
    const [a, b] = await pair([OLD], [OLD]);
    const { key } = await a.newKey(10);
    const restarted = await restart(a, [OLD, NEW]);
    const made = await jobOn(restarted, key);
    const [id, link] = await reads(b, key, made);
    expect(id).toBe(404);
    expect(link).toBe(401);
  }, 30_000);

  it('two steps, [new, old] everywhere then [old, new]: every id and link opens on every instance at every moment', async () => {
    let [a, b] = await pair([OLD], [OLD]);
    const { key } = await a.newKey(10);
    const before = await jobOn(a, key);

    // Step 1, half rolled out: a knows the new secret, the old one still seals everywhere.
    a = await restart(a, [NEW, OLD]);
    const step1 = [before, await jobOn(a, key), await jobOn(b, key)];
    for (const job of step1) for (const gw of [a, b]) expect(await reads(gw, key, job)).toEqual([200, 200]);

    // Step 1 done; step 2 half rolled out: a seals under the new secret, which b already knows.
    b = await restart(b, [NEW, OLD]);
    a = await restart(a, [OLD, NEW]);
    const step2 = [...step1, await jobOn(a, key), await jobOn(b, key)];
    for (const job of step2) for (const gw of [a, b]) expect(await reads(gw, key, job)).toEqual([200, 200]);

    // Step 2 done: everything made since it began is sealed under the new secret.
    b = await restart(b, [OLD, NEW]);
    const done = [...step2, await jobOn(a, key), await jobOn(b, key)];
    for (const job of done) for (const gw of [a, b]) expect(await reads(gw, key, job)).toEqual([200, 200]);
  }, 60_000);
});
