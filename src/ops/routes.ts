import Fastify, { type FastifyInstance } from 'fastify';
import { adminTokenGuard } from '../auth/admin-token.js';
import type { Catalog } from '../routing/catalog.js';
import type { Store } from '../store/types.js';
import { circuitState, registry, videoJobs, webhookBacklog, webhookOldestPending } from './metrics.js';
import { JOB_STATES, sharedBacklog, sharedJobCounts } from './outbox-backlog.js';
import type { Readiness } from './readiness.js';
import type { SignInLimiter } from '../console/sign-in-limit.js';

const CIRCUIT_CODE = { closed: 0, open: 1, half_open: 2 } as const;
const SCRAPE_STORE_TIMEOUT_MS = 2_000;

export interface OpsDeps {
  readiness: Readiness;
  store: Pick<Store, 'countJobsByState' | 'outboxBacklog'>;
  catalog: Catalog;
  adminToken: string | undefined;
  /** Serve /metrics on this app behind the admin token (false when a separate listener serves it). */
  metricsHere: boolean;
  /** Counts wrong admin tokens per client address, shared with the console sign-in and /admin. */
  limiter?: SignInLimiter;
}

/** Fills the gauges that describe shared state, then renders every metric in Prometheus text format. */
export async function scrape(deps: Pick<OpsDeps, 'store' | 'catalog'>): Promise<string> {
  for (const up of deps.catalog.upstreams.values()) circuitState.set({ upstream: up.name }, CIRCUIT_CODE[deps.catalog.circuits.stateOf(up.name)]);
  let timer: NodeJS.Timeout | undefined;
  try {
    const [counts, backlog] = await Promise.race([
      Promise.all([sharedJobCounts(deps.store), sharedBacklog(deps.store)]),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), SCRAPE_STORE_TIMEOUT_MS);
      }),
    ]);
    for (const state of new Set([...JOB_STATES, ...Object.keys(counts)])) videoJobs.set({ state }, counts[state] ?? 0);
    webhookBacklog.set(backlog.pending);
    webhookOldestPending.set(backlog.oldestCreatedAt === null ? 0 : Math.max(0, (Date.now() - backlog.oldestCreatedAt) / 1000));
  } catch {
    // The store is away: keep the last known counts; /ready reports the outage.
  } finally {
    clearTimeout(timer);
  }
  return registry.metrics();
}

/** `/health` (liveness), `/ready` (readiness) and, unless a separate listener serves it, `/metrics`. */
export function registerOpsRoutes(app: FastifyInstance, deps: OpsDeps): void {
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_req, reply) => {
    const r = await deps.readiness.report();
    reply.code(r.ready ? 200 : 503).header('cache-control', 'no-store');
    return r.body;
  });
  if (!deps.metricsHere) return;
  const guard = adminTokenGuard(deps.adminToken, deps.limiter);
  app.get('/metrics', { onRequest: async (req) => guard(req) }, async (_req, reply) => {
    const text = await scrape(deps);
    return reply.type(registry.contentType).send(text);
  });
}

/**
 * A listener of its own for `/metrics` (config `metrics.port`), without the admin token: meant for
 * a private interface that only the Prometheus server reaches.
 */
export async function startMetricsListener(deps: Pick<OpsDeps, 'store' | 'catalog'>, host: string, port: number): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  app.get('/metrics', async (_req, reply) => reply.type(registry.contentType).send(await scrape(deps)));
  await app.listen({ host, port });
  return app;
}
