import { rssBytes } from '../lib/proc.js';
import type { Row } from '../lib/table.js';
import type { Endpoint } from './embeddings.js';
import { OtherStores, storeFigures, type StoreFigures, type StoreGateways } from './stores.js';
import { assertHealthy, eachPath, medianOfRounds, PATHS, PathMeter, rotatingRounds, type Path, type PathName, type PhaseResult, type WarmUp } from './paths.js';
import type { VideoJob } from './video-jobs.js';

/**
 * Section 2: GET /v1/videos/{id} of a job that stays processing. The gateway answers from its store
 * (its refresh interval is far away); the floor proxy and the direct path ask the simulator.
 */
export interface PollPhases {
  warm: WarmUp;
  saturationMs: number;
  rateMs: number;
  /**
   * Rounds of the 32-connection phase in the polls section, in rotating order across the paths and
   * the other stores' gateways (each figure the median of its rounds); the scale section runs one.
   */
  rounds: number;
}

export interface PollFigures {
  saturation: PhaseResult;
  atRate: PhaseResult;
  cpuPerRequest: number;
  rssBytes: number;
}

export const POLL_RATE = 1000;

function pollPath(name: PathName, e: Endpoint, path: string | ((i: number) => string)): Path {
  return { name, origin: e.origin, pid: e.pid, spec: { method: 'GET', path, headers: { authorization: `Bearer ${e.token}` } } };
}

/** The two measured phases (32 connections closed loop, then a fixed rate) on one path. */
export async function measurePolls(m: PathMeter, phases: PollPhases): Promise<PollFigures> {
  await m.warmUp(phases.warm);
  const saturation = await m.closedLoop(32, phases.saturationMs);
  const atRate = await m.fixedRate(POLL_RATE, phases.rateMs);
  return { saturation, atRate, cpuPerRequest: saturation.cpuPerRequest, rssBytes: rssBytes(m.path.pid) };
}

/** Polls on one gateway only (the scale section reuses this with a path per request). */
export async function measureGatewayPolls(e: Endpoint, path: (i: number) => string, phases: PollPhases): Promise<PollFigures & { notes: string[] }> {
  const m = new PathMeter(pollPath('gateway', e, path));
  try {
    const f = await measurePolls(m, phases);
    return { ...f, notes: assertHealthy([m], 'polls') };
  } finally {
    await m.close();
  }
}

export async function benchPolls(
  endpoints: Record<PathName, Endpoint>,
  job: VideoJob,
  phases: PollPhases,
  log: (line: string) => void,
  stores?: StoreGateways,
): Promise<{ rows: Row[]; notes: string[]; figures: Record<PathName, PollFigures>; stores: StoreFigures[] }> {
  const meters = {
    direct: new PathMeter(pollPath('direct', endpoints.direct, `/v1/videos/${job.taskId}`)),
    floor: new PathMeter(pollPath('floor', endpoints.floor, `/v1/videos/${job.taskId}`)),
    gateway: new PathMeter(pollPath('gateway', endpoints.gateway, `/v1/videos/${job.id}`)),
  };
  // Each other store's gateway polls its own job.
  const others = new OtherStores(stores, (o) => pollPath('gateway', o.endpoint, `/v1/videos/${o.jobId!}`));
  const section = 'Video polls';
  try {
    const figures: Partial<Record<PathName, PollFigures>> = {};
    // Phase by phase across the paths, like the embeddings section.
    await eachPath(meters, (m) => m.warmUp(phases.warm));
    await others.each((m) => m.warmUp(phases.warm));
    // 32 connections: rounds in rotating order, the other stores' gateways right after the main one.
    const list = [...PATHS.map((k) => meters[k]), ...others.meters.map((o) => o.meter)];
    const rounds = (await rotatingRounds(list, phases.rounds, (m) => m.closedLoop(32, phases.saturationMs))).map(medianOfRounds);
    const sat = Object.fromEntries(PATHS.map((k, i) => [k, rounds[i]!])) as Record<PathName, PhaseResult>;
    const othersSat = new Map(others.meters.map((o, i) => [o.store, rounds[PATHS.length + i]!]));
    const rate = await eachPath(meters, (m) => m.fixedRate(POLL_RATE, phases.rateMs));
    const othersRate = await others.each((m) => m.fixedRate(POLL_RATE, phases.rateMs));
    for (const name of ['direct', 'floor', 'gateway'] as const) {
      figures[name] = { saturation: sat[name], atRate: rate[name], cpuPerRequest: sat[name].cpuPerRequest, rssBytes: rssBytes(meters[name].path.pid) };
    }
    log(`${section}: done`);
    const notes = [...assertHealthy(Object.values(meters), section), ...others.healthNotes(section)];
    const f = figures as Record<PathName, PollFigures>;
    const perCore = (n: PathName): number => 1_000_000 / f[n].cpuPerRequest;
    const rows: Row[] = [
      { section, measure: 'throughput, 32 connections (req/s)', direct: f.direct.saturation.throughput, floor: f.floor.saturation.throughput, gateway: f.gateway.saturation.throughput },
      { section, measure: 'p99, 32 connections (ms)', direct: f.direct.saturation.summary.p99, floor: f.floor.saturation.summary.p99, gateway: f.gateway.saturation.summary.p99, digits: 2 },
      { section, measure: `p99 at ${POLL_RATE.toLocaleString('en-US')} req/s (ms)`, direct: f.direct.atRate.summary.p99, floor: f.floor.atRate.summary.p99, gateway: f.gateway.atRate.summary.p99, digits: 3 },
      { section, measure: 'CPU per request, 32 connections (us)', direct: f.direct.cpuPerRequest, floor: f.floor.cpuPerRequest, gateway: f.gateway.cpuPerRequest },
      { section, measure: `CPU per request at ${POLL_RATE.toLocaleString('en-US')} req/s (us)`, direct: f.direct.atRate.cpuPerRequest, floor: f.floor.atRate.cpuPerRequest, gateway: f.gateway.atRate.cpuPerRequest },
      {
        section,
        measure: 'req/s per core of CPU, 32 connections',
        direct: perCore('direct'),
        floor: perCore('floor'),
        gateway: perCore('gateway'),
        target: { text: `>= 10,000 (floor: ${Math.round(perCore('floor')).toLocaleString('en-US')})`, met: perCore('gateway') >= 10_000 },
      },
    ];
    const storeRows = [storeFigures(section, stores?.main ?? 'sqlite', sat.gateway, rate.gateway, sat.floor)];
    for (const [store, r] of othersSat) storeRows.push(storeFigures(section, store, r, othersRate.get(store)!, sat.floor));
    return { rows, notes, figures: f, stores: storeRows };
  } finally {
    await Promise.all([...Object.values(meters).map((m) => m.close()), others.close()]);
  }
}

/** Throws unless the gateway answers the job as processing (polls must hit the store path). */
export async function checkProcessing(gateway: { url: string; key: string }, id: string): Promise<void> {
  const res = await fetch(`${gateway.url}/v1/videos/${id}`, { headers: { authorization: `Bearer ${gateway.key}` } });
  const json = (await res.json()) as { status?: string };
  if (res.status !== 200 || json.status !== 'processing') throw new Error(`poll check: HTTP ${res.status}, status ${String(json.status)}`);
}
