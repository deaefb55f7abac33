import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { dropSchema, pgSchemaUrl } from '../store/harness.js';

/**
 * The gateway keeps a vendor's number that a double cannot hold as a marker string (U+E000, `num:`,
 * the digits) and writes it back as a bare number in every JSON answer. A string that merely looks
 * like a marker, sent by the client or by the vendor, must come back as that same string, never as a
 * number: in the create answer, the polls and the operator's view, in the vendor's request, and from
 * the store after a restart, on SQLite and on PostgreSQL.
 */
const LOOKALIKE = '\uE000num:123';
/** What the escape would look like, sent by a client that knows of it: it is a string like any. */
const ESCAPE_LOOKALIKE = '\uE000str:\uE000num:45';

const CREATE = /^\/v1\/videos$/;
const POLL = /^\/v1\/videos\/video_lookalike$/;
/** The vendor's own strings that look like markers: one written as it is, one escaped in its JSON text. */
const VENDOR_FIELDS = '"note":"\uE000num:123","escaped":"\\ue000num:7","tagged":"\uE000str:x","big":9007199254740993';

let sim: SimServer;
const sqliteDir = mkdtempSync(join(tmpdir(), 'gw-lookalike-'));
const schema = `lookalike_${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  sim = await sora.simulator.start({ taskMs: 60_000 });
});
afterAll(async () => {
  await sim?.close();
  rmSync(sqliteDir, { recursive: true, force: true });
});

const backends: [string, () => Record<string, unknown>][] = [
  ['sqlite', () => ({ database: `sqlite:${join(sqliteDir, 'gateway.db')}` })],
  ['postgres', () => ({ database: pgSchemaUrl(schema) })],
];

/** The vendor's lookalikes as strings, and its real number as the number it wrote. */
function expectVendorStrings(answer: { json: any; text: string }): void {
  expect(answer.json.vendor_data).toMatchObject({ note: LOOKALIKE, escaped: '\uE000num:7', tagged: '\uE000str:x' });
  expect(answer.text).toContain('"big":9007199254740993');
}

describe.each(backends)('marker lookalikes on %s', (backend, database) => {
  let gw: TestGateway;
  const config = () => ({ ...upstreamsFor([{ module: sora, sim }]), ...database() });

  beforeAll(async () => {
    gw = await startTestGateway(config());
  });
  afterAll(async () => {
    await gw?.close();
    if (backend === 'postgres') await dropSchema(schema);
  });

  it('client and vendor strings that look like markers come back as strings, also after a restart', async () => {
    sim.reset();
    sim.inject({ kind: 'status', status: 200, body: `{"id":"video_lookalike","object":"video","status":"queued","progress":0,${VENDOR_FIELDS}}` }, 1, CREATE);
    sim.inject({ kind: 'status', status: 200, body: `{"id":"video_lookalike","object":"video","status":"in_progress","progress":40,${VENDOR_FIELDS}}` }, 10_000, POLL);
    const { key } = await gw.newKey(100);

    const body = { model: 'sora-2', prompt: LOOKALIKE, seconds: '4', user: ESCAPE_LOOKALIKE, [LOOKALIKE]: 'a key that looks like a marker' };
    const created = await call(gw, 'POST', '/v1/videos', { key, body });
    expect(created.status, created.text).toBe(200);
    expect(created.json.prompt).toBe(LOOKALIKE);
    expectVendorStrings(created);

    // The vendor got the client's strings as they were sent.
    const sent = sim.lastReceived('POST', CREATE)!;
    expect(sent.json).toMatchObject({ prompt: LOOKALIKE, user: ESCAPE_LOOKALIKE, [LOOKALIKE]: 'a key that looks like a marker' });

    const id = created.json.id as string;
    const polled = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(polled.status, polled.text).toBe(200);
    expect(polled.json.prompt).toBe(LOOKALIKE);
    expectVendorStrings(polled);

    // The operator's view writes the vendor's answer the same way.
    const admin = await call(gw, 'GET', `/admin/jobs/${id}`, { key: gw.adminToken });
    expect(admin.status, admin.text).toBe(200);
    expectVendorStrings(admin);

    // From the store after a restart: every poll fails now, so what is shown is what was stored.
    await gw.close();
    sim.clearFaults();
    sim.inject({ kind: 'status', status: 503, json: { error: { message: 'busy' } } }, 10_000, POLL);
    gw = await startTestGateway(config());
    const again = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(again.status, again.text).toBe(200);
    expect(again.json.prompt).toBe(LOOKALIKE);
    expectVendorStrings(again);
    sim.clearFaults();
  });

  it('a form field that looks like a marker comes back as the string it was', async () => {
    sim.reset();
    const { key } = await gw.newKey(100);
    const form = new FormData();
    form.set('model', 'sora-2');
    form.set('prompt', LOOKALIKE);
    form.set('seconds', '4');
    const res = await fetch(`${gw.url}/v1/videos`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(JSON.parse(text).prompt).toBe(LOOKALIKE);
    expect(sim.lastReceived('POST', CREATE)!.json.prompt).toBe(LOOKALIKE);
  });
});
