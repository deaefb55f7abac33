import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_VECTOR_DIMENSIONS, maxAnswerBytesFor, maxInputsPerCall } from '../../src/embeddings/answer-bounds.js';
import { VERTEX_MAX_INSTANCES } from '../../src/embeddings/vendors/vertex/adapter.js';
import { MODELS, startFakeVendors, type FakeVendors } from './fake-vendors.js';
import { post, startHarness, type Harness } from './harness.js';

/**
 * An embeddings call's answer is read only as far as its vectors can legitimately take
 * (answer-bounds.ts): one vector of at most MAX_VECTOR_DIMENSIONS values per input. A larger answer is
 * the upstream's failure, abandoned unread: parsing the 48 MB of one 12-million-value vector held the
 * event loop for about two seconds although it was under `server.max_answer_bytes`.
 */
let fake: FakeVendors;
let h: Harness;

beforeAll(async () => {
  fake = await startFakeVendors();
  h = await startHarness(fake.specs({ timeoutMs: 60_000 }), { prices: { [MODELS.vertex]: 1, [MODELS.bedrock]: 1, [MODELS.openai]: 1 } });
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});

async function attempt(body: Record<string, unknown>): Promise<{ status: number; charged: number; json: any }> {
  const { key, accountId } = await h.newKey(100);
  const before = await h.balance(accountId);
  const res = await post(h, key, body);
  return { status: res.status, charged: before - (await h.balance(accountId)), json: res.json };
}

interface Sent {
  /** Bytes handed to the connection before it closed (or all of them). */
  written: number;
  length: number;
  /** The whole answer was written. */
  finished: boolean;
}

/**
 * Streams a Vertex answer of about `total` bytes (one vector of `0.5`s) in 64 KiB writes, each after
 * the previous one drained, until it is written or the gateway closes the connection.
 */
async function streamHugeVector(res: ServerResponse, total: number, declared: boolean): Promise<Sent> {
  const head = Buffer.from('{"predictions":[{"embeddings":{"statistics":{"token_count":3},"values":[');
  const tail = Buffer.from('0.5]}}]}');
  const chunk = Buffer.from('0.5,'.repeat(16 * 1024));
  const n = Math.floor((total - head.length - tail.length) / chunk.length);
  const length = head.length + n * chunk.length + tail.length;
  let closed = false;
  const gone = new Promise<void>((r) => res.once('close', () => ((closed = true), r())));
  res.writeHead(200, { 'content-type': 'application/json', ...(declared ? { 'content-length': String(length) } : {}) });
  let written = head.length;
  res.write(head);
  for (let i = 0; i < n && !closed; i++) {
    written += chunk.length;
    if (!res.write(chunk)) await Promise.race([new Promise((r) => res.once('drain', r)), gone]);
  }
  if (closed) return { written, length, finished: false };
  res.end(tail);
  await gone;
  return { written: length, length, finished: true };
}

/** A pretty-printed Vertex answer (as Google's APIs write by default) of `inputs` vectors of `dims` long floats, padded with spaces to `size` bytes when given. */
function prettyVertexAnswer(inputs: number, dims: number, size?: number): Buffer {
  const values = new Array(dims).fill('          -1.2345678901234567e-05').join(',\n');
  const prediction = `    {\n      "embeddings": {\n        "statistics": {\n          "truncated": false,\n          "token_count": 3\n        },\n        "values": [\n${values}\n        ]\n      }\n    }`;
  const body = `{\n  "predictions": [\n${new Array(inputs).fill(prediction).join(',\n')}\n  ]\n`;
  const pad = size === undefined ? 0 : size - Buffer.byteLength(body) - 1;
  if (pad < 0) throw new Error(`the answer is already ${Buffer.byteLength(body)} bytes`);
  return Buffer.from(`${body}${' '.repeat(pad)}}`);
}

function send(res: ServerResponse, body: Buffer, declared: boolean): void {
  res.writeHead(200, { 'content-type': 'application/json', ...(declared ? { 'content-length': String(body.length) } : {}) });
  // Chunked answers in pieces, so the cap is met as bytes arrive rather than by a declared length.
  for (let i = 0; i < body.length; i += 64 * 1024) res.write(body.subarray(i, i + 64 * 1024));
  res.end();
}

describe('embeddings answers larger than their vectors can take', () => {
  for (const declared of [true, false])
    it(`a 48 MB vector for one input (${declared ? 'declared length' : 'chunked'}) is a 502 with no charge, and the gateway stops reading`, async () => {
      let sent: Promise<Sent> | undefined;
      fake.answer = ({ res }) => void (sent = streamHugeVector(res, 48 * 1024 * 1024, declared));
      const r = await attempt({ model: MODELS.vertex, input: 'a [hugedim]' });
      expect(r.status, JSON.stringify(r.json)).toBe(502);
      expect(r.json.error.code).toBe('upstream_answer_too_large');
      expect(r.charged).toBe(0);
      // The gateway closed the connection long before the answer's end: what was written before the
      // close is the little it read plus the sockets' buffers, not the 48 MB.
      const s = await sent!;
      expect(s.finished).toBe(false);
      expect(s.written).toBeLessThan(s.length / 2);
    });

  for (const declared of [true, false])
    it(`an answer of exactly the cap for one input is served, one byte more is refused (${declared ? 'declared length' : 'chunked'})`, async () => {
      const cap = maxAnswerBytesFor(1);
      let size = cap;
      fake.answer = ({ res }) => send(res, prettyVertexAnswer(1, MAX_VECTOR_DIMENSIONS, size), declared);
      const ok = await attempt({ model: MODELS.vertex, input: 'hello' });
      expect(ok.status, JSON.stringify(ok.json)).toBe(200);
      expect(ok.json.data[0].embedding).toHaveLength(MAX_VECTOR_DIMENSIONS);
      expect(ok.charged).toBeGreaterThan(0);

      size = cap + 1;
      const over = await attempt({ model: MODELS.vertex, input: 'hello' });
      expect(over.status).toBe(502);
      expect(over.json.error.code).toBe('upstream_answer_too_large');
      expect(over.charged).toBe(0);
    });

  it('the cap grows with the inputs of a call: 2,048 inputs split by Vertex batch size are served; the same bytes for one input are not', async () => {
    const sizes: number[] = [];
    fake.answer = ({ inputs, res }) => {
      const body = prettyVertexAnswer(inputs, 768);
      sizes.push(body.length);
      send(res, body, true);
    };
    const inputs = Array.from({ length: 2048 }, (_, i) => `input ${i}`);
    const ok = await attempt({ model: MODELS.vertex, input: inputs });
    expect(ok.status, JSON.stringify(ok.json)?.slice(0, 300)).toBe(200);
    expect(ok.json.data).toHaveLength(2048);
    expect(ok.json.data[2047].embedding).toHaveLength(768);
    expect(ok.charged).toBeGreaterThan(0);
    // Vertex's batch size, or fewer where a call's answer would outgrow the planned size.
    expect(sizes).toHaveLength(Math.ceil(2048 / Math.min(VERTEX_MAX_INSTANCES, maxInputsPerCall(undefined))));
    const largest = Math.max(...sizes);
    expect(largest).toBeGreaterThan(maxAnswerBytesFor(1));

    // One input answered with as many bytes as a full call's answer (its vector padded out).
    fake.answer = ({ res }) => send(res, prettyVertexAnswer(1, 768, largest), true);
    const over = await attempt({ model: MODELS.vertex, input: 'hello' });
    expect(over.status).toBe(502);
    expect(over.json.error.code).toBe('upstream_answer_too_large');
    expect(over.charged).toBe(0);
  }, 60_000);
});
