import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Where the gateway's resident memory goes at start: each module loaded alone in a fresh Node
 * process (after a full GC), minus a bare process. Modules share dependencies, so the figures
 * overlap and do not add up to the gateway's RSS; they say which imports are worth loading lazily.
 *
 *   node --import tsx bench/module-rss.ts
 */
const root = fileURLToPath(new URL('../', import.meta.url));

const MODULES: Array<[string, string]> = [
  ['(bare node)', ''],
  ['gpt-tokenizer (o200k_base)', 'gpt-tokenizer'],
  ['gpt-tokenizer/encoding/cl100k_base', 'gpt-tokenizer/encoding/cl100k_base'],
  ['fastify', 'fastify'],
  ['undici', 'undici'],
  ['pino', 'pino'],
  ['better-sqlite3', 'better-sqlite3'],
  ['pg', 'pg'],
  ['ioredis', 'ioredis'],
  ['prom-client', 'prom-client'],
  ['zod', 'zod'],
  ['@aws-sdk/client-s3', '@aws-sdk/client-s3'],
  ['@opentelemetry/sdk-trace-node', '@opentelemetry/sdk-trace-node'],
  ['the gateway (dist/services.js + dist/app.js)', './dist/services.js|./dist/app.js'],
];

const PROBE = `
const specs = (process.argv[1] || '').split('|').filter(Boolean);
for (const s of specs) await import(s);
for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 50)); }
const m = process.memoryUsage();
process.stdout.write(JSON.stringify({ rss: m.rss, heap: m.heapUsed }));
`;

function probe(spec: string): { rss: number; heap: number } {
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', PROBE, spec], { cwd: root, encoding: 'utf8' });
  return JSON.parse(out) as { rss: number; heap: number };
}

const mb = (b: number): string => (b / 2 ** 20).toFixed(1).padStart(6);
const bare = probe('');
process.stdout.write('| Module | RSS (MB) | over bare node | JS heap (MB) |\n|---|--:|--:|--:|\n');
for (const [label, spec] of MODULES) {
  try {
    const m = spec ? probe(spec) : bare;
    process.stdout.write(`| ${label} | ${mb(m.rss)} | ${spec ? `+${mb(m.rss - bare.rss).trim()}` : ''} | ${mb(m.heap)} |\n`);
  } catch (e) {
    process.stdout.write(`| ${label} | failed: ${(e as Error).message.split('\n')[0]} | | |\n`);
  }
}
