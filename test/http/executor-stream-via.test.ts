import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Executor } from '../../src/http/executor.js';
import { guardedAgent } from '../../src/http/guarded-agent.js';
import { registry } from '../../src/ops/metrics.js';

/**
 * A video download at a URL the vendor gave goes through a guarded agent (`via`), not the
 * executor's own; it is still the executor's call: counted in the upstream metrics under its
 * upstream, and an address the agent refuses comes back as the agent's own error (outcome
 * `refused`), so the caller can tell a refusal from a failed connection.
 */
let server: Server;
let base = '';
const hits: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'video/mp4' });
    res.end(Buffer.alloc(1_000));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

async function calls(upstream: string, outcome: string): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === 'gateway_upstream_requests_total');
  const values = (metric as { values?: Array<{ value: number; labels: Record<string, string> }> } | undefined)?.values ?? [];
  return values.filter((v) => v.labels.upstream === upstream && v.labels.outcome === outcome).reduce((a, v) => a + v.value, 0);
}

describe('Executor.stream through another dispatcher', () => {
  const executor = new Executor();
  const target = { name: 'cdn-hop-test', vendor: 'sora' };

  it('sends through it and counts the call under its upstream', async () => {
    const via = new Agent();
    try {
      const before = await calls(target.name, '2xx');
      const res = await executor.stream({ method: 'GET', url: `${base}/v.mp4`, headers: {} }, 5_000, undefined, target, via);
      const bytes = Buffer.concat(await res.body.toArray()).length;
      expect(res.status).toBe(200);
      expect(bytes).toBe(1_000);
      expect(hits).toContain('/v.mp4');
      expect((await calls(target.name, '2xx')) - before).toBe(1);
    } finally {
      await via.close();
    }
  });

  it("passes a guarded agent's refusal on as it is, counted as refused, without a connection", async () => {
    const via = guardedAgent({ allowPrivateNetworks: false, connectTimeoutMs: 2_000 });
    hits.length = 0;
    try {
      const before = await calls(target.name, 'refused');
      const err = await executor.stream({ method: 'GET', url: `${base}/internal`, headers: {} }, 5_000, undefined, target, via).catch((e: unknown) => e);
      expect((err as { code?: string }).code).toBe('EBLOCKED');
      expect(hits).toEqual([]);
      expect((await calls(target.name, 'refused')) - before).toBe(1);
    } finally {
      await via.close();
    }
  });
});
