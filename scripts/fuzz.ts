/**
 * Long fuzzing runs: `npm run fuzz -- --cases 20000 [--concurrency 8] [--big 0.02] [--seed 42] [--log FILE] [--settle-seconds 60] [--only REGEX]`.
 *
 * Starts the built gateway (bin/gateway.js) on the embedded default in a temporary directory, sends
 * N fuzzed requests (the generator of test/fuzz/requests.ts) from several clients at once, a share
 * of them with bodies near the 10 MB limit, and samples the process's RSS from /proc throughout.
 * Fails (exit 1) on any 5xx other than the designed load shedding (503 `overloaded`), on any error
 * not in the spec's shape, if the process dies or stops answering /health, if the ledgers do not add
 * up once the jobs have settled, or if RSS does not come back near its baseline afterwards. Prints the figures the README quotes.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { contractViolation, fuzzRequest, sendFuzz, type FuzzRequest, type FuzzTargets } from '../test/fuzz/requests.js';
import { ledgerViolations } from '../test/fuzz/ledger-check.js';
import { aimAt } from '../test/fuzz/targets.js';
import { redact } from '../src/core/redact.js';

const { values: opts } = parseArgs({
  options: {
    cases: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
    big: { type: 'string', default: '0.02' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    log: { type: 'string' },
    'settle-seconds': { type: 'string', default: '60' },
    /** Only the routes whose `METHOD name` (test/fuzz/routes.ts) matches this regular expression. */
    only: { type: 'string' },
  },
});
const CASES = Number(opts.cases);
const CONCURRENCY = Number(opts.concurrency);
const BIG_SHARE = Number(opts.big);
const SEED = Number(opts.seed);
/**
 * With --log FILE: one JSON line per request (method, path, status, start of the body), for triage,
 * redacted like the gateway's own lines (the requests carry the run's keys). A file that cannot be
 * written turns logging off instead of ending the run.
 */
const LOG = opts.log ? createWriteStream(opts.log) : undefined;
LOG?.on('error', (e) => {
  console.error(`--log ${String(opts.log)}: ${e.message}; logging off`);
  LOG.destroy();
});
/** RSS after the run may exceed the baseline by this factor (V8 keeps some heap it grew into). */
const SETTLE_FACTOR = 1.5;
const SETTLE_MS = Number(opts['settle-seconds']) * 1000;

/** As `npm start` runs the gateway: glibc then returns freed large buffers (README "Memory"). */
const RETURN_FREED_MEMORY = { MALLOC_MMAP_THRESHOLD_: '131072', MALLOC_TRIM_THRESHOLD_: '131072' };

const BIN = fileURLToPath(new URL('../bin/gateway.js', import.meta.url));

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

