import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OtlpSinkInfo } from './children/otlp-sink.js';
import { compileChildren } from './lib/compile.js';
import { killAll, runMain, startChild, useCompiledChildren, type Child } from './lib/children.js';
import { ForeignLoad } from './lib/proc.js';
import { embeddingsGatewayConfig, EMBEDDING_MODEL, startEmbeddingsUpstream, startGateway, scratchRun } from './lib/setup.js';
import { median } from './lib/stats.js';
import { compare } from './lib/verdict.js';
import { describeMachine, machine } from './lib/table.js';
import { PathMeter, type PhaseResult } from './sections/paths.js';

/**
 * What tracing costs. Three gateways alike but for `tracing`, in front of one embeddings upstream:
 *   off   tracing off (the default),
 *   off'  a second, identical tracing-off gateway: the difference between off and off' is the
 *         noise of this machine, the yardstick for "no measurable cost",
 *   on    tracing on, every request sampled, spans batched and exported over OTLP/HTTP to a local
 *         sink process (bench/children/otlp-sink.ts), as to a real collector.
 * Many short rounds, each measuring the three back to back in a rotating order (off, off', on /
 * on, off, off' / ...), so drift on a shared machine hits them alike. Each figure is the median over
 * rounds with its spread (min-max). Comparisons are paired by round (bench/lib/verdict.ts): tracing
 * on is called a measurable cost only when its median change lies outside the largest off'-vs-off
 * difference of the same rounds. CPU per request is read from /proc for each gateway process.
 * The full run takes about two minutes; --quick about one.
 *
 *   node --import tsx bench/tracing.ts [--quick]      (table on stdout and in bench/results/tracing.md)
 */
const quick = process.argv.includes('--quick');
const P = quick
  ? { rounds: 4, warm: { requests: 3_000, maxMs: 3_000 }, oneConnMs: 1_000, satMs: 1_500 }
  : { rounds: 9, warm: { requests: 6_000, maxMs: 5_000 }, oneConnMs: 1_500, satMs: 2_000 };
const CAP_MS = quick ? 150_000 : 240_000;

setTimeout(() => {
  process.stderr.write(`bench/tracing: exceeded its ${CAP_MS / 1000} s cap; stopping\n`);
  killAll();
  process.exit(2);
}, CAP_MS).unref();

const run = scratchRun('tracing');
const log = (line: string) => process.stderr.write(`[tracing] ${line}\n`);

type Variant = 'off' | "off'" | 'on';
interface Figures {
  p50: number[];
  p99: number[];
  reqPerSec: number[];
  cpuUs: number[];
}

