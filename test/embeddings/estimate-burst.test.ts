import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OPENAI_SIM_KEY, startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Embeddings requests in flight together are admitted on the tokenizer-free estimate and billed the
 * vendor's count (the simulator's is cl100k's). docs/spend.md promises the estimate at least about 0.6
 * of the real count, so a burst passes a TPM quota or a balance by at most 1/0.6 - 1 of what it held.
 * Before, 9,000 \r were estimated at 1,126 tokens: under TPM 10,000 seven of 50 went through and were
 * billed 63,000 tokens, and a balance of 0.002 ended at -0.0097.
 */
const FLOOR = 0.6;
const MODEL = 'text-embedding-3-small';
const INPUT = '\r'.repeat(9_000);
let sim: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  sim = await startOpenAISimulator();
  gw = await startTestGateway({
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: OPENAI_SIM_KEY, models: [MODEL], timeout_ms: 10_000 }],
    // 0.2 micro per token: 9,000 tokens cost 1,800 micros, just under a balance of 0.002.
    models: { [MODEL]: { capabilities: ['embedding'], price: { per_million_input_tokens: 0.2 } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await sim?.close();
});
beforeEach(() => {
  sim.reset();
  // Each answer takes a while: the burst is in flight together, as the bound is about.
  sim.latencyMs = 300;
});

async function burst(key: string, n = 50) {
  const answers = await Promise.all(Array.from({ length: n }, () => call(gw, 'POST', '/v1/embeddings', { key, body: { model: MODEL, input: INPUT } })));
  return answers.filter((a) => a.status === 200);
}

describe('a burst of embeddings inputs that tokenize badly', () => {
  it('under TPM 10,000: the tokens billed pass the quota by no more than the estimate promises', async () => {
    const { key } = await gw.newKey(10, { limits: { embeddings: { rpm: 1_000, tpm: 10_000 } } });
    const admitted = await burst(key);
    expect(admitted.length).toBeGreaterThanOrEqual(1);
    const billed = admitted.reduce((sum, a) => sum + (a.json.usage.prompt_tokens as number), 0);
    expect(billed).toBeLessThanOrEqual(10_000 / FLOOR);
  });

  it('on a balance of 0.002: the balance goes below zero by no more than the estimate promises', async () => {
    const { key, account } = await gw.newKey(0.002);
    expect((await burst(key)).length).toBeGreaterThanOrEqual(1);
    // In micros: 2,000 to start with.
    expect(await gw.balance(account)).toBeGreaterThanOrEqual(2_000 - 2_000 / FLOOR);
  });
});