function rssMb(pid: number): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return NaN; // the process is gone (the run failed and killed it)
  }
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bodies near the limit: the memory worst case (each is parsed and held while its request runs). */
function bigRequests(t: FuzzTargets): FuzzRequest[] {
  const words = (n: number) => 'lorem ipsum dolor sit amet '.repeat(Math.ceil(n / 27)).slice(0, n);
  const json = { 'content-type': 'application/json', authorization: `Bearer ${t.key}` };
  const near = 9_800_000;
  const [video, embedding, chat] = ['video', 'embedding', 'chat'].map((c) => t.byCapability[c]?.[0] ?? 'm');
  return [
    { method: 'POST', path: '/v1/embeddings', headers: json, body: JSON.stringify({ model: embedding, input: Array.from({ length: 2048 }, () => words(Math.floor(near / 2048) - 8)) }) },
    { method: 'POST', path: '/v1/chat/completions', headers: json, body: JSON.stringify({ model: chat, messages: [{ role: 'user', content: words(near) }] }) },
    { method: 'POST', path: '/v1/videos/generations', headers: json, body: JSON.stringify({ model: video, prompt: 'x', blob: { data: words(near) } }) },
    { method: 'POST', path: '/admin/accounts', headers: { ...json, authorization: `Bearer ${t.adminToken}` }, body: JSON.stringify({ name: words(near) }) },
    { method: 'POST', path: '/v1/embeddings', headers: json, body: JSON.stringify({ model: embedding, input: Array.from({ length: 400_000 }, (_, i) => i) }) },
  ];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-fuzz-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [BIN, 'serve'], { cwd: dir, env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), ...RETURN_FREED_MEMORY }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const health = async () => {
    try {
      return (await sendFuzz(base, { method: 'GET', path: '/health', headers: {} }, agent, 2_000)).status === 200;
    } catch {
      return false;
    }
  };
  let sampler: NodeJS.Timeout | undefined;
  try {
    // Ready once the demo key is written (after the listener is up) and /health answers.
    for (let i = 0; !(existsSync(join(dir, 'data', 'demo-key')) && (await health())); i++) {
      if (i > 300 || child.exitCode !== null) throw new Error(`the gateway did not start:\n${output}`);
      await sleep(100);
    }
    const targets = await setUp(base, dir, agent);
    const big = bigRequests(targets);
    const baseline = rssMb(child.pid!);
    let peak = baseline;
    sampler = setInterval(() => (peak = Math.max(peak, rssMb(child.pid!) || 0)), 100);

    const statuses = new Map<number, number>();
    const violations: string[] = [];
    let shed = 0;
    let sent = 0;
    let bigSent = 0;
    const arb = fuzzRequest(targets, opts.only ? new RegExp(opts.only) : undefined);
    const random = seeded(SEED);
    const batchSize = 500;
    let queue: FuzzRequest[] = [];
    let batch = 0;
    const next = (): FuzzRequest | undefined => {
      if (sent >= CASES) return undefined;
      const i = sent++;
      if (!opts.only && random() < BIG_SHARE) {
        bigSent++;
        return big[i % big.length];
      }
      if (queue.length === 0) queue = fc.sample(arb, { numRuns: batchSize, seed: SEED + ++batch });
      return queue.pop();
    };
    const started = Date.now();
    const worker = async () => {
      for (let req = next(); req; req = next()) {
        const r = await sendFuzz(base, req, agent, 60_000);
        if (LOG && !LOG.writableEnded && !LOG.destroyed) LOG.write(redact(JSON.stringify({ method: req.method, path: req.path.slice(0, 600), status: r.status, body: r.body.slice(0, 300), headers: JSON.stringify(req.headers).slice(0, 600), from: req.from, sent: Buffer.isBuffer(req.body) ? req.body.toString('latin1').slice(0, 3000) : req.body?.slice(0, 3000) })) + '\n');
        if (r.status === -1) continue;
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 503 && r.body.includes('"overloaded"')) {
          shed++;
          continue;
        }
        const v = r.status === 0 ? `no answer (${r.body})` : contractViolation(req, r.status, r.body);
        if (v) violations.push(`${req.method} ${req.path.slice(0, 120)}: ${v}`);
        if (child.exitCode !== null) throw new Error(`the gateway exited:\n${output.slice(-4000)}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const runMs = Date.now() - started;
    const alive = child.exitCode === null && (await health());
    // The money the run moved must add up (test/fuzz/ledger-check.ts), once its jobs have settled.
    const money = alive ? await ledgerViolations(base, agent, targets.adminToken, 90_000) : ['not checked: the gateway is down'];

    // Memory must come back near where it started once the load is over.
    const settleStart = Date.now();
    let settled = rssMb(child.pid!);
    while (settled > baseline * SETTLE_FACTOR && Date.now() - settleStart < SETTLE_MS) {
      await sleep(1_000);
      settled = rssMb(child.pid!);
    }
    clearInterval(sampler);

    // What the RSS is made of (a heap holding objects, or memory the allocator kept): the child's own gauges.
    const heap = alive ? await heapFigures(base, agent, targets.adminToken) : {};
    const report = {
      cases: CASES,
      seed: SEED,
      concurrency: CONCURRENCY,
      near_limit_bodies: bigSent,
      seconds: Math.round(runMs / 100) / 10,
      statuses: Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])),
      shed_503_overloaded: shed,
      violations: violations.length,
      ledger_violations: money.length,
      alive_and_healthy: alive,
      rss_mb: { baseline: Math.round(baseline), peak: Math.round(peak), after: Math.round(settled), settle_seconds: Math.round((Date.now() - settleStart) / 1000), ...heap },
    };
    console.log(JSON.stringify(report, null, 2));
    for (const v of violations.slice(0, 20)) console.log(`violation: ${v}`);
    for (const v of money.slice(0, 20)) console.log(`ledger violation: ${v}`);
    const ok = violations.length === 0 && money.length === 0 && alive && settled <= baseline * SETTLE_FACTOR;
    if (!ok) process.exitCode = 1;
  } finally {
    clearInterval(sampler);
    agent.destroy();
    LOG?.end();
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The heap's and Buffers' sizes (MB) from the child's /metrics, read after the settle. */
async function heapFigures(base: string, agent: Agent, adminToken: string): Promise<Record<string, number>> {
  const r = await sendFuzz(base, { method: 'GET', path: '/metrics', headers: { authorization: `Bearer ${adminToken}` } }, agent);
  const gauge = (name: string) => Math.round(Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(r.body)?.[1] ?? NaN) / 1048576);
  return { heap_used_after: gauge('nodejs_heap_size_used_bytes'), heap_total_after: gauge('nodejs_heap_size_total_bytes'), external_after: gauge('nodejs_external_memory_bytes') };
}

/** A small seeded PRNG (mulberry32), so a run's share of large bodies is reproducible from its seed. */
function seeded(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What the generator aims at (test/fuzz/targets.ts), made on the demo account of the child. */
async function setUp(base: string, dir: string, agent: Agent): Promise<FuzzTargets> {
  const adminToken = readFileSync(join(dir, 'data', 'admin-token'), 'utf8').trim();
  return aimAt(base, agent, adminToken);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.stack : e);
  process.exitCode = 1;
});
