import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { option } from './lib/args.js';
import { compileChildren } from './lib/compile.js';
import { runMain, useCompiledChildren, type Child } from './lib/children.js';
import { closedLoop, LoadClient, type RequestSpec } from './lib/load.js';
import { EMBEDDING_MODEL, embeddingsGatewayConfig, startEmbeddingsUpstream, startFloorProxy, startGateway, scratchRun } from './lib/setup.js';

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => option(name, args);
const workers = Number(opt('connections') ?? 32);
const encoding = opt('encoding') ?? 'float';
const run = scratchRun('sys');

/** minflt, majflt, utime+stime (ticks) of a process, from /proc/<pid>/stat. */
function faults(pid: number): { minor: number; major: number; ticks: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  // Fields after the command: state is index 0, so minflt (10th field) is index 7, majflt index 9, utime 11, stime 12.
  return { minor: Number(f[7]), major: Number(f[9]), ticks: Number(f[11]) + Number(f[12]) };
}

async function counted(pid: number, fn: () => Promise<number>): Promise<void> {
  const a = faults(pid);
  const n = await fn();
  const b = faults(pid);
  console.log(`  untraced: ${n} requests, ${((b.minor - a.minor) / n).toFixed(2)} minor faults and ${((b.major - a.major) / n).toFixed(3)} major per request, ${(((b.ticks - a.ticks) * 10_000) / n).toFixed(0)} us CPU per request`);
}

async function traced(pid: number, fn: () => Promise<number>): Promise<void> {
  const st = spawn('strace', ['-c', '-f', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  st.stderr.on('data', (d) => (out += d));
  await new Promise((r) => setTimeout(r, 500));
  const n = await fn();
  st.kill('SIGINT');
  await new Promise((r) => st.on('exit', r));
  const lines = out.split('\n').filter((l) => /^\s*[\d.]+\s+[\d.]+\s+\d+\s+\d+/.test(l));
  console.log(`  ${n} requests`);
  for (const l of lines) {
    const f = l.trim().split(/\s+/);
    const calls = Number(f[3]);
    const name = f[f.length - 1];
    if (calls / n >= 0.05) console.log(`  ${name!.padEnd(18)} ${(calls / n).toFixed(2)} per request, ${f[2]} us each in the kernel`);
  }
}

async function main(): Promise<void> {
  const dir = await compileChildren();
  if (dir) useCompiledChildren(dir);
  const children: Child<unknown>[] = [];
  const up = await startEmbeddingsUpstream();
  children.push(up);
  const floor = await startFloorProxy('floor proxy', up.info.url);
  children.push(floor);
  const gw = await startGateway(run, 'gw-sys', embeddingsGatewayConfig(run, 'gw-sys', up.info), false);
  children.push(gw);
  const body = JSON.stringify({ model: EMBEDDING_MODEL, input: 'The quick brown fox jumps over the lazy dog while the benchmark measures every hop.', encoding_format: encoding });
  const spec = (token: string): RequestSpec => ({ method: 'POST', path: '/v1/embeddings', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  for (const [name, url, pid, token] of [['floor', floor.info.url, floor.pid, up.info.apiKey], ['gateway', gw.info.url, gw.pid, gw.info.key]] as const) {
    const client = new LoadClient(url, workers);
    await closedLoop(client, spec(token), { workers, durationMs: 5_000, maxRequests: 5_000 });
    console.log(`${name}, ${workers} connections, ${encoding}:`);
    await counted(pid, async () => (await closedLoop(client, spec(token), { workers, durationMs: 3_000 })).ok);
    await traced(pid, async () => (await closedLoop(client, spec(token), { workers, durationMs: 3_000 })).ok);
    await client.close();
  }
  await Promise.all(children.map((c) => c.stop()));
}

runMain('syscalls', main);
