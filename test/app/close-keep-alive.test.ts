import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import type { SimServer } from '../../src/sim/framework.js';
import { call, startTestGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/process.js';

/**
 * A request still being answered when the gateway's listener closes keeps its keep-alive
 * connection open after the answer (Node closes idle connections only once, when the server
 * closes). The close must still end as soon as that answer has gone, not when the connection's
 * keep-alive timeout (72 s) passes: test teardowns whose last download was still being finished
 * waited for it past their hook timeout.
 */
const MODEL = 'text-embedding-3-small';
/** How long the vendor holds the answer: time enough for the close to begin while it is pending. */
const VENDOR_LATENCY_MS = 1_000;
/** Well past the held answer on a busy machine, far below the keep-alive timeout. */
const PROMPT_MS = 8_000;

let sim: SimServer;

beforeAll(async () => {
  sim = await startOpenAISimulator();
});
afterAll(async () => {
  await sim?.close();
});

it('closing the gateway with a keep-alive answer in flight answers it, then ends without waiting for the connection to time out', async () => {
  const gw = await startTestGateway({
    upstreams: [{ name: 'oa', vendor: 'openai', base_url: sim.url, api_key: sim.settings.apiKey, models: [MODEL], timeout_ms: 10_000 }],
    models: { [MODEL]: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } } },
  });
  let closed = false;
  try {
    const { key } = await gw.newKey(10);
    // A first request opens the keep-alive connection the held one then reuses.
    expect((await call(gw, 'POST', '/v1/embeddings', { key, body: { model: MODEL, input: 'warm' } })).status).toBe(200);
    sim.latencyMs = VENDOR_LATENCY_MS;
    const held = call(gw, 'POST', '/v1/embeddings', { key, body: { model: MODEL, input: 'held while closing' } });
    await waitFor(() => sim.received('POST', '/v1/embeddings').length === 2, 'the held request to reach the vendor');

    const started = Date.now();
    const closing = gw.close().then(() => (closed = true));
    const answer = await held;
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers.get('connection')).not.toBe('close');
    await Promise.race([closing, new Promise((r) => setTimeout(r, PROMPT_MS))]);
    expect(closed, `close still pending ${Date.now() - started} ms after it began`).toBe(true);
  } finally {
    sim.latencyMs = 0;
    if (!closed) gw.app.server.closeAllConnections();
  }
});
