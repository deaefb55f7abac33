import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendors, type FakeVendors } from './fake-vendors.js';
import { asFloat32, post, startHarness, type Harness } from './harness.js';
import { answerWithLength, sizedUpstream } from './sized-answers.js';

/**
 * A client that sends `dimensions: N` must get vectors of N values or an error, never a 200 with
 * vectors of another length, and never a charge for them. An upstream answering another length (one
 * that ignored the parameter, or cut the vectors short) fails like a malformed answer: the next
 * upstream is tried, and with none left the client gets 502 `upstream_error` saying so, nothing charged.
 * Checked on the pass-through (one call, answer forwarded unparsed) and on the full parse (the request
 * split over calls of one input each, and Vertex, whose answers are always parsed).
 */
let wrong: FakeVendors;
let right: FakeVendors;
let h: Harness;
/** The length the wrong upstream answers when `dimensions` was sent. */
let wrongLength = 1536;

/** Upstream calls each fake has answered. */
const calls = { wrong: 0, right: 0 };



beforeAll(async () => {
  wrong = await startFakeVendors();
  right = await startFakeVendors();
  h = await startHarness(
    [
      // One upstream; `split` sends one input per call, so every answer is parsed in full.
      sizedUpstream(wrong, 'solo-forward', 'solo-forward'),
      sizedUpstream(wrong, 'solo-parsed', 'solo-parsed', { split: true }),
      sizedUpstream(wrong, 'solo-vertex', 'solo-vertex', { vendor: 'vertex' }),
      // Two upstreams, the wrong one first.
      sizedUpstream(wrong, 'pair-forward-wrong', 'pair-forward'),
      sizedUpstream(right, 'pair-forward-right', 'pair-forward', { priority: 2 }),
      sizedUpstream(wrong, 'pair-parsed-wrong', 'pair-parsed', { split: true }),
      sizedUpstream(right, 'pair-parsed-right', 'pair-parsed', { priority: 2, split: true }),
    ],
    { prices: { 'solo-forward': 1, 'solo-parsed': 1, 'solo-vertex': 1, 'pair-forward': 1, 'pair-parsed': 1 } },
  );
  answerWithLength(wrong, () => calls.wrong++, (requested) => (requested === undefined ? 8 : wrongLength));
  answerWithLength(right, () => calls.right++, (requested) => requested ?? 8);
});
afterAll(async () => {
  await h?.close();
  await wrong?.close();
  await right?.close();
});

/** Posts with a fresh account; returns the answer, what was charged and the charges written. */
async function attempt(body: Record<string, unknown>) {
  const { key, accountId } = await h.newKey(100);
  const before = await h.balance(accountId);
  const res = await post(h, key, body);
  const charges = (await h.store.listLedger(accountId)).filter((e) => e.kind === 'charge');
  return { res, charged: before - (await h.balance(accountId)), charges };
}

const inputs = ['first input', 'second input', 'third input'];
const cases = [
  { what: 'float, 1,536 values for 256', encoding_format: 'float', dimensions: 256, length: 1536 },
  { what: 'base64, 299 values for 300', encoding_format: 'base64', dimensions: 300, length: 299 },
] as const;

