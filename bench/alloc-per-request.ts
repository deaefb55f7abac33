import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { heapSites, type HeapProfile } from './lib/heap-sites.js';
import { sourceLines } from './lib/source-lines.js';
import { closedLoop, LoadClient, type RequestSpec } from './lib/load.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, scratchRun, startEmbeddingsUpstream, startFloorProxy, startGateway } from './lib/setup.js';

/**
 * V8 heap bytes allocated per `POST /v1/embeddings` request, in the gateway (one per checkout named
 * by `--trees`) and in the floor proxy, and the allocation sites that take them. Unlike CPU time on
 * a shared machine, what a request allocates hardly moves from run to run, so a change that makes
 * less garbage shows here even when timings are too noisy to read.
 *
 * Every server runs with bench/children/alloc-probe.ts (`--import`) and npm start's flags. For each
 * encoding and connection count, each server gets `--warmup` unmeasured requests, then a window of
 * exactly `--requests` requests: allocated bytes from the heap's used size around every collection
 * (the probe), divided by the requests. With `--sampling=<bytes>` (default 1024; 0 counts only) the
 * window also runs V8's sampling heap profiler, keeping the samples of collected objects, and the
 * gateways' sites are listed by bytes per request: the innermost frame, and the innermost frame in
 * src/ with that site under it (a function's bytes include those of the functions the optimiser
 * inlined into it, and the line is where the function starts). The profiler estimates; the count is
 * the figure to compare.
 *
 *   node --import tsx bench/alloc-per-request.ts [--trees=/old/checkout,.] [--requests=20000] [--warmup=5000]
 *     [--encodings=float,base64] [--connections=1,32] [--sampling=1024] [--top=25] [--no-floor] [--json=<file>]
 *     [--node-flags="..."]
 */
const args = process.argv.slice(2);
const opt = (name: string): string | undefined => option(name, args);
const trees = (opt('trees') ?? '.').split(',').map((t) => resolve(t));
const requests = Number(opt('requests') ?? 20_000);
const warmup = Number(opt('warmup') ?? 5_000);
const encodings = (opt('encodings') ?? 'float,base64').split(',');
const connectionCounts = (opt('connections') ?? '1,32').split(',').map(Number);
const sampling = Number(opt('sampling') ?? 1024);
const top = Number(opt('top') ?? 25);
const withFloor = !args.includes('--no-floor');
const jsonOut = opt('json');
/** `--node-flags="..."`: more V8 flags for every server, e.g. `--max-inlined-bytecode-size=0` to put bytes on the function that allocates rather than on its inliner. */
const nodeFlags = (opt('node-flags') ?? '').split(' ').filter(Boolean);
const repoRoot = fileURLToPath(new URL('../', import.meta.url));

const run = scratchRun('alloc');

interface Server {
  name: string;
  pid: number;
  url: string;
  token: string;
  out: string;
}

interface ProbeResult {
  allocatedBytes: number;
  collections: { scavenges: number; markCompacts: number; other: number };
  profile?: HeapProfile;
  error?: string;
}

