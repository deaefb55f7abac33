import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Pool } from 'undici';
import type { StallRecord } from './children/stall-probe.js';
import { wallNow } from './children/loop-gaps.js';
import { option } from './lib/args.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { compileChildren } from './lib/compile.js';
import { scratchRun, startGateway, startSim, type BenchRun } from './lib/setup.js';
import { syntheticVideoBytes } from '../src/sim/media.js';

/**
 * What one video returned inline costs everybody else: a gateway on the Veo simulator, whose
 * finished jobs carry `--mb` MB of video as base64 in the poll answer (~4/3 as much JSON), settles
 * `--rounds` jobs one after the other; meanwhile another process (this one) asks GET /health every
 * 10 ms (open loop: each latency is counted from when the request was due, so a stall delays and
 * counts every request behind it). The gateway runs as `npm start` runs it, with `--trace-gc` and
 * bench/children/stall-probe.ts (loop gaps over 3 ms, GC pauses). Each round's figures cover the
 * job from its create to 200 ms after it was seen completed; the stored video is then downloaded
 * and compared with what the simulator sent.
 *
 *   node --import tsx bench/inline-stall.ts [--mb=45] [--rounds=3] [--trees=/old/checkout,.] [--node-flags="..."]
 * `--trees`: one gateway per source tree (bench/lib/compile.ts builds each), rounds alternating.
 */
const MODEL = 'veo-3.1-generate-001';
const args = process.argv.slice(2);
const mb = Number(option('mb', args) ?? 45);
const rounds = Number(option('rounds', args) ?? 3);
const trees = (option('trees', args) ?? '.').split(',').map((t) => resolve(t));
const flags = (option('node-flags', args) ?? '').split(' ').filter(Boolean);
const HEALTH_EVERY_MS = 10;

interface Gc {
  kind: string;
  pauseMs: number;
  reason: string;
}

interface Round {
  settleMs: number;
  health: number[];
  record: StallRecord;
  traced: Gc[];
  identical: boolean;
}

interface Gateway {
  name: string;
  child: Child<{ url: string; key: string }>;
  out: string;
  log: string;
  pool: Pool;
  rounds: Round[];
}

function gatewayConfig(run: BenchRun, name: string, sim: { url: string; apiKey: string }): Record<string, unknown> {
  return {
    server: { host: '127.0.0.1', port: 0 },
    database: `sqlite:${join(run.dir, `${name}.db`)}`,
    data_dir: join(run.dir, name),
    log_level: 'info',
    secret: 'bench-id-secret-0123456789abcdef',
    admin_token: 'bench-admin-token-0123456789',
    video: { poll_interval_ms: 0, media: { allow_private_networks: true } },
    // No storage URI: Veo then returns the video inside the operation.
    upstreams: [{ name: 'veo-bench', vendor: 'veo', base_url: sim.url, api_key: sim.apiKey, project: 'bench', location: 'us-central1', models: [MODEL], timeout_ms: 30_000 }],
    models: { [MODEL]: { capabilities: ['video'], price: { per_second: 0.1 } } },
  };
}

/** GET /health every HEALTH_EVERY_MS until `stop` is called; each latency from its due time, ms. */
function healthLoop(pool: Pool): { stop(): Promise<number[]> } {
  const t0 = wallNow();
  const pending: Promise<number>[] = [];
  let stopped = false;
  const tick = (): void => {
    if (stopped) return;
    for (const now = wallNow(); t0 + pending.length * HEALTH_EVERY_MS <= now; ) {
      const due = t0 + pending.length * HEALTH_EVERY_MS;
      pending.push(pool.request({ path: '/health', method: 'GET' }).then(async (r) => (await r.body.dump(), wallNow() - due)));
    }
    setTimeout(tick, Math.max(0, t0 + pending.length * HEALTH_EVERY_MS - wallNow()));
  };
  tick();
  return {
    stop: () => {
      stopped = true;
      return Promise.all(pending);
    },
  };
}

