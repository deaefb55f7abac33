import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { closeListener } from '../../src/http/close-listener.js';
import type { ConfigFile } from '../../src/config/schema.js';
import type { Clock } from '../../src/core/clock.js';
import { buildServices, type Services } from '../../src/services.js';
import { createLogger, type LogSink } from '../../src/ops/logger.js';
import type { KeyAction, RateLimits } from '../../src/store/types.js';

export interface TestGateway {
  url: string;
  app: FastifyInstance;
  services: Services;
  adminToken: string;
  dataDir: string;
  /** Creates an account (balance in currency units) and returns its id. */
  createAccount(name: string, opts?: { balance?: number; upstreams?: string[] | null; limits?: RateLimits }): Promise<string>;
  /** Creates a key for an account and returns the plaintext key. */
  createKey(account: string, opts?: { models?: string[]; actions?: KeyAction[]; expires?: string; limits?: RateLimits }): Promise<string>;
  /** Shorthand: a fresh account with `balance` and an all-access key. */
  newKey(balance?: number, opts?: { limits?: RateLimits; models?: string[]; actions?: KeyAction[] }): Promise<{ key: string; account: string }>;
  balance(account: string): Promise<number>;
  close(): Promise<void>;
}

let counter = 0;

/**
 * Starts a real gateway on 127.0.0.1 with a temp SQLite file (or `database`), the given
 * upstreams/models, and the background poller off unless asked for.
 */
export async function startTestGateway(
  partial: Partial<Record<keyof ConfigFile, unknown>> & { upstreams?: unknown[]; models?: Record<string, unknown> },
  opts: { clock?: Clock; poller?: boolean; /** Receives every log line (at the config's log_level) instead of silence. */ logSink?: LogSink } = {},
): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-test-'));
  const raw: Record<string, unknown> = {
    database: `sqlite:${join(dataDir, 'gateway.db')}`,
    data_dir: dataDir,
    log_level: 'silent',
    admin_token: 'test-admin-token-0123456789',
    secret: 'test-secret-0123456789abcdef',
    ...partial,
    server: { host: '127.0.0.1', port: 0, ...((partial.server as object) ?? {}) },
    video: { poll_interval_ms: 0, refresher_interval_ms: 0, media: { allow_private_networks: true }, ...((partial.video as object) ?? {}) },
  };
  const cfg = validateConfig(raw, '(test)');
  const services = await buildServices(cfg, opts.logSink ? { logSink: opts.logSink, clock: opts.clock } : { logger: createLogger('silent'), clock: opts.clock });
  const app = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  // output_url must point at this very server.
  (services.video.deps.settings as { publicUrl: string }).publicUrl = url;
  if (opts.poller) services.poller.start();

  const gw: TestGateway = {
    url,
    app,
    services,
    adminToken: services.config.admin_token,
    dataDir,
    async createAccount(name, o = {}) {
      const a = await services.admin.createAccount(name, { balance: o.balance ?? 0, upstreams: o.upstreams ?? null, limits: o.limits });
      return a.id;
    },
    async createKey(account, o = {}) {
      const { key } = await services.admin.createKey({ account, models: o.models, actions: o.actions, expires: o.expires, limits: o.limits });
      return key;
    },
    async newKey(balance = 100, o = {}) {
      const account = `acct-${process.pid}-${++counter}`;
      await gw.createAccount(account, { balance, limits: o.limits });
      return { key: await gw.createKey(account, { models: o.models, actions: o.actions }), account };
    },
    async balance(account) {
      // Embeddings charges are acknowledged before they are written (billing/charges.ts): the
      // balance a test compares is the one with every answered request's charge in it.
      await services.charges.drain();
      const a = await services.store.getAccountByName(account);
      return a ? a.balance : NaN;
    },
    async close() {
      // Not app.close(): a connection whose last answer was still being written (a download whose
      // body the test has read whole) would hold it for the keep-alive timeout.
      await closeListener(app);
      await services.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return gw;
}

/** JSON request helper over real HTTP. */
export async function call(
  gw: { url: string },
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; json: any; text: string }> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(gw.url + path, { method, headers, body });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}
