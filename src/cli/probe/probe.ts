import type { ConfigFile } from '../../config/schema.js';
import { redactorFor } from '../../core/redact.js';
import { Executor } from '../../http/executor.js';
import type { Upstream, UpstreamRequest } from '../../http/types.js';
import { CredentialError, UpstreamClient, type UpstreamAuth } from '../../http/upstream-client.js';
import { Catalog } from '../../routing/catalog.js';
import { embeddingVendors } from '../../embeddings/vendors/registry.js';
import { videoVendors } from '../../video/vendors/registry.js';
import type { TaskRef } from '../../video/types.js';

/** `answers`: the key was accepted. `refused`: 401/403. `failed`: unreachable or another status. */
export type ProbeResult = 'answers' | 'refused' | 'failed' | 'skipped';

export interface ProbeRow {
  name: string;
  vendor: string;
  result: ProbeResult;
  /** HTTP status of the probe, when one came back. */
  status?: number;
  latencyMs: number;
  /** Why it did not answer (redacted: an upstream may echo the key). */
  detail?: string;
}

/** A task id no vendor issued: reading it costs nothing, and a 404 proves the credentials were accepted. */
const ABSENT_TASK_ID = 'gateway-probe-00000000';

/**
 * 2xx: the read succeeded. 404: the probe reads something that does not exist on purpose, and every
 * vendor checks credentials before looking it up. 401/403: the key was refused.
 */
export function probeVerdict(status: number): ProbeResult {
  if ((status >= 200 && status < 300) || status === 404) return 'answers';
  if (status === 401 || status === 403) return 'refused';
  return 'failed';
}

function probeRequest(up: Upstream, upstreamModel: string): { auth: UpstreamAuth; req: UpstreamRequest } | undefined {
  const video = videoVendors.get(up.vendor);
  if (video) {
    const task: TaskRef = { taskId: ABSENT_TASK_ID, model: up.models[0] ?? '', upstreamModel, meta: {} };
    return { auth: video, req: video.buildProbe ? video.buildProbe(up, upstreamModel) : video.buildPoll(task, up) };
  }
  const emb = embeddingVendors.get(up.vendor);
  if (emb?.buildProbe) return { auth: emb, req: emb.buildProbe(up, upstreamModel) };
  return undefined;
}

async function probeOne(client: UpstreamClient, catalog: Catalog, up: Upstream, timeoutMs: number): Promise<ProbeRow> {
  const row = { name: up.name, vendor: up.vendor };
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const built = probeRequest(up, catalog.upstreamModel(up, up.models[0] ?? ''));
    if (!built) return { ...row, result: 'skipped', latencyMs: 0, detail: 'this vendor has no free call to probe with' };
    // Bounded: a hung upstream costs the probe its own timeout, not the upstream's long generation one.
    const res = await client.send({ ...up, timeoutMs }, built.auth, { ...built.req, timeoutMs }, AbortSignal.timeout(timeoutMs + 1_000));
    const result = probeVerdict(res.status);
    return { ...row, result, status: res.status, latencyMs: elapsed(), ...(result === 'answers' ? {} : { detail: `HTTP ${res.status}` }) };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    // Credentials that could not be minted (a token endpoint refusing a service account) are a refusal too.
    const result = e instanceof CredentialError ? 'refused' : 'failed';
    return { ...row, result, latencyMs: elapsed(), detail: redactorFor(up).text(message) };
  }
}

/** Probes every enabled upstream of a (validated) configuration concurrently; one row per upstream, in config order. */
export async function probeUpstreams(cfg: ConfigFile, opts: { timeoutMs?: number } = {}): Promise<ProbeRow[]> {
  const catalog = new Catalog(cfg);
  const executor = new Executor();
  const client = new UpstreamClient(executor);
  try {
    return await Promise.all([...catalog.upstreams.values()].map((up) => probeOne(client, catalog, up, opts.timeoutMs ?? 10_000)));
  } finally {
    await executor.close();
  }
}

/** A fixed-width table for a terminal or a log: name, vendor, result, latency. */
export function probeTable(rows: ProbeRow[]): string {
  const cells = [['UPSTREAM', 'VENDOR', 'RESULT', 'LATENCY'], ...rows.map((r) => [r.name, r.vendor, r.result + (r.detail ? ` (${r.detail})` : ''), `${r.latencyMs} ms`])];
  const widths = [0, 1, 2].map((i) => Math.max(...cells.map((c) => c[i]!.length)));
  return cells.map((c) => c.map((v, i) => (i < 3 ? v.padEnd(widths[i]!) : v)).join('  ')).join('\n') + '\n';
}
