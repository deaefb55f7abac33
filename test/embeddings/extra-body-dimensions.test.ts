import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendors, type FakeVendors } from './fake-vendors.js';
import { asFloat32, post, startHarness, type Harness } from './harness.js';
import { answerWithLength, sizedUpstream } from './sized-answers.js';

/**
 * A vector size asked for through `extra_body` (or an unknown top-level field) is what goes upstream
 * when it is the vendor's own size field: `extra_body.dimensions` for OpenAI-compatible upstreams,
 * `outputDimensionality` (flat or under `parameters`) for Vertex. The answer is held to that size as
 * to a top-level `dimensions`: another length is the upstream's failure (next upstream, 502 when none
 * is left, nothing charged), the miss is remembered, and a repeat every upstream would miss is a 400
 * naming the field the size was written in.
 */
let wrong: FakeVendors;
let right: FakeVendors;
let h: Harness;
/** The length the wrong upstream answers whenever a size is asked. */
const WRONG_LENGTH = 1536;
const calls = { wrong: 0, right: 0 };



const SOLO = ['solo-forward', 'solo-parsed', 'solo-vertex', 'solo-vertex-flat', 'solo-contradicted'];

beforeAll(async () => {
  wrong = await startFakeVendors();
  right = await startFakeVendors();
  h = await startHarness(
    [
      sizedUpstream(wrong, 'solo-forward', 'solo-forward'),
      sizedUpstream(wrong, 'solo-parsed', 'solo-parsed', { split: true }),
      sizedUpstream(wrong, 'solo-vertex', 'solo-vertex', { vendor: 'vertex' }),
      sizedUpstream(wrong, 'solo-vertex-flat', 'solo-vertex-flat', { vendor: 'vertex' }),
      sizedUpstream(wrong, 'solo-contradicted', 'solo-contradicted'),
      sizedUpstream(right, 'right-only', 'right-only'),
      sizedUpstream(right, 'right-vertex', 'right-vertex', { vendor: 'vertex' }),
      sizedUpstream(wrong, 'pair-wrong', 'pair'),
      sizedUpstream(right, 'pair-right', 'pair', { priority: 2 }),
    ],
    { prices: Object.fromEntries([...SOLO, 'right-only', 'right-vertex', 'pair'].map((m) => [m, 1])) },
  );
  answerWithLength(wrong, () => calls.wrong++, (requested) => (requested === undefined ? 8 : WRONG_LENGTH));
  answerWithLength(right, () => calls.right++, (requested) => requested ?? 8);
});
afterAll(async () => {
  await h?.close();
  await wrong?.close();
  await right?.close();
});

async function attempt(body: Record<string, unknown>) {
  const { key, accountId } = await h.newKey(100);
  const before = await h.balance(accountId);
  const res = await post(h, key, body);
  const charges = (await h.store.listLedger(accountId)).filter((e) => e.kind === 'charge');
  return { res, charged: before - (await h.balance(accountId)), charges };
}

const inputs = ['first input', 'second input', 'third input'];

describe('a size asked through extra_body', () => {
  const cases = [
    { model: 'solo-forward', size: 256, fields: { extra_body: { dimensions: 256 } }, param: 'extra_body.dimensions' },
    { model: 'solo-parsed', size: 300, fields: { encoding_format: 'base64', extra_body: { dimensions: 300 } }, param: 'extra_body.dimensions' },
    { model: 'solo-vertex', size: 256, fields: { extra_body: { parameters: { outputDimensionality: 256 } } }, param: 'extra_body.parameters.outputDimensionality' },
    // An unknown top-level field is an extra field too (the SDKs' extra_body option sends its keys so).
    { model: 'solo-vertex-flat', size: 128, fields: { outputDimensionality: 128 }, param: 'outputDimensionality' },
    // extra_body wins over the top-level field in the vendor's body: its size is the one held.
    { model: 'solo-contradicted', size: 64, fields: { dimensions: 1536, extra_body: { dimensions: 64 } }, param: 'extra_body.dimensions' },
  ];
  for (const c of cases)
    it(`${c.model}: another length is 502, nothing charged; a repeat is a 400 on ${c.param} with no call`, async () => {
      const { res, charged, charges } = await attempt({ model: c.model, input: c.model === 'solo-parsed' ? inputs : 'one input', ...c.fields });
      expect(res.status, res.text).toBe(502);
      expect(res.json.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
      expect(res.json.error.message).toContain(`does not match the requested dimensions (${c.size})`);
      expect(charged).toBe(0);
      expect(charges).toHaveLength(0);
      await new Promise((r) => setTimeout(r, 100));
      const callsBefore = calls.wrong;
      const again = await attempt({ model: c.model, input: inputs, ...c.fields });
      expect(again.res.status, again.res.text).toBe(400);
      expect(again.res.json.error).toMatchObject({ type: 'invalid_request_error', param: c.param });
      expect(again.res.json.error.message).toContain(`'${c.param}'`);
      expect(again.charged).toBe(0);
      expect(calls.wrong).toBe(callsBefore);
    });

  it('fails over to an upstream that makes the size, and only it is charged', async () => {
    calls.wrong = calls.right = 0;
    const { res, charges } = await attempt({ model: 'pair', input: inputs, extra_body: { dimensions: 200 } });
    expect(res.status, res.text).toBe(200);
    expect(calls).toEqual({ wrong: 1, right: 1 });
    for (const item of res.json.data) expect(asFloat32(item.embedding)).toHaveLength(200);
    expect(charges.map((c) => c.upstream)).toEqual(['pair-right']);
  });

  it('the size that goes upstream is served, even where the top-level field says another', async () => {
    const openai = await attempt({ model: 'right-only', input: inputs, dimensions: 512, extra_body: { dimensions: 96 } });
    expect(openai.res.status, openai.res.text).toBe(200);
    for (const item of openai.res.json.data) expect(asFloat32(item.embedding)).toHaveLength(96);
    expect(openai.charged).toBeGreaterThan(0);
    const vertex = await attempt({ model: 'right-vertex', input: inputs, dimensions: 512, outputDimensionality: 48 });
    expect(vertex.res.status, vertex.res.text).toBe(200);
    for (const item of vertex.res.json.data) expect(asFloat32(item.embedding)).toHaveLength(48);
  });
});
