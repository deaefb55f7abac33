import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { RateLimiter } from '../src/limits/types.js';

/**
 * What the Redis limiter costs per request, alone: `--concurrency` callers each admit (two scopes,
 * key and account, as the gateway does) and then send a token correction without waiting, as an
 * embeddings request does, for `--seconds`. Prints per request the CPU of this process (the
 * limiter's client side: argument building, ioredis, reply parsing) and of the Redis server (script
 * runs), which shares the machine's cores with the gateway in every benchmark here.
 *
 *   node --import tsx bench/limiter-cost.ts [--src=src,/other/checkout/src] [--rounds=3] [--seconds=3] [--concurrency=32] [--turns-apart]
 *
 * Several `--src` trees (e.g. an older checkout) run in alternating rounds, so drift on a shared
 * machine hits each alike; each needs its own node_modules reachable from it.
 */
const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const sources = opt('src', 'src').split(',').map((s) => resolve(s));
const rounds = Number(opt('rounds', '3'));
const seconds = Number(opt('seconds', '3'));
const concurrency = Number(opt('concurrency', '32'));
/**
 * `--turns-apart`: each caller lets an event-loop turn pass after its admission (the upstream call)
 * and after its correction (the answer going out), as in the gateway, where an answer's correction and
 * the next request's admission are made in different turns. Without it they share one.
 */
const turnsApart = args.includes('--turns-apart');
const nextTurn = () => new Promise<void>((r) => setImmediate(r));
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

type LimiterClass = new (o: { url: string; keyPrefix: string; logger: { warn(): void; info(): void } }) => RateLimiter & { connected: boolean };

/** utime + stime of a process in microseconds (clock ticks of 10 ms on Linux). */
function procCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function redisPid(): Promise<number> {
  const r = new Redis(REDIS_URL);
  try {
    const info = await r.info('server');
    return Number(/process_id:(\d+)/.exec(info)?.[1]);
  } finally {
    r.disconnect();
  }
}

async function measure(Limiter: LimiterClass, tag: string, serverPid: number): Promise<{ rps: number; clientUs: number; serverUs: number }> {
  const limiter = new Limiter({ url: REDIS_URL, keyPrefix: `bench:limiter:${process.pid}:${tag}:`, logger: { warn() {}, info() {} } });
  for (let i = 0; i < 100 && !limiter.connected; i++) await new Promise((r) => setTimeout(r, 20));
  const quota = { rpm: 100_000_000, tpm: 1_000_000_000 };
  const callers = Array.from({ length: concurrency }, (_, i) => [
    { id: `key:k${i % 4}`, quota },
    { id: 'account:a', quota },
  ]);
  let done = 0;
  let stop = false;
  const run = async (scopes: { id: string; quota: typeof quota }[]) => {
    while (!stop) {
      await limiter.admit('embeddings', scopes, 20);
      if (turnsApart) await nextTurn();
      void limiter.adjustTokens('embeddings', scopes, -3);
      if (turnsApart) await nextTurn();
      done++;
    }
  };
  const warm = Date.now() + 500;
  stop = false;
  const warmers = callers.map(run);
  while (Date.now() < warm) await new Promise((r) => setTimeout(r, 50));
  stop = true;
  await Promise.all(warmers);
  done = 0;
  stop = false;
  const cpu0 = process.cpuUsage();
  const srv0 = procCpuUs(serverPid);
  const t0 = Date.now();
  const workers = callers.map(run);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  stop = true;
  await Promise.all(workers);
  const ms = Date.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const srv = procCpuUs(serverPid) - srv0;
  await limiter.close();
  return { rps: (done * 1000) / ms, clientUs: (cpu.user + cpu.system) / done, serverUs: srv / done };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const serverPid = await redisPid();
  const limiters = await Promise.all(
    sources.map(async (s) => (await import(pathToFileURL(`${s}/limits/redis.ts`).href)).RedisRateLimiter as LimiterClass),
  );
  const results = sources.map(() => ({ rps: [] as number[], client: [] as number[], server: [] as number[] }));
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < sources.length; k++) {
      const i = (k + r) % sources.length;
      const m = await measure(limiters[i]!, `s${i}r${r}`, serverPid);
      results[i]!.rps.push(m.rps);
      results[i]!.client.push(m.clientUs);
      results[i]!.server.push(m.serverUs);
      process.stderr.write(`round ${r + 1}, ${sources[i]}: ${Math.round(m.rps)} req/s, client ${m.clientUs.toFixed(1)} us, Redis ${m.serverUs.toFixed(1)} us per request\n`);
    }
  }
  const load = execFileSync('cat', ['/proc/loadavg']).toString().trim();
  console.log(`Median of ${rounds} rounds of ${seconds} s, ${concurrency} callers, admit + correction per request (load average: ${load})`);
  console.log('| Limiter source | requests/s | client CPU per request (us) | Redis server CPU per request (us) |');
  console.log('|---|--:|--:|--:|');
  sources.forEach((s, i) => {
    const x = results[i]!;
    console.log(`| ${s} | ${Math.round(median(x.rps)).toLocaleString('en-US')} | ${median(x.client).toFixed(1)} | ${median(x.server).toFixed(1)} |`);
  });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench/limiter-cost: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
