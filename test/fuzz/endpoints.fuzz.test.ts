import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { ensureDemoKey, startDemo, type Demo } from '../../src/demo.js';
import { buildServices, createLogger, type Services } from '../../src/services.js';
import { call } from '../helpers/gateway.js';
import { contractViolation, fuzzRequest, sendFuzz, type FuzzTargets } from './requests.js';
import { ledgerViolations } from './ledger-check.js';
import { aimAt } from './targets.js';

/**
 * Property-based fuzzing of every public and admin endpoint on the embedded default (every vendor's
 * simulator behind it): whatever the method, path, id, query, headers, content type or body, the
 * answer is never a 5xx and every error has the spec's shape. Kept to a few seconds here;
 * `npm run fuzz -- --cases N` runs the same generator for as long as wanted against a child process.
 * A failure prints fast-check's seed and the shrunk request, so it can be replayed.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

let demo: Demo;
let services: Services;
let app: FastifyInstance;
let dataDir: string;
let base: string;
let targets: FuzzTargets;
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'gw-fuzz-'));
  demo = await startDemo({ host: '127.0.0.1', port: 0, dataDir, taskMs: 200 });
  demo.config.log_level = 'silent';
  services = await buildServices(demo.config, { logger: createLogger('silent') });
  app = buildApp(services);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const key = await ensureDemoKey(services.admin, dataDir);
  targets = await aimAt(base, agent, key, services.config.admin_token!);
}, 60_000);

afterAll(async () => {
  agent.destroy();
  await app?.close();
  await services?.close();
  await Promise.all((demo?.sims ?? []).map((s) => s.close()));
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('fuzzing every endpoint', () => {
  it(`never answers 5xx and always answers errors in the spec shape (${RUNS} requests)`, async () => {
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(fuzzRequest(targets), async (req) => {
        const r = await sendFuzz(base, req, agent, 10_000);
        if (r.status === -1) return; // the client library would not send it
        expect(r.status, `no answer: ${r.body}`).toBeGreaterThan(0);
        answered++;
        expect(contractViolation(req, r.status, r.body)).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
    expect(answered).toBeGreaterThan(RUNS * 0.9);
    // No poller runs here: jobs still processing keep their holds, which the check then allows.
    expect(await ledgerViolations(base, agent, targets.adminToken, 0)).toEqual([]);
    expect((await call({ url: base }, 'GET', '/health')).status).toBe(200);
  }, 120_000);
});
