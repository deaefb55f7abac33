import { expect } from 'vitest';
import type { SimServer } from '../../src/sim/framework.js';
import { startOpenAISimulator } from '../../src/embeddings/vendors/openai/simulator.js';
import { videoModules } from '../../src/video/vendors/registry.js';
import { upstreamsFor } from '../helpers/video.js';
import { eventually, httpCall } from './client.js';
import { startChildGateway, type ChildGateway } from './child.js';
import { FaultUpstream } from './fault-upstream.js';

/** Timeout of the upstreams behind the fault upstream: stalls end after this (headers) or twice this (streams). */
export const UPSTREAM_TIMEOUT_MS = 800;
/** Size of the simulated video, large enough that a download is still running when a test cuts it. */
export const VIDEO_BYTES = 4 * 1024 * 1024;

/**
 * The gateway in its own process, with a Sora simulator (video) and an OpenAI-compatible simulator
 * (embeddings and chat) each behind a fault upstream, plus an upstream whose port refuses
 * connections. A finished video job exists when `start` returns.
 */
export interface FaultEnv {
  gw: ChildGateway;
  video: FaultUpstream;
  api: FaultUpstream;
  videoSim: SimServer;
  apiSim: SimServer;
  key: string;
  account: string;
  /** The finished job: its id and signed output_url. */
  job: { id: string; outputUrl: string };
  stop(): Promise<void>;
}

export async function startFaultEnv(opts: { headersTimeoutMs?: number } = {}): Promise<FaultEnv> {
  const sora = videoModules.find((m) => m.vendor.id === 'sora')!;
  const videoSim = await sora.simulator.start({ taskMs: 30 });
  videoSim.settings.videoBytes = VIDEO_BYTES;
  const apiSim = await startOpenAISimulator();
  const video = await FaultUpstream.start(videoSim.url);
  const api = await FaultUpstream.start(apiSim.url);
  const { upstreams, models } = upstreamsFor([{ module: sora, sim: videoSim, timeoutMs: UPSTREAM_TIMEOUT_MS }]);
  upstreams[0]!.base_url = video.url;
  const apiModels = ['text-embedding-3-small', 'gpt-4o-mini'];
  upstreams.push({ name: 'api', vendor: 'openai', base_url: api.url, api_key: apiSim.settings.apiKey, models: apiModels, timeout_ms: UPSTREAM_TIMEOUT_MS });
  // Nothing listens here: every connection is refused. A privileged port, which no test server
  // listens on and the OS never hands out for port 0 (a port that was free a moment ago can be
  // taken by another test's server while this environment runs).
  upstreams.push({ name: 'gone', vendor: 'openai', base_url: 'http://127.0.0.1:1', api_key: 'k', models: ['text-embedding-3-large'], timeout_ms: UPSTREAM_TIMEOUT_MS });
  Object.assign(models, {
    'text-embedding-3-small': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.02 } },
    'text-embedding-3-large': { capabilities: ['embedding'], price: { per_million_input_tokens: 0.13 } },
    'gpt-4o-mini': { capabilities: ['chat'], price: { per_million_input_tokens: 0.15, per_million_output_tokens: 0.6 } },
  });
  const gw = await startChildGateway({
    upstreams,
    models,
    video: { poll_interval_ms: 0, refresher_interval_ms: 0 },
    server: { headers_timeout_ms: opts.headersTimeoutMs ?? 15_000 },
  });
  const { key, account } = await gw.newKey(100);
  const created = await httpCall(`${gw.url}/v1/videos/generations`, { key, body: { model: 'sora-2', prompt: 'a red fox in snow' } });
  expect(created.status, created.body.toString()).toBe(200);
  let job: any;
  await eventually(async () => {
    job = (await httpCall(`${gw.url}/v1/videos/${created.json.id}`, { key })).json;
    return job.status !== 'processing';
  }, 15_000);
  expect(job.status).toBe('completed');
  await steadyDescriptors(gw);
  return {
    gw,
    video,
    api,
    videoSim,
    apiSim,
    key,
    account,
    job: { id: job.id, outputUrl: job.output_url },
    async stop() {
      await gw.stop();
      await Promise.all([video.close(), api.close(), videoSim.close(), apiSim.close()]);
    },
  };
}

/**
 * What every fault case ends with: the process alive and /health answering, no connection to any
 * upstream left open, the gateway's descriptors back to where they were, and (unless work was
 * delivered) the balance untouched.
 */
export async function expectClean(env: FaultEnv, before: { fds: number; balance: number }, opts: { charged?: boolean } = {}): Promise<void> {
  const { gw } = env;
  expect(await gw.healthy(), `the gateway died or /health stopped answering\n${gw.output()}`).toBe(true);
  expect(await eventually(() => env.video.openConnections === 0 && env.api.openConnections === 0), 'an upstream connection was left open').toBe(true);
  let fds = 0;
  const closed = await eventually(() => (fds = gw.fds()) <= before.fds);
  expect(closed, `descriptors: ${fds} after, ${before.fds} before`).toBe(true);
  if (!opts.charged) expect(await gw.balance(env.account)).toBe(before.balance);
}

/**
 * Waits until the gateway's descriptor count has held still for 2 s. Some open lazily after start
 * (the SQLite checkpoint thread, started by the first write, opens the database, its WAL and
 * shared-memory files, later on a busy machine), and a case must not count those as its own.
 */
async function steadyDescriptors(gw: ChildGateway): Promise<void> {
  let last = gw.fds();
  let since = Date.now();
  const until = Date.now() + 20_000;
  while (Date.now() - since < 2_000 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    const now = gw.fds();
    if (now !== last) {
      last = now;
      since = Date.now();
    }
  }
}

export async function snapshot(env: FaultEnv): Promise<{ fds: number; balance: number }> {
  // Let sockets from the previous case finish closing first.
  await eventually(() => env.video.openConnections === 0 && env.api.openConnections === 0);
  await new Promise((r) => setTimeout(r, 50));
  return { fds: env.gw.fds(), balance: await env.gw.balance(env.account) };
}

export function expectErrorShape(body: any, type: string, code: string): void {
  expect(body?.error, JSON.stringify(body)).toMatchObject({ type, code });
  expect(typeof body.error.message).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .+\.(ts|js):\d+/);
}
