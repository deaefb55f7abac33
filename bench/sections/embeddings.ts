import type { Peer } from '../lib/peers.js';
import { peakRssBytes, rssBytes } from '../lib/proc.js';
import type { Row } from '../lib/table.js';
import { EMBEDDING_MODEL } from '../lib/setup.js';
import { OtherStores, storeFigures, type StoreFigures, type StoreGateways } from './stores.js';
import { assertHealthy, eachPath, medianOfRounds, PATHS, PathMeter, rotatingRounds, type Path, type PathName, type PhaseResult, type WarmUp } from './paths.js';

/**
 * Section 1: POST /v1/embeddings answered with one 1,536-float vector, straight to the upstream,
 * through the floor proxy and through the gateway (auth, limiter, balance check, billing, logging).
 */
export interface EmbeddingsPhases {
  warm: WarmUp;
  oneConnMs: number;
  rateMs: number;
  saturationMs: number;
  /**
   * Rounds of the one-connection and 32-connection phases, in rotating order across the paths
   * (each figure is the median of its rounds, see `medianOfRounds`). The fixed-rate phases run once:
   * their p99 needs every request of one long phase.
   */
  rounds: number;
}

export interface Endpoint {
  origin: string;
  pid: number;
  /** Bearer token this endpoint expects (the upstream's key, or a gateway key). */
  token: string;
  /** Headers that replace the default ones (a peer gateway's own request form). */
  headers?: Record<string, string>;
}

const INPUT = 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.';

