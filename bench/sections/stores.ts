import { STORES, type StoreName } from '../lib/stores.js';
import type { Endpoint } from './embeddings.js';
import { assertHealthy, PathMeter, type Path, type PhaseResult } from './paths.js';

/**
 * The store comparison: the same gateway on SQLite and on PostgreSQL + Redis, measured in the same
 * run. The main table's Gateway column is the first store's gateway; every other store's gateway
 * runs each comparison phase right after it, so drift on a shared machine hits them alike.
 */
export interface StoreGateways {
  /** The store of the main table's gateway. */
  main: StoreName;
  others: OtherStore[];
}

export interface OtherStore {
  store: StoreName;
  endpoint: Endpoint;
  /** The video job this store's gateway polls (the polls section). */
  jobId?: string;
}

/** What the comparison table shows for one section on one store. */
export interface StoreFigures {
  section: string;
  store: StoreName;
  saturation: number;
  p50At32Ms: number;
  cpuPerRequestUs: number;
  p99AtRateMs: number;
  /** The bare proxy's CPU per request in the same phase (the #16 ratio's denominator). */
  floorCpuPerRequestUs: number;
}

/** Meters for the other stores' gateways, each path built like the main gateway's. */
export class OtherStores {
  readonly meters: Array<{ store: StoreName; meter: PathMeter }>;

  constructor(stores: StoreGateways | undefined, pathFor: (o: OtherStore) => Path) {
    this.meters = (stores?.others ?? []).map((o) => ({
      store: o.store,
      meter: new PathMeter({ ...pathFor(o), label: `gateway (${o.store})` }),
    }));
  }

  /** Runs `fn` on each other store's gateway in turn. */
  async each<T>(fn: (m: PathMeter) => Promise<T>): Promise<Map<StoreName, T>> {
    const out = new Map<StoreName, T>();
    for (const { store, meter } of this.meters) out.set(store, await fn(meter));
    return out;
  }

  healthNotes(section: string): string[] {
    return assertHealthy(this.meters.map((m) => m.meter), section);
  }

  close(): Promise<unknown> {
    return Promise.all(this.meters.map((m) => m.meter.close()));
  }
}

export function storeFigures(
  section: string,
  store: StoreName,
  sat: PhaseResult,
  atRate: PhaseResult,
  floorSat: PhaseResult,
): StoreFigures {
  return {
    section,
    store,
    saturation: sat.throughput,
    p50At32Ms: sat.summary.p50,
    cpuPerRequestUs: sat.cpuPerRequest,
    p99AtRateMs: atRate.summary.p99,
    floorCpuPerRequestUs: floorSat.cpuPerRequest,
  };
}

/** The #16 targets for a store other than SQLite, each computed from the figures of the same run. */
interface Verdicts {
  saturationVsSqlite?: number;
  p50VsSqlite?: number;
  cpuVsFloor: number;
}

function verdicts(f: StoreFigures, sqlite: StoreFigures | undefined): Verdicts {
  return {
    saturationVsSqlite: sqlite ? f.saturation / sqlite.saturation : undefined,
    p50VsSqlite: sqlite ? f.p50At32Ms / sqlite.p50At32Ms : undefined,
    cpuVsFloor: f.cpuPerRequestUs / f.floorCpuPerRequestUs,
  };
}

const n0 = (v: number): string => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : 'n/a');
const n2 = (v: number): string => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');

/** `0.85x, met` with the target applied only where it is one of the (the non-SQLite stores). */
function judged(value: number | undefined, ok: (v: number) => boolean, applies: boolean): string {
  if (value === undefined || !Number.isFinite(value)) return '';
  const text = `${value.toFixed(2)}x`;
  if (!applies) return text;
  return ok(value) ? `${text}, met` : `${text}, **missed**`;
}

export function renderStoreTable(figures: StoreFigures[]): string {
  const head =
    '| Section | Store | Saturation, 32 conn (req/s) | p50 at 32 conn (ms) | CPU per request, 32 conn (us) | p99 at 1,000 req/s (ms) | ' +
    "Saturation / SQLite's (target >= 0.8x) | p50 / SQLite's (target <= 2x) | CPU / floor proxy's (target <= 2x) |";
  const rule = '|---|---|--:|--:|--:|--:|--:|--:|--:|';
  const lines = figures.map((f) => {
    const sqlite = figures.find((g) => g.section === f.section && g.store === 'sqlite');
    const isTarget = STORES[f.store].database === 'postgres';
    const v = verdicts(f, f.store === 'sqlite' ? undefined : sqlite);
    return (
      `| ${f.section} | ${STORES[f.store].label} | ${n0(f.saturation)} | ${n2(f.p50At32Ms)} | ${n0(f.cpuPerRequestUs)} | ${n2(f.p99AtRateMs)} | ` +
      `${judged(v.saturationVsSqlite, (x) => x >= 0.8, isTarget)} | ${judged(v.p50VsSqlite, (x) => x <= 2, isTarget)} | ` +
      `${judged(v.cpuVsFloor, (x) => x <= 2, isTarget)} |`
    );
  });
  return [head, rule, ...lines].join('\n');
}
