import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * What Node's HTTP parser refuses is answered once, in the spec's error shape, over a real socket:
 * a request already answered before its body failed gets no second answer, and a request without
 * Host gets the error shape with an x-request-id, not Node's bare 400.
 */
let gw: TestGateway;
let port: number;

beforeAll(async () => {
  gw = await startTestGateway({});
  port = Number(new URL(gw.url).port);
});
afterAll(async () => {
  await gw?.close();
});

/** Sends `raw` in one write and reads everything until the gateway closes the connection. */
function exchange(raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (got += d));
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no close after: ${JSON.stringify(got)}`)));
    socket.write(raw);
  });
}

const statusLines = (text: string) => text.match(/HTTP\/1\.1 \d{3}(?= )/g) ?? [];

describe('one answer per refused request', () => {
  it('a body with an unknown transfer coding gets one answer, and the connection closes', async () => {
    const got = await exchange('POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{"a":1}');
    expect(statusLines(got), got).toHaveLength(1);
  });

  it('a bad chunk in the same packet as the head gets one answer', async () => {
    const got = await exchange('POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n');
    expect(statusLines(got), got).toHaveLength(1);
  });
  it('a refused body behind a pipelined request: the answer to each, and no second one', async () => {
    const got = await exchange(
      'GET /health HTTP/1.1\r\nHost: x\r\n\r\nPOST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{"a":1}',
    );
    expect(statusLines(got), got).toHaveLength(2);
  });
});

describe('HTTP/1.1 without Host', () => {
  it('is answered 400 in the error shape, with an x-request-id', async () => {
    const got = await exchange('GET /health HTTP/1.1\r\n\r\n');
    expect(statusLines(got), got).toEqual(['HTTP/1.1 400']);
    expect(got.toLowerCase()).toMatch(/\r\nx-request-id: \S+\r\n/);
    const body = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4));
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'malformed_request' });
  });

  it('HTTP/1.0 needs no Host', async () => {
    const got = await exchange('GET /health HTTP/1.0\r\n\r\n');
    expect(statusLines(got), got).toEqual(['HTTP/1.1 200']);
  });
});
