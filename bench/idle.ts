import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren } from './lib/children.js';
import { closedLoop, LoadClient, type RequestSpec } from './lib/load.js';
import { cpuMicros } from './lib/proc.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, startEmbeddingsUpstream, startGateway, scratchRun } from './lib/setup.js';

const run = scratchRun('idle');
const arg = option;
const idleMs = Number(arg('idle-ms') ?? 18_000);
const nodeFlags = (arg('node-flags') ?? '').split(' ').filter(Boolean);

/**
 * The gateway's CPU per request at one connection right after a warm-up, then after an idle spell (as
 * the full bench's one-connection phase comes after other paths' phases), with the mark-compacts and
 * scavenges of each 3 s phase from --trace-gc. V8's memory reducer shrinks the young generation
 * during the idle, and the traffic after it pays for more scavenges until it has grown back.
 *
 *   node --import tsx bench/idle.ts [--idle-ms=18000] [--node-flags="--min-semi-space-size=8"]
 */
runMain('idle', async () => {
  const dir = await compileChildren();
  if (dir) useCompiledChildren(dir);
  const up = await startEmbeddingsUpstream();
  const gw = await startGateway(run, 'gw', embeddingsGatewayConfig(run, 'gw', up.info), false, undefined, { nodeArgs: ['--trace-gc', ...nodeFlags] });
  const log = join(run.dir, 'gw.log');
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: 'float' });
  const spec: RequestSpec = { method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${gw.info.key}`, 'content-type': 'application/json' }, body };
  const c8 = new LoadClient(gw.info.url, 8);
  const c1 = new LoadClient(gw.info.url, 1);
  await closedLoop(c8, spec, { workers: 8, durationMs: 6_000, maxRequests: 10_000 });
  const gcs = (): { mc: number; sc: number } => {
    const t = readFileSync(log, 'utf8');
    return { mc: (t.match(/Mark-Compact/g) ?? []).length, sc: (t.match(/Scavenge/g) ?? []).length };
  };
  const phase = async (label: string) => {
    const g0 = gcs();
    const c0 = cpuMicros(gw.pid);
    const r = await closedLoop(c1, spec, { workers: 1, durationMs: 3_000 });
    const cpu = cpuMicros(gw.pid) - c0;
    const g1 = gcs();
    console.log(`${label}: ${r.ok} req, ${(cpu / r.ok).toFixed(0)} us CPU/req, mark-compacts ${g1.mc - g0.mc}, scavenges ${g1.sc - g0.sc}`);
  };
  await phase('1 conn right after warm-up');
  await phase('1 conn again');
  await new Promise((r) => setTimeout(r, idleMs));
  await phase(`1 conn after ${idleMs} ms idle`);
  await phase('1 conn again');
  await phase('1 conn again');
  await c8.close();
  await c1.close();
  await gw.stop();
  await up.stop();
});