function pathFor(name: string, e: Endpoint, format: 'float' | 'base64'): Path {
  return {
    name,
    origin: e.origin,
    pid: e.pid,
    spec: {
      method: 'POST',
      path: '/v1/embeddings',
      headers: e.headers ?? { authorization: `Bearer ${e.token}`, 'content-type': 'application/json' },
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
  peers: readonly Peer[] = [],
): Promise<{ rows: Row[]; notes: string[]; stores: StoreFigures[] }> {
  const meters = {
    direct: new PathMeter(pathFor('direct', endpoints.direct, format)),
    floor: new PathMeter(pathFor('floor', endpoints.floor, format)),
    gateway: new PathMeter(pathFor('gateway', endpoints.gateway, format)),
  };
  // The same gateway on the other stores runs the phases the store comparison needs.
  const others = new OtherStores(stores, (o) => pathFor('gateway', o.endpoint, format));
  const peerMeters = peers.map((p) => new PathMeter(pathFor(p.name, { origin: p.origin, pid: p.pid, token: '', headers: p.headers }, format)));
  /** Runs `fn` on the three paths, then on each peer, back to back. */
  const each = async <T>(fn: (m: PathMeter) => Promise<T>): Promise<Record<PathName, T> & { peers: Record<string, T> }> => {
    const main = await eachPath(meters, fn);
    const byPeer: Record<string, T> = {};
    for (const m of peerMeters) byPeer[m.path.name] = await fn(m);
    return { ...main, peers: byPeer };
  };
  const section = `Embeddings (${format})`;
  try {
    const sizes = await each((m) => checkAnswer(m.path, format));
    await others.each((m) => checkAnswer(m.path, format));
    log(`${section}: answer ${sizes.direct} bytes direct, ${sizes.gateway} bytes through the gateway${peers.map((p) => `, ${sizes.peers[p.name]} through ${p.name}`).join('')}`);
    // Warm-up: JIT, connection pools on every hop, SQLite page cache.
    await each((m) => m.warmUp(phases.warm));
    await others.each((m) => m.warmUp(phases.warm));
    /**
     * `fn` on every path, the other stores' gateways and the peers, `phases.rounds` times in rotating
     * order (the other stores' gateways right after the main one); each path's median round.
     */
    const inRounds = async (fn: (m: PathMeter) => Promise<PhaseResult>) => {
      const list = [...PATHS.map((k) => meters[k]), ...others.meters.map((o) => o.meter), ...peerMeters];
      const results = (await rotatingRounds(list, phases.rounds, fn)).map(medianOfRounds);
      const main = Object.fromEntries(PATHS.map((k, i) => [k, results[i]!])) as Record<PathName, PhaseResult>;
      const stores = new Map(others.meters.map((o, i) => [o.store, results[PATHS.length + i]!]));
      const offset = PATHS.length + others.meters.length;
      const byPeer = Object.fromEntries(peerMeters.map((m, i) => [m.path.name, results[offset + i]!]));
      return { main: { ...main, peers: byPeer }, stores };
    };
    const one = (await inRounds((m) => m.closedLoop(1, phases.oneConnMs))).main;
    log(`${section}: 1 connection done`);
    const r500 = await each((m) => m.fixedRate(500, phases.rateMs));
    const r1000 = await each((m) => m.fixedRate(1000, phases.rateMs));
    const others1000 = await others.each((m) => m.fixedRate(1000, phases.rateMs));
    log(`${section}: fixed rates done`);
    const { main: sat, stores: othersSat } = await inRounds((m) => m.closedLoop(32, phases.saturationMs));
    log(`${section}: saturation done`);
    for (const [label, r] of [['1 conn', one], ['500/s', r500], ['1000/s', r1000], ['32 conns', sat]] as const) {
      const all: Array<[string, PhaseResult]> = [...PATHS.map((k) => [k, r[k]] as [string, PhaseResult]), ...Object.entries(r.peers)];
      log(`${section}: CPU us/req ${label}: ${all.map(([k, x]) => `${k} ${x.cpuPerRequest.toFixed(0)} (${x.ok} req)`).join(', ')}`);
    }
    for (const [store, r] of othersSat) log(`${section}: CPU us/req 32 conns, gateway on ${store}: ${r.cpuPerRequest.toFixed(0)} (${r.ok} req)`);
    const notes = [...assertHealthy([...Object.values(meters), ...peerMeters], section), ...others.healthNotes(section)];
    const pids = { direct: endpoints.direct.pid, floor: endpoints.floor.pid, gateway: endpoints.gateway.pid };
    const mb = (b: number): number => b / 2 ** 20;
    const memory = (read: (pid: number) => number): Pick<Row, 'direct' | 'floor' | 'gateway' | 'peers'> => ({
      direct: mb(read(pids.direct)),
      floor: mb(read(pids.floor)),
      gateway: mb(read(pids.gateway)),
      peers: Object.fromEntries(peers.map((p) => [p.name, mb(read(p.pid))])),
    });
    for (const [rate, r] of [[500, r500], [1000, r1000]] as const) {
      const slow = [...PATHS.map((k) => [k, r[k]] as const), ...Object.entries(r.peers)].filter(([, x]) => x.throughput < rate * 0.95);
      for (const [name, x] of slow) notes.push(`${section}, ${name}: sustained ${Math.round(x.throughput)} of ${rate} req/s`);
    }

    type Phase = typeof one;
    const figures = (r: Phase, pick: (x: PhaseResult) => number, addedTo?: (x: PhaseResult) => number): Pick<Row, 'direct' | 'floor' | 'gateway' | 'peers'> => {
      const base = addedTo ? addedTo(r.direct) : 0;
      return {
        direct: pick(r.direct),
        floor: pick(r.floor) - base,
        gateway: pick(r.gateway) - base,
        peers: Object.fromEntries(Object.entries(r.peers).map(([k, x]) => [k, pick(x) - base])),
      };
    };
    const added = (r: Phase, q: 'p50' | 'p99', measure: string): Row => ({
      section,
      measure,
      ...figures(r, (x) => x.summary[q], (x) => x.summary[q]),
      direct: r.direct.summary[q],
      digits: 3,
    });
    const cpu = (r: Phase, measure: string): Row => {
      const f = figures(r, (x) => x.cpuPerRequest);
      const limit = 2 * f.floor!;
      return { section, measure, ...f, target: { text: `<= 2.0x floor (${limit.toFixed(0)})`, met: f.gateway! <= limit } };
    };

    const p50One = added(one, 'p50', 'added p50, 1 connection (ms)');
    // An absolute target: the note says whether this machine's bare proxy itself meets it.
    p50One.target = { text: `<= +0.20 (floor: +${p50One.floor!.toFixed(3)})`, met: p50One.gateway! <= 0.2 };
    const p99At1000 = added(r1000, 'p99', 'added p99 at 1,000 req/s (ms)');
    p99At1000.target = { text: `<= floor +1 (${(p99At1000.floor! + 1).toFixed(3)})`, met: p99At1000.gateway! <= p99At1000.floor! + 1 };
    const rss: Row = { section, measure: 'RSS after load (MB)', ...memory(rssBytes), digits: 1 };
    rss.target = { text: `<= floor +40 (${(rss.floor! + 40).toFixed(1)})`, met: rss.gateway! <= rss.floor! + 40 };
    const peak: Row = { section, measure: 'peak RSS (MB)', ...memory(peakRssBytes), digits: 1 };
    peak.target = { text: `<= floor +40 (${(peak.floor! + 40).toFixed(1)})`, met: peak.gateway! <= peak.floor! + 40 };
    const rows: Row[] = [
      p50One,
      added(one, 'p99', 'added p99, 1 connection (ms)'),
      added(r500, 'p50', 'added p50 at 500 req/s (ms)'),
      added(r500, 'p99', 'added p99 at 500 req/s (ms)'),
      added(r1000, 'p50', 'added p50 at 1,000 req/s (ms)'),
      p99At1000,
      { section, measure: 'saturation, 32 connections (req/s)', ...figures(sat, (x) => x.throughput) },
      cpu(sat, 'CPU per request, 32 connections (us)'),
      cpu(r1000, 'CPU per request at 1,000 req/s (us)'),
      cpu(one, 'CPU per request, 1 connection (us)'),
      rss,
      peak,
    ];
    const storeRows = [storeFigures(section, stores?.main ?? 'sqlite', sat.gateway, r1000.gateway, sat.floor)];
    for (const [store, r] of othersSat) storeRows.push(storeFigures(section, store, r, others1000.get(store)!, sat.floor));
    return { rows, notes, stores: storeRows };
  } finally {
    await Promise.all([...[...Object.values(meters), ...peerMeters].map((m) => m.close()), others.close()]);
  }
}
