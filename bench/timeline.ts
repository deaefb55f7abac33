import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { STAGES, type Stage, type TimelineSummary } from './children/timeline-stages.js';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { closedLoop, LoadClient, type RequestSpec } from './lib/load.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, startEmbeddingsUpstream, startFloorProxy, startGateway, scratchRun } from './lib/setup.js';

/**
 * Where one embeddings request's time goes at one connection, in the floor proxy and in the
 * gateway: both run with bench/children/timeline-probe.ts, which stamps each request at the request's
 * start (its head parsed), the route handler (gateway), the upstream request made, its head handed
 * to the socket and the whole request written, the upstream's first byte (its head parsed) and its
 * complete body, the response written, and the end of what runs after it in the same turn (access
 * line, metrics). Per stage: median wall and CPU time from the request's start, and the step from
 * the stage before. Also each path's p50 as the client sees it, and the added p50 over the direct
 * path, in rotating rounds. The probe costs ~1 us per stamp, in both processes alike.
 *
 *   node --import tsx bench/timeline.ts [--rounds=3] [--seconds=3] [--encoding=float|base64]
 */
const args = process.argv.slice(2);
const opt = (name: string): string | undefined => option(name, args);
const rounds = Number(opt('rounds') ?? 3);
const seconds = Number(opt('seconds') ?? 3);
const encoding = opt('encoding') ?? 'float';

const run = scratchRun('timeline');

interface Path {
  name: string;
  client: LoadClient;
  spec: RequestSpec;
  /** The probed process and where its probe writes; none for the direct path. */
  probe?: { pid: number; out: string };
  p50: number[];
  timelines: TimelineSummary[];
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Asks the probe for the medians since its last report (and to start over), and waits for them. */
async function report(probe: { pid: number; out: string }): Promise<TimelineSummary> {
  rmSync(probe.out, { force: true });
  process.kill(probe.pid, 'SIGUSR2');
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (existsSync(probe.out)) return JSON.parse(readFileSync(probe.out, 'utf8')) as TimelineSummary;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no timeline from pid ${probe.pid} within 10 s`);
}

async function main(): Promise<void> {
  const dir = await compileChildren();
  if (!dir) throw new Error('bench/timeline.ts needs esbuild (the probe is loaded as compiled JavaScript)');
  useCompiledChildren(dir);
  const probeArgs = ['--import', join(dir, 'bench', 'children', 'timeline-probe.js')];
  const children: Child<unknown>[] = [];
  const up = await startEmbeddingsUpstream();
  children.push(up);
  const floorOut = join(run.dir, 'floor.json');
  const floor = await startFloorProxy('floor proxy', up.info.url, { nodeArgs: probeArgs, env: { BENCH_TIMELINE_OUT: floorOut } });
  children.push(floor);
  const gwOut = join(run.dir, 'gateway.json');
  const gw = await startGateway(run, 'gw-timeline', embeddingsGatewayConfig(run, 'gw-timeline', up.info), false, undefined, {
    nodeArgs: probeArgs,
    env: { BENCH_TIMELINE_OUT: gwOut },
  });
  children.push(gw);

  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: encoding });
  const spec = (token: string): RequestSpec => ({ method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  const paths: Path[] = [
    { name: 'direct', client: new LoadClient(up.info.url, 1), spec: spec(up.info.apiKey), p50: [], timelines: [] },
    { name: 'floor proxy', client: new LoadClient(floor.info.url, 1), spec: spec(up.info.apiKey), probe: { pid: floor.pid, out: floorOut }, p50: [], timelines: [] },
    { name: 'gateway', client: new LoadClient(gw.info.url, 1), spec: spec(gw.info.key), probe: { pid: gw.pid, out: gwOut }, p50: [], timelines: [] },
  ];
  for (const p of paths) await closedLoop(p.client, p.spec, { workers: 1, durationMs: 10_000, maxRequests: 5_000 });
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < paths.length; k++) {
      const p = paths[(k + r) % paths.length]!;
      if (p.probe) await report(p.probe);
      const res = await closedLoop(p.client, p.spec, { workers: 1, durationMs: seconds * 1000 });
      p.p50.push(median(res.latenciesMs));
      if (p.probe) p.timelines.push(await report(p.probe));
      process.stderr.write(`round ${r + 1}, ${p.name}: p50 ${median(res.latenciesMs).toFixed(3)} ms, ${res.ok} requests (${res.failed} failed)\n`);
    }
  }

  const direct = median(paths[0]!.p50);
  console.log(`Embeddings (${encoding}) at one connection, ${rounds} rounds of ${seconds} s, medians:\n`);
  console.log('| Path | p50 (ms) | added p50 (ms) |');
  console.log('|---|--:|--:|');
  for (const p of paths) console.log(`| ${p.name} | ${median(p.p50).toFixed(3)} | ${p.name === 'direct' ? '' : `+${(median(p.p50) - direct).toFixed(3)}`} |`);
  console.log('\nFrom the request\'s start (its head parsed), us: wall time (step from the stage before) and CPU time (step)\n');
  console.log('| Stage | Floor wall | Floor CPU | Gateway wall | Gateway CPU |');
  console.log('|---|--:|--:|--:|--:|');
  const cells = (p: Path, stage: Stage, prev: { wall: number; cpu: number }): string[] => {
    const wall = median(p.timelines.map((t) => t.stages[stage]?.wallUs ?? NaN).filter(Number.isFinite));
    const cpu = median(p.timelines.map((t) => t.stages[stage]?.cpuUs ?? NaN).filter(Number.isFinite));
    if (Number.isNaN(wall)) return ['', ''];
    const out = [`${wall.toFixed(0)} (+${(wall - prev.wall).toFixed(0)})`, `${cpu.toFixed(0)} (+${(cpu - prev.cpu).toFixed(0)})`];
    prev.wall = wall;
    prev.cpu = cpu;
    return out;
  };
  const prevFloor = { wall: 0, cpu: 0 };
  const prevGw = { wall: 0, cpu: 0 };
  for (const stage of STAGES.slice(1)) console.log(`| ${stage} | ${[...cells(paths[1]!, stage, prevFloor), ...cells(paths[2]!, stage, prevGw)].join(' | ')} |`);
  await Promise.all(paths.map((p) => p.client.close()));
  await Promise.all(children.map((c) => c.stop()));
}

runMain('timeline', main);
