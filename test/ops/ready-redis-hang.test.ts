import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { TcpRelay } from '../helpers/tcp-relay.js';
import { ensureRedis } from '../limits/redis-helper.js';

/** Polls /ready until it answers `status` (bounded), returning the last answer. */
async function readyBecomes(gw: TestGateway, status: number, maxMs = 15_000) {
  const until = Date.now() + maxMs;
  for (;;) {
    const r = await call(gw, 'GET', '/ready');
    if (r.status === status || Date.now() > until) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('/ready while Redis hangs (connection open, no answer)', () => {
  const relay = new TcpRelay(6379);
  let gw: TestGateway;

  beforeAll(async () => {
    await ensureRedis();
    await relay.start();
    // 200 probes at once from this one address, over fetch's pool, which opens more connections as
    // the earlier ones are still closing: more than server.max_connections_per_address allows by default.
    gw = await startTestGateway({ limits: { backend: 'redis', redis_url: `redis://127.0.0.1:${relay.port}` }, server: { max_connections_per_address: 2_000 } });
  });
  afterAll(async () => {
    await gw?.close();
    await relay.stop();
  });

  it('sends a bounded number of PINGs however many probes arrive, and recovers when Redis answers again', async () => {
    expect((await readyBecomes(gw, 200)).status).toBe(200);
    relay.stall({ newConnectionsToo: true });
    const before = relay.pingsSent;
    for (let wave = 0; wave < 3; wave++) {
      const answers = await Promise.all(Array.from({ length: 200 }, () => call(gw, 'GET', '/ready')));
      for (const r of answers) {
        expect(r.status).toBe(503);
        expect(r.json.checks.redis.status).toBe('failing');
        expect(r.json.checks.store.status).toBe('ok');
      }
    }
    // 600 probes: one PING per wave at most (plus none while the reset connection is not ready),
    // where each probe used to queue a PING of its own until Redis answered.
    expect(relay.pingsSent - before).toBeLessThanOrEqual(6);

    relay.resume();
    const up = await readyBecomes(gw, 200);
    expect(up.status, up.text).toBe(200);
    expect(up.json.checks.redis.status).toBe('ok');
  });
});