async function api(g: Gateway, method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; bytes: Buffer }> {
  const headers: Record<string, string> = { authorization: `Bearer ${g.child.info.key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await g.pool.request({ path, method, headers, body: body === undefined ? null : JSON.stringify(body) });
  return { status: r.statusCode, bytes: Buffer.from(await r.body.arrayBuffer()) };
}

/** Asks the probe for its record since the last ask (it starts over). */
async function stallRecord(g: Gateway): Promise<StallRecord> {
  rmSync(g.out, { force: true });
  process.kill(g.child.pid, 'SIGUSR2');
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (existsSync(g.out)) return JSON.parse(readFileSync(g.out, 'utf8')) as StallRecord;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${g.name}: no stall record within 10 s`);
}

/** V8's `--trace-gc` lines in `text`: kind, main-thread pause and reason. */
function tracedGcs(text: string): Gc[] {
  const out: Gc[] = [];
  for (const m of text.matchAll(/ ms: (Scavenge|Mark-Compact(?: \(reduce\))?|Minor Mark-Compact|Mark-Sweep)\b[^,]*, ([\d.]+) \/ [\d.]+ ms.*current mu = [\d.]+\) ([^\n]*)/g))
    out.push({ kind: m[1]!, pauseMs: Number(m[2]), reason: m[3]!.replace(/;\s*$/, '').trim() });
  return out;
}

async function settleOne(g: Gateway, expectedSha: string): Promise<Round> {
  await stallRecord(g);
  const logFrom = statSync(g.log).size;
  const health = healthLoop(g.pool);
  const created = await api(g, 'POST', '/v1/videos/generations', { model: MODEL, prompt: 'a fox in the snow', seconds: 4 });
  if (created.status !== 200) throw new Error(`create answered ${created.status}: ${created.bytes.toString()}`);
  const id = JSON.parse(created.bytes.toString()).id as string;
  const started = wallNow();
  let job: { status: string } = { status: 'processing' };
  while (job.status === 'processing' || job.status === 'queued') {
    await new Promise((r) => setTimeout(r, 50));
    job = JSON.parse((await api(g, 'GET', `/v1/videos/${id}`)).bytes.toString());
  }
  const settleMs = wallNow() - started;
  if (job.status !== 'completed') throw new Error(`job ended ${job.status}: ${JSON.stringify(job).slice(0, 300)}`);
  await new Promise((r) => setTimeout(r, 200));
  const latencies = await health.stop();
  const record = await stallRecord(g);
  const traced = tracedGcs(readFileSync(g.log, 'utf8').slice(logFrom));
  const content = await api(g, 'GET', `/v1/videos/${id}/content`);
  const identical = content.status === 200 && createHash('sha256').update(content.bytes).digest('hex') === expectedSha;
  return { settleMs, health: latencies, record, traced, identical };
}

const pct = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(q * (s.length - 1))] ?? NaN;
};
const median = (xs: number[]): number => pct(xs, 0.5);
const f1 = (x: number): string => x.toFixed(1);