async function main(): Promise<void> {
  useCompiledChildren(await compileChildren());
  const load = new ForeignLoad();
  const upstream = await startEmbeddingsUpstream();
  const sinkLog = join(run.dir, 'otlp-sink.log');
  const sink = await startChild<OtlpSinkInfo>('otlp sink', 'otlp-sink.ts', {}, { logFile: sinkLog });
  const config = (name: string, tracing: boolean) => ({
    ...embeddingsGatewayConfig(run, name, upstream.info),
    ...(tracing ? { tracing: { enabled: true, endpoint: sink.info.url, sample_ratio: 1 } } : {}),
  });
  const gateways: Record<Variant, Child<{ url: string; key: string }>> = {
    off: await startGateway(run, 'gw-off', config('gw-off', false)),
    "off'": await startGateway(run, 'gw-off2', config('gw-off2', false)),
    on: await startGateway(run, 'gw-on', config('gw-on', true)),
  };
  const children: Child<unknown>[] = [upstream, sink, ...Object.values(gateways)];
  const meters = Object.fromEntries(
    Object.entries(gateways).map(([v, g]) => [
      v,
      new PathMeter({
        name: 'gateway',
        origin: g.info.url,
        pid: g.pid,
        spec: {
          method: 'POST',
          path: '/v1/embeddings',
          headers: { authorization: `Bearer ${g.info.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog.', encoding_format: 'float' }),
        },
      }),
    ]),
  ) as Record<Variant, PathMeter>;
  const empty = (): Figures => ({ p50: [], p99: [], reqPerSec: [], cpuUs: [] });
  const figures: Record<Variant, Figures> = { off: empty(), "off'": empty(), on: empty() };
  try {
    for (const m of Object.values(meters)) await m.warmUp(P.warm);
    const orders: Variant[][] = [['off', "off'", 'on'], ['on', 'off', "off'"], ["off'", 'on', 'off']];
    for (let round = 0; round < P.rounds; round++) {
      for (const v of orders[round % orders.length]!) {
        const one: PhaseResult = await meters[v].closedLoop(1, P.oneConnMs);
        const sat: PhaseResult = await meters[v].closedLoop(32, P.satMs);
        figures[v].p50.push(one.summary.p50);
        figures[v].p99.push(one.summary.p99);
        figures[v].reqPerSec.push(sat.throughput);
        figures[v].cpuUs.push(sat.cpuPerRequest);
      }
      log(`round ${round + 1}/${P.rounds} done`);
    }
    for (const m of Object.values(meters)) if (m.failed > 0) throw new Error(`${m.path.origin}: ${m.failed} requests failed (${m.firstError})`);
  } finally {
    await Promise.all(Object.values(meters).map((m) => m.close()));
  }
  const foreign = load.measure(children.map((c) => c.pid));
  await Promise.all(children.map((c) => c.stop()));
  const exported = readFileSync(sinkLog, 'utf8').trim().split('\n').pop() ?? '{}';
  report(figures, foreign.foreignCores, JSON.parse(exported) as { exports?: number; bytes?: number });
}

function report(f: Record<Variant, Figures>, foreignCores: number, exported: { exports?: number; bytes?: number }): void {
  const cell = (xs: number[], d: number) => `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}-${Math.max(...xs).toFixed(d)})`;
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
  const rows: [string, keyof Figures, number, boolean][] = [
    ['p50, 1 connection (ms)', 'p50', 3, true],
    ['p99, 1 connection (ms)', 'p99', 3, true],
    ['throughput, 32 connections (req/s)', 'reqPerSec', 0, false],
    ['CPU per request, 32 connections (us)', 'cpuUs', 0, true],
  ];
  const verdicts = rows.map(([label, k, d, higherIsWorse]) => ({ label, k, d, c: compare(f.off[k], f["off'"][k], f.on[k], higherIsWorse) }));
  const costly = verdicts.filter((v) => v.c.verdict === 'measurable cost');
  const widest = Math.max(...verdicts.map((v) => v.c.noise));
  const lines = [
    `Machine: ${describeMachine(machine())}. Load generator, gateways, upstream and sink share these cores.`,
    `Run: \`node --import tsx bench/tracing.ts${quick ? ' --quick' : ''}\`, ${P.rounds} rounds; POST /v1/embeddings (1,536 floats) through each gateway.`,
    '',
    "| Measure | Tracing off | Tracing off' (identical) | Tracing on | off' vs off: noise band (range) | on vs off (range) | Tracing on |",
    '|---|--:|--:|--:|--:|--:|---|',
    ...verdicts.map(
      ({ label, k, d, c }) =>
        `| ${label} | ${cell(f.off[k], d)} | ${cell(f["off'"][k], d)} | ${cell(f.on[k], d)} | ±${(c.noise * 100).toFixed(1)}% (${pct(c.noiseRange[0])}..${pct(c.noiseRange[1])}) | ${pct(c.change)} (${pct(c.changeRange[0])}..${pct(c.changeRange[1])}) | ${c.verdict} |`,
    ),
    '',
    `Verdict: tracing off is the default and installs no tracing code on the request path; tracing on (every request sampled) ${
      costly.length === 0
        ? "shows no measurable cost on this machine: each difference lies inside the off'-vs-off noise of the same rounds."
        : `costs ${costly.map((v) => `${pct(v.c.change)} ${v.label.split(',')[0]}`).join(', ')}, beyond the off'-vs-off noise of the same rounds.`
    }${widest > 0.1 ? ` The noise band reached ±${(widest * 100).toFixed(0)}%: on this machine nothing smaller can be resolved; run it on a quiet one.` : ''}`,
    '',
    '- Each cell: median over rounds (min-max over rounds). Changes are per round against the tracing-off gateway of the same round, then the median (range). Tracing on: every request sampled (a server span, an upstream client span, a store-transaction span), batched and exported over OTLP/HTTP.',
    `- The sink received ${exported.exports ?? 0} OTLP exports, ${((exported.bytes ?? 0) / 2 ** 20).toFixed(1)} MB.`,
    `- Other processes on this machine used ${foreignCores.toFixed(2)} cores on average during the run${foreignCores > 0.1 ? ': figures are noisier than on an idle machine' : ''}.`,
  ];
  const text = lines.join('\n');
  process.stdout.write(`\n${text}\n`);
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, quick ? 'tracing-quick.md' : 'tracing.md'), `# Tracing off and on\n\n${text}\n`);
}

runMain('tracing', main);
