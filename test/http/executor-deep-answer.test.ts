import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Executor } from '../../src/http/executor.js';
import { redactorFor } from '../../src/core/redact.js';

/**
 * An upstream answer nested deeper than any vendor object is handed on unparsed: the walks that
 * follow a parsed answer (redaction, storage, presentation) recurse, so a hostile upstream's
 * `[[[[...]]]]` would otherwise exhaust the stack on every poll.
 */
let server: Server;
let base = '';
let body = '';
beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

describe('upstream JSON nesting', () => {
  const executor = new Executor();
  it('an answer nested 300,000 deep comes back unparsed, with its text, and nothing recursing over it fails', async () => {
    body = `{"status":"ok","x":${'['.repeat(300_000)}${']'.repeat(300_000)}}`;
    const res = await executor.send({ method: 'GET', url: `${base}/deep`, headers: {} }, 5_000);
    expect(res.status).toBe(200);
    expect(res.json).toBeUndefined();
    expect(res.text.startsWith('{"status":"ok"')).toBe(true);
    // What would have been walked: the old parse handed this object on, and redaction overflowed.
    expect(() => redactorFor({ name: 'u', apiKey: 'sk-deep-0123456789' } as never).json(JSON.parse(body))).toThrow(RangeError);
  });
  it('an ordinary vendor answer (a few levels) is parsed as before', async () => {
    body = JSON.stringify({ id: 'task_1', output: { task_status: 'RUNNING', results: [{ url: 'https://cdn.example/v.mp4', meta: { a: [1, [2, [3]]] } }] } });
    const res = await executor.send({ method: 'GET', url: `${base}/shallow`, headers: {} }, 5_000);
    expect(res.json).toEqual(JSON.parse(body));
  });
  it('a per-request answer cap below the configured one abandons a larger answer unread', async () => {
    body = JSON.stringify({ status: 'ok', padding: 'x'.repeat(200_000) });
    await expect(executor.send({ method: 'GET', url: `${base}/big`, headers: {}, maxAnswerBytes: 64 * 1024 }, 5_000)).rejects.toThrow();
    // The same answer under the configured cap alone is read whole.
    expect((await executor.send({ method: 'GET', url: `${base}/big`, headers: {} }, 5_000)).json).toEqual(JSON.parse(body));
  });
});