async function closeWindow(s: Server): Promise<ProbeResult> {
  process.kill(s.pid, 'SIGUSR2');
  for (let waited = 0; waited < 60_000; waited += 50) {
    if (existsSync(s.out)) {
      const r = JSON.parse(readFileSync(s.out, 'utf8')) as ProbeResult;
      if (r.error) throw new Error(`${s.name}: ${r.error}`);
      return r;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${s.name}: no result from its probe within 60 s`);
}

const kb = (bytes: number, n: number): string => (bytes / 1024 / n).toFixed(2);

function printSites(title: string, m: Map<string, number>, total: number): void {
  console.log(`| ${title} | KB per request | share |`);
  console.log('|---|--:|--:|');
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`| ${k.replaceAll('|', '\\|')} | ${kb(v, requests)} | ${((100 * v) / total).toFixed(1)}% |`);
  console.log('');
}

async function main(): Promise<void> {
  const ownDir = await compileChildren();
  if (!ownDir) throw new Error('bench/alloc-per-request.ts needs esbuild (the probe is loaded as compiled JavaScript)');
  useCompiledChildren(ownDir);
  const probe = join(ownDir, 'bench', 'children', 'alloc-probe.js');
  const extras = (out: string) => ({ // V8's randomised sample intervals: with constant ones (--sampling-heap-profiler-suppress-randomness)
    // the samples alias with the request's repeating pattern of allocations and land on a few sites.
    nodeArgs: ['--import', probe, ...nodeFlags], env: { BENCH_ALLOC_OUT: out, BENCH_ALLOC_SAMPLING: String(sampling) } });

  const children: Child<unknown>[] = [];
  const up = await startEmbeddingsUpstream();
  children.push(up);
  const servers: Server[] = [];
  const builds = new Map<string, string>([[ownDir, repoRoot]]);
  if (withFloor) {
    const out = join(run.dir, 'floor.json');
    const floor = await startFloorProxy('floor proxy', up.info.url, extras(out));
    children.push(floor);
    servers.push({ name: 'floor proxy', pid: floor.pid, url: floor.info.url, token: up.info.apiKey, out });
  }
  for (const [i, tree] of trees.entries()) {
    const dir = tree === resolve(repoRoot) ? ownDir : await compileChildren(tree, `-${i}`);
    if (dir) builds.set(dir, tree);
    const name = `gw-alloc-${i}`;
    const out = join(run.dir, `${name}.json`);
    const gw = await startGateway(run, name, embeddingsGatewayConfig(run, name, up.info), false, dir, extras(out));
    children.push(gw);
    servers.push({ name: trees.length > 1 ? `gateway ${tree}` : 'gateway', pid: gw.pid, url: gw.info.url, token: gw.info.key, out });
  }

  const source = sourceLines(builds);
  const rows: Array<{ phase: string; server: string; kbPerRequest: number; scavenges: number; markCompacts: number; sampledKb?: number; sites?: Record<string, number> }> = [];
  console.log(`V8 heap allocated per POST /v1/embeddings request: ${requests} requests per window after ${warmup} unmeasured, sampling ${sampling || 'off'}\n`);
  for (const encoding of encodings) {
    const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: encoding });
    for (const connections of connectionCounts) {
      const phase = `${encoding}, ${connections} connection${connections === 1 ? '' : 's'}`;
      for (const s of servers) {
        const spec: RequestSpec = { method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' }, body };
        const client = new LoadClient(s.url, connections);
        const loop = (n: number) => closedLoop(client, spec, { workers: connections, durationMs: 600_000, maxRequests: n });
        await loop(warmup);
        rmSync(s.out, { force: true });
        process.kill(s.pid, 'SIGUSR2');
        const res = await loop(requests);
        // The access line and the metrics are recorded after the answer is written.
        await new Promise((r) => setTimeout(r, 100));
        const probeResult = await closeWindow(s);
        await client.close();
        if (res.ok !== requests) throw new Error(`${s.name}, ${phase}: ${res.failed} of ${requests} requests failed (${res.firstError})`);
        const c = probeResult.collections;
        const row: (typeof rows)[number] = { phase, server: s.name, kbPerRequest: probeResult.allocatedBytes / 1024 / requests, scavenges: c.scavenges, markCompacts: c.markCompacts };
        let line = `${phase} | ${s.name}: ${kb(probeResult.allocatedBytes, requests)} KB per request (${c.scavenges} scavenges, ${c.markCompacts} mark-compacts`;
        if (probeResult.profile) {
          const sites = heapSites(probeResult.profile, source);
          row.sampledKb = sites.total / 1024 / requests;
          row.sites = Object.fromEntries([...sites.ours].map(([k, v]) => [k, v / 1024 / requests]));
          line += `; sampled ${kb(sites.total, requests)} KB)`;
          console.log(line + '\n');
          if (s.name !== 'floor proxy') {
            printSites('Allocation site (innermost frame)', sites.self, sites.total);
            printSites('Innermost src/ frame <- allocation site', sites.ours, sites.total);
          }
        } else console.log(line + ')');
        rows.push(row);
      }
    }
  }
  console.log('\n| Phase | Server | KB allocated per request | scavenges | mark-compacts |');
  console.log('|---|---|--:|--:|--:|');
  for (const r of rows) console.log(`| ${r.phase} | ${r.server} | ${r.kbPerRequest.toFixed(2)} | ${r.scavenges} | ${r.markCompacts} |`);
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(rows, null, 1));
  await Promise.all(children.map((c) => c.stop()));
}

runMain('alloc-per-request', main);
