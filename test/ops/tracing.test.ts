import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import { tracingOn } from '../../src/ops/tracing.js';
import { buildServices, type Services } from '../../src/services.js';
import { createLogger } from '../../src/ops/logger.js';
import type { SimServer } from '../../src/sim/framework.js';
import { videoModule as sora } from '../../src/video/vendors/sora/index.js';
import { call } from '../helpers/gateway.js';
import { upstreamsFor } from '../helpers/video.js';
import { closeListener } from '../../src/http/close-listener.js';

/** Traces exported to memory: the server span, its upstream child, and the traceparent the vendor got. */
const exporter = new InMemorySpanExporter();
let soraSim: SimServer;
let embedSim: SimServer;
let services: Services;
let app: FastifyInstance;
let url: string;
let key: string;
let dataDir: string;

beforeAll(async () => {
  soraSim = await sora.simulator.start({ taskMs: 100 });
  embedSim = await openai.simulator.start({});
  dataDir = mkdtempSync(join(tmpdir(), 'gw-trace-'));
  const video = upstreamsFor([{ module: sora, sim: soraSim }]);
  const cfg = validateConfig(
    {
      database: `sqlite:${join(dataDir, 'gateway.db')}`,
      data_dir: dataDir,
      log_level: 'silent',
      secret: 'test-secret-0123456789abcdef',
      admin_token: 'test-admin-token-0123456789',
      video: { poll_interval_ms: 0, refresher_interval_ms: 0, media: { allow_private_networks: true } },
      upstreams: [
        ...video.upstreams,
        { name: 'oai', vendor: 'openai', base_url: embedSim.url, api_key: openai.simulator.demo(embedSim).apiKey, models: ['text-embedding-3-small'] },
      ],
      models: { ...video.models, 'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } } },
    },
    '(test)',
  );
  services = await buildServices(cfg, { logger: createLogger('silent'), spanExporter: exporter });
  app = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  await services.admin.createAccount('traced', { balance: 10, upstreams: null });
  key = (await services.admin.createKey({ account: 'traced' })).key;
});
afterAll(async () => {
  if (app) await closeListener(app);
  await services?.close();
  await Promise.all([soraSim?.close(), embedSim?.close()]);
  rmSync(dataDir, { recursive: true, force: true });
});
beforeEach(() => {
  exporter.reset();
  soraSim.reset();
  embedSim.reset();
});

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const byKind = (spans: ReadableSpan[], kind: SpanKind) => spans.filter((s) => s.kind === kind);

describe('OpenTelemetry traces', () => {
  it("continue the caller's trace: server span -> upstream client span, and the vendor receives its traceparent", async () => {
    const r = await call({ url }, 'POST', '/v1/embeddings', {
      key,
      body: { model: 'text-embedding-3-small', input: ['hello', 'world'] },
      headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` },
    });
    expect(r.status, r.text).toBe(200);
    const spans = exporter.getFinishedSpans();
    const [server] = byKind(spans, SpanKind.SERVER);
    expect(server).toBeDefined();
    expect(server!.name).toBe('POST /v1/embeddings');
    expect(server!.spanContext().traceId).toBe(CLIENT_TRACE);
    expect(server!.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    expect(server!.attributes).toMatchObject({
      'http.route': '/v1/embeddings',
      'http.response.status_code': 200,
      'gen_ai.operation.name': 'embeddings',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'text-embedding-3-small',
      'gen_ai.usage.input_tokens': r.json.usage.prompt_tokens,
      'gateway.request_id': r.headers.get('x-request-id'),
    });
    const upstream = byKind(spans, SpanKind.CLIENT).find((s) => s.attributes['gateway.upstream'] === 'oai');
    expect(upstream).toBeDefined();
    expect(upstream!.spanContext().traceId).toBe(CLIENT_TRACE);
    expect(upstream!.parentSpanContext?.spanId).toBe(server!.spanContext().spanId);
    expect(upstream!.attributes).toMatchObject({ 'gen_ai.system': 'openai', 'http.request.method': 'POST', 'http.response.status_code': 200 });
    const received = embedSim.requests.find((q) => q.method === 'POST');
    expect(received?.headers['traceparent']).toBe(`00-${CLIENT_TRACE}-${upstream!.spanContext().spanId}-01`);
  });

  it('make store transactions and video upstream calls children of the request, with no query string recorded', async () => {
    const r = await call({ url }, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'a fox', seconds: 4 } });
    expect(r.status, r.text).toBe(200);
    const spans = exporter.getFinishedSpans();
    const server = byKind(spans, SpanKind.SERVER).find((s) => s.name === 'POST /v1/videos/generations')!;
    const root = server.spanContext();
    expect(server.attributes).toMatchObject({ 'gen_ai.system': 'sora', 'gen_ai.request.model': 'sora-2' });
    const children = spans.filter((s) => s.parentSpanContext?.spanId === root.spanId);
    const tx = children.filter((s) => s.name === 'store transaction');
    expect(tx.length).toBeGreaterThanOrEqual(1);
    expect(tx[0]!.attributes['db.system.name']).toBe('sqlite');
    const create = children.find((s) => s.kind === SpanKind.CLIENT && s.attributes['gateway.upstream'] === 'sora-up')!;
    expect(create).toBeDefined();
    expect(soraSim.requests[0]!.headers['traceparent']).toBe(`00-${root.traceId}-${create.spanContext().spanId}-01`);
    for (const s of spans) expect(String(s.attributes['url.full'] ?? '')).not.toContain('?');
  });

  it('start a new trace when the caller sends none, and mark 5xx answers as errors', async () => {
    soraSim.inject({ kind: 'status', status: 500 }, 1, /^\/v1\/videos$/);
    const r = await call({ url }, 'POST', '/v1/videos/generations', { key, body: { model: 'sora-2', prompt: 'x' } });
    expect(r.status).toBe(502);
    const spans = exporter.getFinishedSpans();
    const server = byKind(spans, SpanKind.SERVER)[0]!;
    expect(server.parentSpanContext).toBeUndefined();
    expect(server.status.code).toBe(2);
    const upstream = byKind(spans, SpanKind.CLIENT).find((s) => s.attributes['http.response.status_code'] === 500);
    expect(upstream?.status.code).toBe(2);
  });

  it('is on for this gateway only while it runs', () => {
    expect(tracingOn()).toBe(true);
  });
});
