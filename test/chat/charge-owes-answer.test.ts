import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * A chat answer that is being billed is owed to its client: its request deadline passing while the
 * charge waits on the store (here another process holding the SQLite write lock) must not answer
 * the client 408 and bill it all the same. Once billing starts the request is past its point of
 * no return, and the answer is delivered when the charge is written.
 */
let upstream: Server;
let gw: TestGateway;
/** Taken when the upstream answers: the gateway's writes after the answer (the charge) wait for it. */
let lock: Database.Database | undefined;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      lock = new Database(join(gw.dataDir, 'gateway.db'));
      lock.exec('BEGIN IMMEDIATE');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1 } }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const { port } = upstream.address() as { port: number };
  gw = await startTestGateway({
    server: { request_timeout_ms: 600 },
    upstreams: [{ name: 'u', vendor: 'openai', base_url: `http://127.0.0.1:${port}`, api_key: 'sk-upstream-0123456789abcdef', models: ['m'], timeout_ms: 2_000 }],
    models: { m: { capabilities: ['chat'], price: { per_million_input_tokens: 1_000, per_million_output_tokens: 2_000 } } },
  });
});

afterAll(async () => {
  await gw?.close();
  await new Promise((r) => upstream?.close(r));
});

describe('a chat answer whose charge outlasts the request deadline', () => {
  it('is delivered with the charge, not answered 408 and billed', async () => {
    const { key, account } = await gw.newKey(10);
    const pending = call(gw, 'POST', '/v1/chat/completions', { key, body: { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hello' }] } });
    // The deadline (600 ms) passes while the charge waits for the lock.
    await new Promise((r) => setTimeout(r, 1_200));
    expect(lock).toBeDefined();
    lock!.exec('ROLLBACK');
    lock!.close();
    const res = await pending;
    expect(res.status, res.text).toBe(200);
    expect((res.json.choices as { message: { content: string } }[])[0]!.message.content).toBe('hi');
    const ledger = await call(gw, 'GET', `/admin/accounts/${account}/ledger`, { headers: { authorization: `Bearer ${gw.adminToken}` } });
    const charges = (ledger.json.data as { kind: string; amount: string }[]).filter((e) => e.kind === 'charge');
    expect(charges).toHaveLength(1);
  }, 20_000);
});
