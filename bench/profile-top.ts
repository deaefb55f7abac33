import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Summarises V8 CPU profiles written by `npm run bench -- --profile` (or any --cpu-prof run):
 * where the samples fall, by function (self time) and by package or source file.
 *
 *   node --import tsx bench/profile-top.ts [file.cpuprofile | dir] [--top=25] [--skip-ms=3000] [--all-threads]
 *
 * --skip-ms ignores the first milliseconds of the profile (start-up and module loading).
 */
interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

const root = fileURLToPath(new URL('../', import.meta.url));
const args = process.argv.slice(2);
const top = Number(args.find((a) => a.startsWith('--top='))?.slice(6) ?? 25);
const skipMs = Number(args.find((a) => a.startsWith('--skip-ms='))?.slice(10) ?? 3000);
const target = args.find((a) => !a.startsWith('--')) ?? join(root, 'bench/results/profiles');

const allThreads = args.includes('--all-threads');

/**
 * Profiles under `path`, recursively. Node writes one per thread (CPU.<date>.<time>.<pid>.<tid>.<seq>):
 * only the main thread's (tid 0) unless --all-threads, since module-loader threads are start-up noise.
 */
function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((f) => {
    const full = join(path, f);
    if (statSync(full).isDirectory()) return files(full);
    if (!f.endsWith('.cpuprofile')) return [];
    return allThreads || /\.0\.\d+\.cpuprofile$/.test(f) ? [full] : [];
  });
}

/** `node_modules/<pkg>` for dependencies, the repo-relative path for our own code, or the V8 category. */
function owner(url: string, fn: string): string {
  if (!url) return `(${fn || 'native'})`;
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (nm) return `npm:${nm[1]}`;
  if (path.startsWith('node:')) return path;
  // Transpiled children (bench/lib/compile.ts) are named by their source path.
  return relative(root, path).replace(/^bench\/\.build\/run-\d+\//, '');
}

function summarise(file: string): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfByFn = new Map<string, number>();
  // Inclusive time of the repository's own functions: what each step of a request costs in total.
  const totalByOwnFn = new Map<string, number>();
  const selfByOwner = new Map<string, number>();
  let t = 0;
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    if (t / 1000 < skipMs) continue;
    const n = byId.get(p.samples[i]!)!;
    const { functionName, url, lineNumber } = n.callFrame;
    if (functionName === '(idle)') continue;
    total += dt;
    const name = `${functionName || '(anonymous)'} ${owner(url, functionName)}${url ? `:${lineNumber + 1}` : ''}`;
    selfByFn.set(name, (selfByFn.get(name) ?? 0) + dt);
    const o = owner(url, functionName);
    selfByOwner.set(o, (selfByOwner.get(o) ?? 0) + dt);
    const seen = new Set<string>();
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      const own = owner(f.url, f.functionName);
      if (!own.startsWith('src/')) continue;
      const key = `${f.functionName || '(anonymous)'} ${own}:${f.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      totalByOwnFn.set(key, (totalByOwnFn.get(key) ?? 0) + dt);
    }
  }
  const show = (m: Map<string, number>): void => {
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stdout.write(`  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}\n`);
    }
  };
  process.stdout.write(`\n${relative(process.cwd(), file)}: ${(total / 1000).toFixed(0)} ms busy after the first ${skipMs} ms\n`);
  process.stdout.write(' by package or file (self time):\n');
  show(selfByOwner);
  process.stdout.write(' by function (self time):\n');
  show(selfByFn);
  process.stdout.write(' repository functions (inclusive time, callees included):\n');
  show(totalByOwnFn);
}

for (const f of files(target)) summarise(f);