function print(gateways: Gateway[]): void {
  console.log(`\n${mb} MB video inline (Veo), ${rounds} round(s) per gateway, /health every ${HEALTH_EVERY_MS} ms; node flags: npm start's${flags.length ? ` + ${flags.join(' ')}` : ''}\n`);
  console.log('| Gateway | round | settle (ms) | /health n | p50 | p99 | max (ms) | longest loop gap (ms, CPU / waiting) | GC pauses (probe): n, ms, largest | scavenges (--trace-gc): n, ms | mark-compacts (--trace-gc): pause ms, reason | content identical |');
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|:-:|');
  for (const g of gateways) {
    for (const [i, r] of g.rounds.entries()) {
      const gap = r.record.gaps.reduce((a, x) => (x.ms > a.ms ? x : a), { ms: 0, cpuMs: 0, waitMs: 0, at: 0 });
      const gcMs = r.record.gc.map((x) => x.ms);
      const mcs = r.traced.filter((x) => x.kind.startsWith('Mark')).map((x) => `${f1(x.pauseMs)} ${x.reason}`);
      const scavenges = r.traced.filter((x) => x.kind === 'Scavenge').map((x) => x.pauseMs);
      console.log(
        `| ${g.name} | ${i + 1} | ${r.settleMs.toFixed(0)} | ${r.health.length} | ${f1(pct(r.health, 0.5))} | ${f1(pct(r.health, 0.99))} | ${f1(Math.max(...r.health))} | ` +
          `${f1(gap.ms)} (${f1(gap.cpuMs)} / ${f1(gap.waitMs)}) | ${gcMs.length}, ${f1(gcMs.reduce((a, b) => a + b, 0))}, ${f1(Math.max(0, ...gcMs))} | ${scavenges.length}, ${f1(scavenges.reduce((a, b) => a + b, 0))} | ${mcs.join('; ') || 'none'} | ${r.identical ? 'yes' : 'NO'} |`,
      );
    }
  }
  console.log('\nMedians over the rounds:\n');
  for (const g of gateways) {
    const m = (f: (r: Round) => number) => f1(median(g.rounds.map(f)));
    console.log(`- ${g.name}: /health p99 ${m((r) => pct(r.health, 0.99))} ms, max ${m((r) => Math.max(...r.health))} ms; longest loop gap ${m((r) => Math.max(0, ...r.record.gaps.map((x) => x.ms)))} ms; GC pauses ${m((r) => r.record.gc.reduce((a, x) => a + x.ms, 0))} ms in all, largest ${m((r) => Math.max(0, ...r.record.gc.map((x) => x.ms)))} ms`);
  }
}

async function main(): Promise<void> {
  const dir = await compileChildren();
  if (!dir) throw new Error('bench/inline-stall.ts needs esbuild (the probe is loaded as compiled JavaScript)');
  useCompiledChildren(dir);
  const probe = join(dir, 'bench', 'children', 'stall-probe.js');
  const run = scratchRun('inline-stall');
  const size = mb * 1024 * 1024;
  const expectedSha = createHash('sha256').update(syntheticVideoBytes(size)).digest('hex');
  const sim = await startSim('veo simulator', { kind: 'veo', taskMs: 300, videoBytes: size });
  const gateways: Gateway[] = [];
  for (const [i, tree] of trees.entries()) {
    const name = `gw-inline-${i}`;
    const treeDir = trees.length === 1 && tree === resolve('.') ? undefined : await compileChildren(tree, `-inline${i}`);
    const out = join(run.dir, `${name}.json`);
    const child = await startGateway(run, name, gatewayConfig(run, name, sim.info), false, treeDir, {
      nodeArgs: ['--trace-gc', '--import', probe, ...flags],
      env: { BENCH_STALL_OUT: out },
    });
    const label = trees.length === 1 ? 'gateway' : `gateway ${i + 1}: ${basename(tree)}`;
    gateways.push({ name: label, child, out, log: join(run.dir, `${name}.log`), pool: new Pool(child.info.url, { connections: 32 }), rounds: [] });
  }
  // One unmeasured job each: the first settle also loads and compiles the code on its path.
  for (const g of gateways) await settleOne(g, expectedSha);
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < gateways.length; k++) {
      const g = gateways[(k + r) % gateways.length]!;
      const round = await settleOne(g, expectedSha);
      g.rounds.push(round);
      process.stderr.write(`round ${r + 1}, ${g.name}: /health max ${f1(Math.max(...round.health))} ms, longest loop gap ${f1(Math.max(0, ...round.record.gaps.map((x) => x.ms)))} ms\n`);
    }
  }
  print(gateways);
  await Promise.all(gateways.map((g) => g.pool.close()));
  await Promise.all([...gateways.map((g) => g.child.stop()), sim.stop()]);
}

runMain('inline-stall', main);
