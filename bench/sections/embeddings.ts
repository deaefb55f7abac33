import { rssBytes } from '../lib/proc.js';
import type { Row } from '../lib/table.js';
import { EMBEDDING_MODEL } from '../lib/setup.js';
import { OtherStores, storeFigures, type StoreFigures, type StoreGateways } from './stores.js';
import { assertHealthy, eachPath, PathMeter, type Path, type PathName, type PhaseResult, type WarmUp } from './paths.js';

/**
 * Section 1: POST /v1/embeddings answered with one 1,536-float vector, straight to the upstream,
 * through the floor proxy and through the gateway (auth, limiter, balance check, billing, logging).
 */
export interface EmbeddingsPhases {
  warm: WarmUp;
  oneConnMs: number;
  rateMs: number;
  saturationMs: number;
}

export interface Endpoint {
  origin: string;
  pid: number;
  /** Bearer token this endpoint expects (the upstream's key, or a gateway key). */
  token: string;
}

const INPUT = 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.';

function pathFor(name: PathName, e: Endpoint, format: 'float' | 'base64'): Path {
  return {
    name,
    origin: e.origin,
    pid: e.pid,
    spec: {
      method: 'POST',
      path: '/v1/embeddings',
      headers: { authorization: `Bearer ${e.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: EMBEDDING_MODEL, input: INPUT, encoding_format: format }),
    },
  };
}

/** One real answer per path, checked: 1,536 dimensions in the asked form, and usage present. */
async function checkAnswer(p: Path, format: 'float' | 'base64'): Promise<number> {
  const res = await fetch(p.origin + '/v1/embeddings', { method: 'POST', headers: p.spec.headers, body: p.spec.body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`embeddings via ${p.name}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  const json = JSON.parse(text) as { data: Array<{ embedding: number[] | string }>; usage?: { prompt_tokens?: number } };
  const v = json.data[0]!.embedding;
  const dims = typeof v === 'string' ? Buffer.from(v, 'base64').length / 4 : v.length;
  const form = typeof v === 'string' ? 'base64' : 'float';
  if (dims !== 1536 || form !== format || typeof json.usage?.prompt_tokens !== 'number')
    throw new Error(`embeddings via ${p.name}: expected 1536 ${format} values with usage, got ${dims} ${form}`);
  return Buffer.byteLength(text);
}

export async function benchEmbeddings(
  endpoints: Record<PathName, Endpoint>,
  format: 'float' | 'base64',
  phases: EmbeddingsPhases,
  log: (line: string) => void,
  stores?: StoreGateways,
): Promise<{ rows: Row[]; notes: string[]; stores: StoreFigures[] }> {
  const meters = {
    direct: new PathMeter(pathFor('direct', endpoints.direct, format)),
    floor: new PathMeter(pathFor('floor', endpoints.floor, format)),
    gateway: new PathMeter(pathFor('gateway', endpoints.gateway, format)),
  };
  // The same gateway on the other stores runs the phases the store comparison needs.
  const others = new OtherStores(stores, (o) => pathFor('gateway', o.endpoint, format));
  const section = `Embeddings (${format})`;
  try {
    const sizes = await eachPath(meters, (m) => checkAnswer(m.path, format));
    await others.each((m) => checkAnswer(m.path, format));
    log(`${section}: answer ${sizes.direct} bytes direct, ${sizes.gateway} bytes through the gateway`);
    // Warm-up: JIT, connection pools on every hop, SQLite page cache.
    await eachPath(meters, (m) => m.warmUp(phases.warm));
    await others.each((m) => m.warmUp(phases.warm));
    const one = await eachPath(meters, (m) => m.closedLoop(1, phases.oneConnMs));
    log(`${section}: 1 connection done`);
    const r500 = await eachPath(meters, (m) => m.fixedRate(500, phases.rateMs));
    const r1000 = await eachPath(meters, (m) => m.fixedRate(1000, phases.rateMs));
    const others1000 = await others.each((m) => m.fixedRate(1000, phases.rateMs));
    log(`${section}: fixed rates done`);
    const sat = await eachPath(meters, (m) => m.closedLoop(32, phases.saturationMs));
    const othersSat = await others.each((m) => m.closedLoop(32, phases.saturationMs));
    log(`${section}: saturation done`);
    for (const [label, r] of [['1 conn', one], ['500/s', r500], ['1000/s', r1000], ['32 conns', sat]] as const)
      log(`${section}: CPU us/req ${label}: ${Object.entries(r).map(([k, x]) => `${k} ${x.cpuPerRequest.toFixed(0)} (${x.ok} req)`).join(', ')}`);
    for (const [store, r] of othersSat) log(`${section}: CPU us/req 32 conns, gateway on ${store}: ${r.cpuPerRequest.toFixed(0)} (${r.ok} req)`);
    const notes = [...assertHealthy(Object.values(meters), section), ...others.healthNotes(section)];
    const rss = { direct: rssBytes(endpoints.direct.pid), floor: rssBytes(endpoints.floor.pid), gateway: rssBytes(endpoints.gateway.pid) };
    for (const [rate, r] of [[500, r500], [1000, r1000]] as const) {
      const slow = Object.entries(r).filter(([, x]) => x.throughput < rate * 0.95);
      for (const [name, x] of slow) notes.push(`${section}, ${name}: sustained ${Math.round(x.throughput)} of ${rate} req/s`);
    }

    const added = (r: Record<PathName, PhaseResult>, q: 'p50' | 'p99', measure: string): Row => ({
      section,
      measure,
      direct: r.direct.summary[q],
      floor: r.floor.summary[q] - r.direct.summary[q],
      gateway: r.gateway.summary[q] - r.direct.summary[q],
      digits: 3,
    });
    const p99At1000 = added(r1000, 'p99', 'p99 at 1,000 req/s (ms)');
    p99At1000.target = { text: '<= 1.5x floor', met: p99At1000.gateway! <= 1.5 * Math.max(p99At1000.floor!, 0.01) };
    // CPU per request is taken where the most requests were served, at saturation; the 1,000 req/s
    // figure shows the cost at a moderate load, where per-request wake-ups weigh more.
    const cpu = { direct: sat.direct.cpuPerRequest, floor: sat.floor.cpuPerRequest, gateway: sat.gateway.cpuPerRequest };
    const cpu1000 = { direct: r1000.direct.cpuPerRequest, floor: r1000.floor.cpuPerRequest, gateway: r1000.gateway.cpuPerRequest };
    const rows: Row[] = [
      added(one, 'p50', 'p50, 1 connection (ms)'),
      added(one, 'p99', 'p99, 1 connection (ms)'),
      added(r500, 'p50', 'p50 at 500 req/s (ms)'),
      added(r500, 'p99', 'p99 at 500 req/s (ms)'),
      added(r1000, 'p50', 'p50 at 1,000 req/s (ms)'),
      p99At1000,
      { section, measure: 'saturation, 32 connections (req/s)', direct: sat.direct.throughput, floor: sat.floor.throughput, gateway: sat.gateway.throughput },
      { section, measure: 'CPU per request, 32 connections (us)', ...cpu, target: { text: '<= 2x floor', met: cpu.gateway <= 2 * cpu.floor } },
      { section, measure: 'CPU per request at 1,000 req/s (us)', ...cpu1000 },
      { section, measure: 'RSS after load (MB)', direct: rss.direct / 2 ** 20, floor: rss.floor / 2 ** 20, gateway: rss.gateway / 2 ** 20, digits: 1 },
    ];
    const storeRows = [storeFigures(section, stores?.main ?? 'sqlite', sat.gateway, r1000.gateway, sat.floor)];
    for (const [store, r] of othersSat) storeRows.push(storeFigures(section, store, r, others1000.get(store)!, sat.floor));
    return { rows, notes, stores: storeRows };
  } finally {
    await Promise.all([...Object.values(meters).map((m) => m.close()), others.close()]);
  }
}
