import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { guardedAgent } from '../../src/http/guarded-agent.js';

/**
 * The guarded agent (video downloads, client media, webhooks) on hosts that are IP literals: Node
 * never runs a DNS lookup for those, so the check in the lookup alone would let them through.
 */
let server: Server;
let port = 0;
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end('internal');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  hits.length = 0;
});

async function fetchThrough(allowPrivateNetworks: boolean, origin: string): Promise<{ status?: number; code?: string }> {
  const agent = guardedAgent({ allowPrivateNetworks, connectTimeoutMs: 2_000 });
  try {
    const res = await agent.request({ origin, path: '/admin', method: 'GET' });
    await res.body.text();
    return { status: res.statusCode };
  } catch (e) {
    return { code: (e as { code?: string }).code };
  } finally {
    await agent.close();
  }
}

describe('guardedAgent and IP-literal hosts', () => {
  for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::1]', '0.0.0.0']) {
    it(`refuses http://${host}:port before connecting (EBLOCKED)`, async () => {
      const r = await fetchThrough(false, `http://${host}:${port}`);
      expect(r).toEqual({ code: 'EBLOCKED' });
      expect(hits).toEqual([]);
    });
  }

  it('refuses a link-local (metadata) literal at once, without a connect timeout', async () => {
    const started = Date.now();
    expect(await fetchThrough(false, 'http://169.254.169.254')).toEqual({ code: 'EBLOCKED' });
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('still refuses a name that resolves to loopback', async () => {
    expect(await fetchThrough(false, `http://localhost:${port}`)).toEqual({ code: 'EBLOCKED' });
    expect(hits).toEqual([]);
  });

  it('connects to them when private networks are allowed', async () => {
    expect(await fetchThrough(true, `http://127.0.0.1:${port}`)).toEqual({ status: 200 });
    expect(await fetchThrough(true, `http://[::ffff:127.0.0.1]:${port}`)).toEqual({ status: 200 });
    expect(hits).toEqual(['/admin', '/admin']);
  });
});
