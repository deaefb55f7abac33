import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { pollUntilDone, PRICE_PER_SECOND, upstreamsFor } from '../helpers/video.js';
import { delta, parse, scrape, total } from './scrape.js';

/** Scrape, act, scrape, compare: every family moves by exactly what the action did. */
let primary: SimServer;
let backup: SimServer;
let embed: SimServer;
let gw: TestGateway;

beforeAll(async () => {
  primary = await sora.simulator.start({ taskMs: 100 });
  backup = await sora.simulator.start({ taskMs: 100 });
  embed = await openai.simulator.start({});
  const video = upstreamsFor([
    { module: sora, sim: primary, name: 'sora-primary', priority: 1, timeoutMs: 2_000 },
    { module: sora, sim: backup, name: 'sora-backup', priority: 2, timeoutMs: 2_000 },
  ]);
  gw = await startTestGateway({
    upstreams: [
      ...video.upstreams,
      { name: 'oai', vendor: 'openai', base_url: embed.url, api_key: openai.simulator.demo(embed).apiKey, models: ['text-embedding-3-small'] },
    ],
    models: { ...video.models, 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 2 } } },
  });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([primary?.close(), backup?.close(), embed?.close()]);
});
afterEach(() => {
  primary.reset();
  backup.reset();
});

const create = (key: string, prompt = 'a fox') =>
  call(gw, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt, seconds: 4, size: '1280x720' } });

