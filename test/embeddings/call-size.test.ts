import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maxInputsPerCall } from '../../src/embeddings/answer-bounds.js';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { post, startHarness, type Harness } from './harness.js';

/**
 * A request is split over as many upstream calls as keep each call's answer a bounded read: 2,048
 * inputs of text-embedding-3-large in one call answer ~130 MB of JSON, over the answer cap (a 502 for
 * a request OpenAI serves) and, parsed whole, a long wait for every other request.
 */
let sim: SimServer;
let h: Harness;

beforeAll(async () => {
  sim = await openai.simulator.start();
  h = await startHarness([{ module: openai, sim }]);
});
afterAll(async () => {
  await h.close();
  await sim.close();
});

const calls = () => sim.received('POST', '/v1/embeddings').map((r) => (r.json as { input: unknown[] }).input.length);

describe('inputs per upstream call', () => {
  it('2,048 inputs of a 3,072-value model go in calls of a bounded answer, and come back whole and in order', async () => {
    const { key } = await h.newKey(100);
    sim.reset();
    const inputs = Array.from({ length: 2048 }, (_, i) => `input number ${i}`);
    const r = await post(h, key, { model: 'text-embedding-3-large', input: inputs });
    expect(r.status, r.text.slice(0, 200)).toBe(200);
    expect(r.json.data).toHaveLength(2048);
    expect(r.json.data.map((d: { index: number }) => d.index)).toEqual(inputs.map((_, i) => i));
    expect(r.json.data[2047].embedding).toHaveLength(3072);
    const per = maxInputsPerCall(undefined);
    // The calls run concurrently: the upstream sees them in any order.
    const sizes = calls().sort((a, b) => b - a);
    expect(sizes).toEqual([...Array(Math.floor(2048 / per)).fill(per), 2048 % per].filter((n) => n > 0));
    // Each input's vector is the one it gets alone (the simulator's vectors follow the text).
    const alone = await post(h, key, { model: 'text-embedding-3-large', input: inputs[1500] });
    expect(r.json.data[1500].embedding).toEqual(alone.json.data[0].embedding);
  });

  it('smaller vectors (`dimensions`) take more inputs a call: 2,048 of 256 values still go in one', async () => {
    const { key } = await h.newKey(100);
    sim.reset();
    const inputs = Array.from({ length: 2048 }, (_, i) => `short ${i}`);
    const r = await post(h, key, { model: 'text-embedding-3-large', input: inputs, dimensions: 256 });
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(2048);
    expect(calls()).toEqual([2048]);
  });
});
