import Fastify, { type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import { Authorizer } from '../../src/auth/authorize.js';
import type { AuthContext } from '../../src/auth/types.js';
import { configSchema } from '../../src/config/schema.js';
import { errors } from '../../src/core/errors.js';
import { toMicros } from '../../src/core/money.js';
import { EmbeddingsService } from '../../src/embeddings/service.js';
import type { EmbeddingVendorModule } from '../../src/embeddings/types.js';
import { Executor } from '../../src/http/executor.js';
import { sendError, toGatewayError } from '../../src/http/render.js';
import { MemoryRateLimiter } from '../../src/limits/memory.js';
import type { Quota } from '../../src/limits/types.js';
import { registerEmbeddingsRoutes } from '../../src/routes/embeddings.js';
import { installRequestLifecycle } from '../../src/http/lifecycle.js';
import { Catalog } from '../../src/routing/catalog.js';
import type { SimServer } from '../../src/sim/framework.js';
import { openStore } from '../../src/store/index.js';
import type { ApiKeyRecord, RateLimits, Store } from '../../src/store/types.js';
import '../../src/auth/types.js';
import { closeListener } from '../../src/http/close-listener.js';

/**
 * A small gateway for the embeddings tests: the real route, service, catalog, SQLite store (in memory),
 * in-process limiter and executor, behind a test authenticator that maps bearer keys to accounts.
 * It listens on 127.0.0.1 so clients (the official SDK included) talk real HTTP to it.
 */
export interface Harness {
  url: string;
  app: FastifyInstance;
  store: Store;
  limiter: MemoryRateLimiter;
  service: EmbeddingsService;
  catalog: Catalog;
  /** A fresh account with `balance` (currency units) and a key for it. */
  newKey(balance?: number, limits?: RateLimits): Promise<{ key: string; accountId: string }>;
  balance(accountId: string): Promise<number>;
  /** The auth context behind a key (for calling the service directly). */
  context(key: string): Promise<AuthContext>;
  close(): Promise<void>;
}

export interface UpstreamSpec {
  module: EmbeddingVendorModule;
  sim: SimServer;
  name?: string;
  priority?: number;
  timeoutMs?: number;
  /** Extra options merged over the demo's (e.g. max_batch). */
  options?: Record<string, unknown>;
  modelMap?: Record<string, string>;
  /** Overrides the demo's api_key. */
  apiKey?: string;
  /** Serve only these models (default: every model of the demo). */
  models?: string[];
}

export async function startHarness(specs: UpstreamSpec[], opts: { defaults?: Quota; prices?: Record<string, number> } = {}): Promise<Harness> {
  const upstreams: Record<string, unknown>[] = [];
  const models: Record<string, unknown> = {};
  for (const s of specs) {
    const d = s.module.simulator.demo(s.sim);
    const names = s.models ?? d.models.map((m) => m.name);
    for (const m of d.models) {
      if (!names.includes(m.name)) continue;
      const price = opts.prices?.[m.name] ?? m.pricePerMillionInput;
      models[m.name] = { capabilities: m.capabilities, price: { per_million_input_tokens: price } };
    }
    for (const n of names) models[n] ??= { capabilities: ['embedding'], price: { per_million_input_tokens: opts.prices?.[n] ?? 1 } };
    upstreams.push({
      ...d.options,
      ...(s.options ?? {}),
      name: s.name ?? `${s.module.id}-up`,
      vendor: s.module.id,
      base_url: s.sim.url,
      api_key: s.apiKey ?? d.apiKey,
      models: names,
      priority: s.priority ?? 1,
      timeout_ms: s.timeoutMs ?? 5_000,
      ...(s.modelMap ? { model_map: s.modelMap } : {}),
    });
  }
  const cfg = configSchema.parse({ upstreams, models });
  const catalog = new Catalog(cfg);
  const store = await openStore('sqlite::memory:', { dataDir: '.' });
  const limiter = new MemoryRateLimiter();
  const executor = new Executor();
  const service = new EmbeddingsService({
    catalog,
    store,
    executor,
    limiter,
    clock: { now: () => Date.now() },
    defaults: opts.defaults ?? { rpm: 10_000, tpm: 100_000_000 },
  });
  const keys = new Map<string, AuthContext>();

  const app = Fastify({ bodyLimit: 50 * 1024 * 1024 });
  app.setErrorHandler((err, _req, reply) => sendError(reply, toGatewayError(err, 50 * 1024 * 1024)));
  installRequestLifecycle(app, 60_000);
  app.addHook('onRequest', async (req) => {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    const ctx = m ? keys.get(m[1]!) : undefined;
    if (!ctx) throw errors.unauthenticated();
    // The account row is re-read so limits and balance changes made by a test are seen.
    const account = await store.getAccount(ctx.account.id);
    req.auth = { account: account!, key: ctx.key };
  });
  registerEmbeddingsRoutes(app, { authorizer: new Authorizer(catalog), embeddings: service });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

  return {
    url,
    app,
    store,
    limiter,
    service,
    catalog,
    async newKey(balance = 100, limits: RateLimits = {}) {
      const account = await store.createAccount({ name: `acct-${randomUUID()}`, balance: toMicros(balance), upstreams: null, limits, now: Date.now() });
      const key = `sk-test-${randomUUID()}`;
      const record: ApiKeyRecord = {
        id: randomUUID(),
        accountId: account.id,
        hash: '',
        prefix: key.slice(0, 10),
        name: null,
        models: ['*'],
        actions: ['embeddings'],
        limits: {},
        expiresAt: null,
        revokedAt: null,
        lastUsedAt: null,
        createdAt: Date.now(),
      };
      keys.set(key, { account, key: record });
      return { key, accountId: account.id };
    },
    async balance(accountId) {
      return (await store.getAccount(accountId))!.balance;
    },
    async context(key) {
      const ctx = keys.get(key)!;
      return { account: (await store.getAccount(ctx.account.id))!, key: ctx.key };
    },
    async close() {
      await closeListener(app);
      await executor.close();
      await limiter.close();
      await store.close();
    },
  };
}

export async function post(h: { url: string }, key: string, body: unknown): Promise<{ status: number; headers: Headers; json: any; text: string }> {
  const res = await fetch(`${h.url}/v1/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** Float32 view of a vector as a client would decode it (floats or base64). */
export function asFloat32(v: number[] | string): Float32Array {
  if (typeof v !== 'string') return Float32Array.from(v);
  const b = Buffer.from(v, 'base64');
  const copy = new Uint8Array(b.length);
  copy.set(b);
  return new Float32Array(copy.buffer);
}