describe('GET /metrics', () => {
  it('needs the admin token on the main port, and answers Prometheus text with process metrics', async () => {
    const { key } = await gw.newKey();
    expect((await call(gw, 'GET', '/metrics')).status).toBe(401);
    const asUser = await call(gw, 'GET', '/metrics', { key });
    expect(asUser.status).toBe(401);
    expect(asUser.json.error.code).toBe('invalid_api_key');
    const r = await call(gw, 'GET', '/metrics', { headers: { authorization: `Bearer ${gw.adminToken}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const s = parse(r.text);
    expect(total(s, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect([...s.keys()].some((k) => k.startsWith('nodejs_eventloop_lag_seconds'))).toBe(true);
  });

  it('counts requests by route template, method and status, never by raw path', async () => {
    const { key } = await gw.newKey();
    const before = await scrape(gw);
    await call(gw, 'GET', '/v1/models', { key });
    await call(gw, 'GET', '/v1/models', { key });
    await call(gw, 'GET', '/v1/models/nope-123', { key });
    await call(gw, 'GET', '/v1/models');
    await call(gw, 'GET', '/no/such/route/abc-999');
    const after = await scrape(gw);
    const req = 'gateway_http_requests_total';
    expect(delta(before, after, req, { route: '/v1/models', method: 'GET', status: '200' })).toBe(2);
    expect(delta(before, after, req, { route: '/v1/models/:id', method: 'GET', status: '404' })).toBe(1);
    expect(delta(before, after, req, { route: '/v1/models', method: 'GET', status: '401' })).toBe(1);
    expect(delta(before, after, req, { route: '(unmatched)', status: '404' })).toBe(1);
    expect(delta(before, after, 'gateway_http_request_duration_seconds_count', { route: '/v1/models', method: 'GET' })).toBe(3);
    const keys = [...after.keys()].join('\n');
    expect(keys).not.toContain('nope-123');
    expect(keys).not.toContain('abc-999');
  });

  it('counts requests refused before routing (a malformed %-escape, an overlong path parameter) as unmatched', async () => {
    const before = await scrape(gw);
    const bad = await call(gw, 'GET', '/v1/videos/%E0%A4%A');
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('malformed_request');
    const long = await call(gw, 'DELETE', `/v1/videos/${'a'.repeat(5_000)}`);
    expect(long.status).toBe(400);
    expect(long.json.error.code).toBe('malformed_request');
    const after = await scrape(gw);
    const req = 'gateway_http_requests_total';
    expect(delta(before, after, req, { route: '(unmatched)', method: 'GET', status: '400' })).toBe(1);
    expect(delta(before, after, req, { route: '(unmatched)', method: 'DELETE', status: '400' })).toBe(1);
    expect(delta(before, after, 'gateway_http_request_duration_seconds_count', { route: '(unmatched)' })).toBe(2);
    expect([...after.keys()].join('\n')).not.toContain('aaaa');
  });

  it('counts upstream calls, the failover, the hold, the settlement and the capture of a video job', async () => {
    const { key, account } = await gw.newKey(10);
    const before = await scrape(gw);
    primary.inject({ kind: 'status', status: 500 }, 1, /\/v1\/videos$/);
    const r = await create(key);
    expect(r.status, r.text).toBe(200);
    const mid = await scrape(gw);
    expect(delta(before, mid, 'gateway_failovers_total', { upstream: 'sora-primary', reason: 'retryable' })).toBe(1);
    expect(delta(before, mid, 'gateway_upstream_requests_total', { vendor: 'sora', upstream: 'sora-primary', outcome: '5xx' })).toBe(1);
    expect(delta(before, mid, 'gateway_upstream_requests_total', { vendor: 'sora', upstream: 'sora-backup', outcome: '2xx' })).toBe(1);
    expect(delta(before, mid, 'gateway_upstream_request_duration_seconds_count', { upstream: 'sora-backup' })).toBe(1);
    expect(delta(before, mid, 'gateway_money_held_total', { model: 'sora-2' })).toBeCloseTo(4 * PRICE_PER_SECOND, 9);
    expect(delta(before, mid, 'gateway_video_jobs', { state: 'processing' })).toBe(1);

    const done = await pollUntilDone(gw, key, r.json.id);
    expect(done.status).toBe('completed');
    const after = await scrape(gw);
    expect(delta(mid, after, 'gateway_video_settlements_total', { model: 'sora-2', outcome: 'completed' })).toBe(1);
    const captured = delta(mid, after, 'gateway_money_captured_total', { model: 'sora-2' });
    expect(captured).toBeCloseTo(done.seconds * PRICE_PER_SECOND, 9);
    expect(delta(mid, after, 'gateway_money_released_total', { model: 'sora-2' })).toBeCloseTo(4 * PRICE_PER_SECOND, 9);
    expect(delta(mid, after, 'gateway_video_jobs', { state: 'processing' })).toBe(-1);
    expect(delta(mid, after, 'gateway_video_jobs', { state: 'completed' })).toBe(1);
    // The money counters agree with the ledger.
    expect(10 - (await gw.balance(account)) / 1e6).toBeCloseTo(captured, 9);
  });

  it('counts a failed job and a rejected create, each releasing its hold', async () => {
    const { key } = await gw.newKey(10);
    const before = await scrape(gw);
    const failing = await create(key, 'a fox [fail]');
    expect(failing.status).toBe(200);
    expect((await pollUntilDone(gw, key, failing.json.id)).status).toBe('failed');
    primary.inject({ kind: 'status', status: 503 }, 1, /\/v1\/videos$/);
    backup.inject({ kind: 'status', status: 503 }, 1, /\/v1\/videos$/);
    expect((await create(key)).status).toBe(502);
    const after = await scrape(gw);
    expect(delta(before, after, 'gateway_video_settlements_total', { outcome: 'failed', code: 'generation_failed' })).toBe(1);
    expect(delta(before, after, 'gateway_video_settlements_total', { outcome: 'rejected' })).toBe(1);
    expect(delta(before, after, 'gateway_money_released_total', { model: 'sora-2' })).toBeCloseTo(2 * 4 * PRICE_PER_SECOND, 9);
    expect(delta(before, after, 'gateway_money_captured_total')).toBe(0);
  });

  it('shows a circuit opening after five failures in a row', async () => {
    const { key } = await gw.newKey(100);
    expect(total(await scrape(gw), 'gateway_circuit_state', { upstream: 'sora-backup' })).toBe(0);
    backup.inject({ kind: 'status', status: 500 }, 5, /\/v1\/videos$/);
    primary.inject({ kind: 'status', status: 500 }, 5, /\/v1\/videos$/);
    for (let i = 0; i < 5; i++) expect((await create(key)).status).toBe(502);
    const s = await scrape(gw);
    expect(total(s, 'gateway_circuit_state', { upstream: 'sora-backup' })).toBe(1);
    expect(total(s, 'gateway_circuit_state', { upstream: 'sora-primary' })).toBe(1);
    expect(total(s, 'gateway_circuit_state', { upstream: 'oai' })).toBe(0);
  });

  it('counts limiter refusals by family and the money charged for embeddings', async () => {
    const { key } = await gw.newKey(10, { limits: { embeddings: { rpm: 1 } } });
    const before = await scrape(gw);
    const ok = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: ['hello world', 'again'] } });
    expect(ok.status, ok.text).toBe(200);
    const refused = await call(gw, 'POST', '/v1/embeddings', { key, body: { model: 'text-embedding-3-small', input: 'x' } });
    expect(refused.status).toBe(429);
    const after = await scrape(gw);
    expect(delta(before, after, 'gateway_limiter_refusals_total', { family: 'embeddings', reason: 'requests' })).toBe(1);
    expect(delta(before, after, 'gateway_limiter_refusals_total', { family: 'video' })).toBe(0);
    const tokens = ok.json.usage.prompt_tokens as number;
    expect(delta(before, after, 'gateway_money_charged_total', { model: 'text-embedding-3-small' })).toBeCloseTo((tokens * 2) / 1e6, 12);
    expect(delta(before, after, 'gateway_upstream_requests_total', { vendor: 'openai', upstream: 'oai', outcome: '2xx' })).toBe(1);
  });

  it('labels nothing with keys, accounts, job ids or prompts', async () => {
    const { key, account } = await gw.newKey(10);
    const r = await create(key, 'a very secret prompt');
    const text = (await call(gw, 'GET', '/metrics', { headers: { authorization: `Bearer ${gw.adminToken}` } })).text;
    for (const needle of [key, key.slice(0, 12), account, r.json.id, 'very secret']) expect(text).not.toContain(needle);
  });
});
