import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * A client that hangs up in the middle of its request body left, and nothing on the gateway's side
 * failed: an access line says so (status 499, aborted), with no error line and no stack, and the
 * request body's ECONNRESET is not taken for an upstream's failure (a 502).
 */
let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

const until = async (check: () => boolean, ms = 3_000): Promise<void> => {
  for (const end = Date.now() + ms; !check() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
};

describe('a client hanging up mid-body', () => {
  it('is logged as its own abort (499), not as a request that failed', async () => {
    const lines: string[] = [];
    gw = await startTestGateway({ log_level: 'info' }, { logSink: { write: (line: string) => void lines.push(line) } });
    const port = new URL(gw.url).port;
    const s = connect(Number(port), '127.0.0.1');
    s.on('error', () => {});
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write('POST /console/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"token":"');
    // The body is being read when the client leaves.
    await new Promise((r) => setTimeout(r, 200));
    s.destroy();
    const records = () => lines.map((l) => JSON.parse(l) as { level: number; msg: string; status?: number; path?: string; stack?: string; err?: unknown });
    await until(() => records().some((r) => r.path === '/console/session' && r.status === 499));
    // Anything logged late would show up here.
    await new Promise((r) => setTimeout(r, 200));
    const got = records();
    expect(got.find((r) => r.path === '/console/session' && r.msg === 'request aborted')?.status, lines.join('\n')).toBe(499);
    expect(got.filter((r) => r.level >= 50), lines.join('\n')).toEqual([]);
    expect(lines.join('\n')).not.toMatch(/request failed|"stack"|ECONNRESET/);
    expect(got.some((r) => r.path === '/console/session' && r.status === 502)).toBe(false);
  });
});