describe('vectors of another length than the requested dimensions', () => {
  for (const model of ['solo-forward', 'solo-parsed', 'solo-vertex'])
    for (const c of cases) {
      if (model === 'solo-vertex' && c.encoding_format === 'base64') continue;
      it(`${model}, ${c.what}: 502 upstream_error, nothing charged; the same size again is a 400 with no call`, async () => {
        wrongLength = c.length;
        const input = model === 'solo-parsed' ? inputs : 'one input';
        const { res, charged, charges } = await attempt({ model, input, encoding_format: c.encoding_format, dimensions: c.dimensions });
        expect(res.status, res.text).toBe(502);
        expect(res.json.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
        expect(res.json.error.message).toContain(`does not match the requested dimensions (${c.dimensions})`);
        // The gateway's words only: no upstream's name or vendor.
        expect(res.json.error.message).not.toMatch(/solo|Vertex|OpenAI/);
        expect(charged).toBe(0);
        expect(charges).toHaveLength(0);
        // The upstream is remembered as not making that size: a repeat costs it no unbilled work.
        // (A split request's sibling calls, cancelled by the first failure, may still be answered.)
        await new Promise((r) => setTimeout(r, 100));
        const callsBefore = calls.wrong;
        const again = await attempt({ model, input: inputs, encoding_format: c.encoding_format, dimensions: c.dimensions });
        expect(again.res.status, again.res.text).toBe(400);
        expect(again.res.json.error).toMatchObject({ type: 'invalid_request_error', param: 'dimensions' });
        expect(again.charged).toBe(0);
        expect(calls.wrong).toBe(callsBefore);
      });
    }

  for (const model of ['pair-forward', 'pair-parsed'])
    for (const c of cases)
      it(`${model}, ${c.what}: the next upstream answers, and only it is charged`, async () => {
        wrongLength = c.length;
        calls.wrong = calls.right = 0;
        const { res, charged, charges } = await attempt({ model, input: inputs, encoding_format: c.encoding_format, dimensions: c.dimensions });
        expect(res.status, res.text).toBe(200);
        expect(calls.wrong).toBeGreaterThan(0);
        expect(calls.right).toBeGreaterThan(0);
        for (const item of res.json.data) expect(asFloat32(item.embedding)).toHaveLength(c.dimensions);
        expect(charges).toHaveLength(1);
        expect(charges[0]!.upstream).toBe(`${model}-right`);
        expect(charged).toBe(-charges[0]!.delta);
        expect(charged).toBeGreaterThan(0);
      });

  it('after a miss the upstream is skipped for that model and size only, the next one answering at once', async () => {
    wrongLength = 1536;
    calls.wrong = calls.right = 0;
    expect((await attempt({ model: 'pair-forward', input: 'x', dimensions: 512 })).res.status).toBe(200);
    expect(calls).toEqual({ wrong: 1, right: 1 });
    expect((await attempt({ model: 'pair-forward', input: 'x', dimensions: 512 })).res.status).toBe(200);
    expect(calls).toEqual({ wrong: 1, right: 2 });
    // Another size is tried there again.
    expect((await attempt({ model: 'pair-forward', input: 'x', dimensions: 640 })).res.status).toBe(200);
    expect(calls).toEqual({ wrong: 2, right: 3 });
  });

  it('a mismatch does not count against the circuit: one client cannot move others off the upstream', async () => {
    wrongLength = 1536;
    for (let i = 0; i < 6; i++) expect((await attempt({ model: 'pair-forward', input: 'x', dimensions: 256 })).res.status).toBe(200);
    expect(h.catalog.circuits.failuresOf('pair-forward-wrong')).toBe(0);
    const { res, charges } = await attempt({ model: 'pair-forward', input: 'x' });
    expect(res.status).toBe(200);
    expect(charges[0]!.upstream).toBe('pair-forward-wrong');
  });
});

describe('the routes taken, and requests without dimensions', () => {
  it('one call forwards the answer, a split request parses it', async () => {
    const ctx = await h.context((await h.newKey(100)).key);
    for (const [model, forwarded] of [['solo-forward', true], ['solo-parsed', false]] as const)
      for (const encoding_format of ['float', 'base64']) {
        const out = await h.service.create(ctx, h.catalog.model(model)!, { model, input: inputs, encoding_format });
        expect(out.forwarded, `${model} ${encoding_format}`).toBe(forwarded);
      }
  });

  it('without dimensions, vectors of any one length are served and charged as before', async () => {
    for (const model of ['solo-forward', 'solo-parsed', 'solo-vertex'])
      for (const encoding_format of ['float', 'base64']) {
        const { res, charged } = await attempt({ model, input: inputs, encoding_format });
        expect(res.status, `${model} ${encoding_format}: ${res.text}`).toBe(200);
        for (const item of res.json.data) expect(asFloat32(item.embedding)).toHaveLength(8);
        expect(charged).toBeGreaterThan(0);
      }
  });

  it('vectors of the requested length are served on every route', async () => {
    // A size no upstream has missed (a miss is remembered for the model and size: see above).
    wrongLength = 128;
    for (const model of ['solo-forward', 'solo-parsed', 'solo-vertex'])
      for (const encoding_format of ['float', 'base64']) {
        const { res, charged } = await attempt({ model, input: inputs, encoding_format, dimensions: 128 });
        expect(res.status, `${model} ${encoding_format}: ${res.text}`).toBe(200);
        for (const item of res.json.data) expect(asFloat32(item.embedding)).toHaveLength(128);
        expect(charged).toBeGreaterThan(0);
      }
  });
});
