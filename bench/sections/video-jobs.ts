import { IdSealer } from '../../src/core/sealed-id.js';
import { BENCH_SECRET, VIDEO_MODEL } from '../lib/setup.js';

/** Video jobs made through a gateway's public API, for the poll and download sections. */
export interface VideoJob {
  /** The gateway's public (sealed) id. */
  id: string;
  /** The simulator's task id, for requests that go straight to the upstream. */
  taskId: string;
}

export const sealer = new IdSealer([BENCH_SECRET]);

export async function createVideoJob(gateway: { url: string; key: string }): Promise<VideoJob> {
  const res = await fetch(`${gateway.url}/v1/videos/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: VIDEO_MODEL, prompt: 'a red fox running through snow', seconds: 4, size: '1280x720' }),
  });
  const json = (await res.json()) as { id?: string; status?: string };
  if (res.status !== 200 || typeof json.id !== 'string') throw new Error(`video create: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  const claims = sealer.open(json.id);
  if (!claims) throw new Error('video create: the public id does not open with the bench secret');
  return { id: json.id, taskId: claims.t };
}

/** GET /v1/videos/{id} until the job reaches `status` (bounded). */
export async function waitForStatus(gateway: { url: string; key: string }, id: string, status: string, maxMs: number): Promise<Record<string, unknown>> {
  const until = Date.now() + maxMs;
  for (;;) {
    const res = await fetch(`${gateway.url}/v1/videos/${id}`, { headers: { authorization: `Bearer ${gateway.key}` } });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`video poll: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
    if (json['status'] === status) return json;
    if (json['status'] !== 'processing') throw new Error(`video job ended '${String(json['status'])}', expected '${status}'`);
    if (Date.now() > until) throw new Error(`video job still processing after ${maxMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
