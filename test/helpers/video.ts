import { afterAll, beforeAll, expect } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import type { VideoVendorModule } from '../../src/video/vendors/module.js';
import { call, startTestGateway, type TestGateway } from './gateway.js';

export const PRICE_PER_SECOND = 0.1;

/** Config fragments wiring one upstream per simulator, every model priced PRICE_PER_SECOND. */
export function upstreamsFor(entries: { module: VideoVendorModule; sim: SimServer; name?: string; priority?: number; timeoutMs?: number }[]) {
  const upstreams: Record<string, unknown>[] = [];
  const models: Record<string, unknown> = {};
  for (const e of entries) {
    const d = e.module.simulator.demo(e.sim);
    for (const m of d.models) models[m.name] = { capabilities: ['video'], price: { per_second: PRICE_PER_SECOND } };
    upstreams.push({
      ...d.options,
      name: e.name ?? `${e.module.vendor.id}-up`,
      vendor: e.module.vendor.id,
      base_url: e.sim.url,
      api_key: d.apiKey,
      models: d.models.map((m) => m.name),
      priority: e.priority ?? 1,
      timeout_ms: e.timeoutMs ?? 5_000,
    });
  }
  return { upstreams, models };
}

/** A job's states before it ends: the spec's, and the OpenAI Videos API's for a job made there. */
const STILL_RUNNING = new Set(['processing', 'queued', 'in_progress']);

/** Polls GET /v1/videos/{id} until the job has ended, in either surface's words (bounded). */
export async function pollUntilDone(gw: TestGateway, key: string, id: string, maxMs = 15_000): Promise<any> {
  const until = Date.now() + maxMs;
  for (;;) {
    const r = await call(gw, 'GET', `/v1/videos/${id}`, { key });
    expect(r.status).toBe(200);
    if (!STILL_RUNNING.has(r.json.status)) return r.json;
    if (Date.now() > until) throw new Error(`job ${id} still processing after ${maxMs} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

export async function download(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** Creates a video job (spec route), expects 200, and returns the answer with the store's job id behind the sealed id. */
export async function createVideo(gw: TestGateway, key: string, body: Record<string, unknown>): Promise<{ created: { status: number; json: any; text: string }; jobId: string }> {
  const created = await call(gw, 'POST', '/v1/videos/generations', { key, body });
  if (created.status !== 200) throw new Error(`video create answered ${created.status}: ${created.text}`);
  return { created, jobId: gw.services.video.deps.sealer.open(created.json.id)!.j };
}

/**
 * Registers a file's hooks for one gateway on one vendor's simulator, its tasks slow enough to stay
 * processing (60 s), both closed after the file. The returned object holds them once started.
 */
export function oneVendorGateway(module: VideoVendorModule): { gw: TestGateway; sim: SimServer } {
  const env = {} as { gw: TestGateway; sim: SimServer };
  beforeAll(async () => {
    env.sim = await module.simulator.start({ taskMs: 60_000 });
    env.gw = await startTestGateway(upstreamsFor([{ module, sim: env.sim }]));
  });
  afterAll(async () => {
    await env.gw?.close();
    await env.sim?.close();
  });
  return env;
}
