import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { dropSchema, pgSchemaUrl } from '../store/harness.js';

/**
 * A job's vendor_data is what the vendor said, as it said it (spec: unknown vendor fields come
 * back losslessly). Every video vendor's simulator answers, over real HTTP, a create and a poll
 * carrying fields the gateway does not map: numbers a double cannot hold (they used to come back
 * rounded, in exponent form, as null and as 0), and fields only the create answer has (they used
 * to be dropped). The client's JSON text must hold them byte for byte, from the create on, after
 * polls, and from the store after a restart, on SQLite and on PostgreSQL.
 */
const NUMBERS = '"big2":9007199254740993,"big":123456789012345678901234567890,"fl":1e400,"neg":-0,"small":2.5';
const CREATED = '"create_only_field":"abc","queue_position":3';

interface VendorCase {
  create: RegExp;
  poll: RegExp;
  createAnswer(model: string): string;
  pollAnswer(model: string): string;
}

const veoOperation = (model: string) => `projects/veo-sim-project/locations/us-central1/publishers/google/models/${model}/operations/op-lossless`;

/** Each vendor's own create and running-poll answers (its documented shapes), with the extra fields. */
const CASES: Record<string, VendorCase> = {
  wan: {
    create: /video-synthesis$/,
    poll: /^\/api\/v1\/tasks\/t-lossless$/,
    createAnswer: () => `{"request_id":"r-1","output":{"task_id":"t-lossless","task_status":"PENDING"},${CREATED}}`,
    pollAnswer: () => `{"request_id":"r-2","output":{"task_id":"t-lossless","task_status":"RUNNING"},${NUMBERS}}`,
  },
  seedance: {
    create: /^\/api\/v3\/contents\/generations\/tasks$/,
    poll: /^\/api\/v3\/contents\/generations\/tasks\/cgt-lossless$/,
    createAnswer: () => `{"id":"cgt-lossless",${CREATED}}`,
    pollAnswer: () => `{"id":"cgt-lossless","status":"running",${NUMBERS}}`,
  },
  veo: {
    create: /:predictLongRunning$/,
    poll: /:fetchPredictOperation$/,
    createAnswer: (model) => `{"name":"${veoOperation(model)}",${CREATED}}`,
    pollAnswer: (model) => `{"name":"${veoOperation(model)}","done":false,${NUMBERS}}`,
  },
  sora: {
    create: /^\/v1\/videos$/,
    poll: /^\/v1\/videos\/video_lossless$/,
    createAnswer: () => `{"id":"video_lossless","object":"video","status":"queued","progress":0,${CREATED}}`,
    pollAnswer: () => `{"id":"video_lossless","object":"video","status":"in_progress","progress":40,${NUMBERS}}`,
  },
  'azure-sora': {
    create: /\/video\/generations\/jobs$/,
    poll: /\/video\/generations\/jobs\/task_lossless$/,
    createAnswer: () => `{"object":"video.generation.job","id":"task_lossless","status":"queued",${CREATED}}`,
    pollAnswer: () => `{"object":"video.generation.job","id":"task_lossless","status":"running",${NUMBERS}}`,
  },
  fal: {
    create: /^\/(?!\.well-known)[^/]+\/[^/]+(\/[^/]+)?$/,
    poll: /\/requests\/req-lossless\/status$/,
    createAnswer: () => `{"request_id":"req-lossless","status":"IN_QUEUE",${CREATED}}`,
    pollAnswer: () => `{"status":"IN_PROGRESS","logs":[],${NUMBERS}}`,
  },
};

const sims = new Map<string, SimServer>();
const modelOf = (id: string) => videoModules.find((m) => m.vendor.id === id)!.simulator.demo(sims.get(id)!).models[0]!.name;

beforeAll(async () => {
  for (const m of videoModules) sims.set(m.vendor.id, await m.simulator.start({ taskMs: 60_000 }));
});
afterAll(async () => {
  await Promise.all([...sims.values()].map((s) => s.close()));
  rmSync(sqliteDir, { recursive: true, force: true });
});

const schema = `lossless_${randomBytes(4).toString('hex')}`;
/** The SQLite file outlives each gateway (a test gateway removes its own data directory on close). */
const sqliteDir = mkdtempSync(join(tmpdir(), 'gw-lossless-'));
const backends: [string, () => Record<string, unknown>][] = [
  ['sqlite', () => ({ database: `sqlite:${join(sqliteDir, 'gateway.db')}` })],
  ['postgres', () => ({ database: pgSchemaUrl(schema) })],
];

function expectExactNumbers(text: string): void {
  for (const field of ['"big2":9007199254740993', '"big":123456789012345678901234567890', '"fl":1e400', '"neg":-0', '"small":2.5']) expect(text).toContain(field);
}

describe.each(backends)('on %s', (backend, database) => {
  let gw: TestGateway;
  const config = () => ({ ...upstreamsFor(videoModules.map((module) => ({ module, sim: sims.get(module.vendor.id)! }))), ...database() });

  beforeAll(async () => {
    gw = await startTestGateway(config());
  });
  afterAll(async () => {
    await gw?.close();
    if (backend === 'postgres') await dropSchema(schema);
  });

  it.each(videoModules.map((m) => [m.vendor.id]))('%s: create fields and exact numbers reach the client, also after a restart', async (vendorId) => {
    const sim = sims.get(vendorId)!;
    const c = CASES[vendorId]!;
    const model = modelOf(vendorId);
    sim.clearFaults();
    sim.inject({ kind: 'status', status: 200, body: c.createAnswer(model) }, 1, c.create);
    sim.inject({ kind: 'status', status: 200, body: c.pollAnswer(model) }, 10_000, c.poll);
    const { key } = await gw.newKey(100);

    const created = await call(gw, 'POST', '/v1/videos/generations', { key, body: { model, prompt: 'a red fox' } });
    expect(created.status, created.text).toBe(200);
    expect(created.json.vendor_data).toMatchObject({ create_only_field: 'abc', queue_position: 3 });
    // The task id is not repeated, except by the vendors whose poll vendor_data is their whole object.
    if (vendorId !== 'sora' && vendorId !== 'azure-sora') expect(JSON.stringify(created.json.vendor_data)).not.toContain('lossless');
    const id = created.json.id as string;

    const polled = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(polled.status, polled.text).toBe(200);
    expect(polled.json.status).toBe('processing');
    expectExactNumbers(polled.text);
    expect(polled.text).toContain('"create_only_field":"abc"');

    // The operator's view and the list are written the same way.
    const admin = await call(gw, 'GET', `/admin/jobs/${id}`, { key: gw.adminToken });
    expect(admin.status, admin.text).toBe(200);
    expectExactNumbers(admin.text);
    const list = await call(gw, 'GET', '/v1/videos', { key });
    expectExactNumbers(list.text);

    // From the store after a restart: the vendor now fails every poll, so the stored vendor_data is what is shown.
    await gw.close();
    sim.clearFaults();
    sim.inject({ kind: 'status', status: 503, json: { error: { message: 'busy' } } }, 10_000, c.poll);
    gw = await startTestGateway(config());
    const again = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(again.status, again.text).toBe(200);
    expect(again.json.status).toBe('processing');
    expectExactNumbers(again.text);
    expect(again.text).toContain('"create_only_field":"abc"');
    sim.clearFaults();
  });
});
