import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { embeddingsAnswer, MODEL } from './children/embeddings-answer.js';

/**
 * What the embeddings fast path's check of an answer costs, alone and in-process: `forwardOpenAIBody`
 * (src/embeddings/raw.ts, the walk of raw-scan.ts) over the benchmark upstream's own answers (one
 * 1,536-float vector, ~20 KB as floats, ~8 KB as base64; and eight of them), and `JSON.parse` of the
 * same bytes for scale (the full parse starts with it). Prints microseconds of CPU per answer, the
 * median of the rounds.
 *
 *   node --import tsx bench/raw-scan-cost.ts [--src=src,/other/checkout/src] [--rounds=7] [--ms=300]
 *
 * Several `--src` trees (e.g. an older checkout) run in alternating rounds, so drift on a shared
 * machine hits each alike.
 */
const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const sources = opt('src', 'src').split(',').map((s) => resolve(s));
const rounds = Number(opt('rounds', '7'));
const ms = Number(opt('ms', '300'));

type Forward = (raw: Buffer, model: string, format: 'float' | 'base64', inputs: number) => unknown;

const cases = (['float', 'base64'] as const).flatMap((format) =>
  [1, 8].map((inputs) => ({ name: `${format}, ${inputs} input${inputs > 1 ? 's' : ''}`, format, inputs, raw: Buffer.from(embeddingsAnswer(inputs, format, 5 * inputs)) })),
);

/**
 * Microseconds of this process's CPU per call of `f`, run for about `ms` after a warm-up. CPU, not
 * wall time: on a shared machine the process is descheduled now and then, which wall time counts.
 */
function time(f: () => unknown): number {
  for (let i = 0; i < 2_000; i++) f();
  let calls = 0;
  const cpu = process.cpuUsage();
  const until = process.hrtime.bigint() + BigInt(ms) * 1_000_000n;
  while (process.hrtime.bigint() < until) {
    for (let i = 0; i < 200; i++) f();
    calls += 200;
  }
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / calls;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const trees: { name: string; forward: Forward }[] = [];
for (const src of sources) {
  const mod = (await import(pathToFileURL(`${src}/embeddings/raw.ts`).href)) as { forwardOpenAIBody: Forward };
  for (const c of cases) if (!mod.forwardOpenAIBody(c.raw, MODEL, c.format, c.inputs)) throw new Error(`${src}: the fast path declines ${c.name}`);
  trees.push({ name: src, forward: mod.forwardOpenAIBody });
}

const results = new Map<string, number[]>();
const record = (k: string, v: number) => results.set(k, [...(results.get(k) ?? []), v]);
for (let r = 0; r < rounds; r++)
  for (const c of cases) {
    for (const t of trees) record(`${c.name}|${t.name}`, time(() => t.forward(c.raw, MODEL, c.format, c.inputs)));
    if (r % 2 === 0) record(`${c.name}|JSON.parse`, time(() => JSON.parse(c.raw.toString('utf8'))));
  }

for (const c of cases) {
  console.log(`${c.name} (${c.raw.length} bytes)`);
  for (const name of [...trees.map((t) => t.name), 'JSON.parse']) console.log(`  ${median(results.get(`${c.name}|${name}`)!).toFixed(2).padStart(8)} us  ${name}`);
}
