import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onFreePort, PORT_TAKEN } from '../helpers/process.js';
import { blocksOf, documents, isShell, type Block } from './blocks.js';

/**
 * The README and docs run exactly as written. Shell blocks marked `sh test` run with bash, one shell
 * per file, in file order (README.md first, then docs/*.md alphabetically), against `gateway serve`
 * started on the embedded default, from a directory laid out like a checkout: ./data (the gateway's),
 * ./fixtures and `npx gateway`. Blocks marked `sh setup` may only hold the commands this harness and
 * .ci/run perform themselves. Any other shell block fails: the docs show no command that was not run.
 */
const ROOT = resolve(__dirname, '../..');
const SETUP_COMMANDS = new Set(['npm ci', 'npm start', 'npm test']);

const all: Block[] = documents(ROOT).flatMap((f) => blocksOf(ROOT, f)).filter(isShell);
let dir: string;
let gateway: ChildProcess;
let port: number;
let out = '';
let err = '';

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/main.js'))) throw new Error('dist/ is missing: run npm run build first');
  dir = mkdtempSync(join(tmpdir(), 'gw-runbook-'));
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  symlinkSync(join(ROOT, 'bin/gateway.js'), join(dir, 'node_modules/.bin/gateway'));
  symlinkSync(join(ROOT, 'fixtures'), join(dir, 'fixtures'));
  // On another port when another test's server took the first before the gateway listened.
  port = await onFreePort(async (p) => {
    out = '';
    err = '';
    // What `npm start` runs, from the checkout-like directory (so ./data is the test's own).
    gateway = spawn(process.execPath, [join(ROOT, 'bin/gateway.js'), 'serve'], { cwd: dir, env: { ...process.env, PORT: String(p) }, stdio: ['ignore', 'pipe', 'pipe'] });
    gateway.stdout!.on('data', (c) => (out += String(c)));
    gateway.stderr!.on('data', (c) => (err += String(c)));
    const closed = new Promise((r) => gateway.once('close', r));
    const deadline = Date.now() + 60_000;
    while (!err.includes('Gateway ready at')) {
      if (gateway.exitCode !== null) {
        await closed;
        if (err.includes(PORT_TAKEN)) return PORT_TAKEN;
      }
      if (gateway.exitCode !== null || Date.now() > deadline) throw new Error(`gateway did not start:\n${err}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return p;
  });
}, 90_000);

afterAll(async () => {
  if (gateway && gateway.exitCode === null) {
    gateway.kill('SIGTERM');
    await new Promise((r) => gateway.once('exit', r));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function runBash(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port) };
    for (const k of ['GATEWAY_URL', 'GATEWAY_API_KEY', 'GATEWAY_ADMIN_TOKEN', 'GATEWAY_CONFIG']) delete env[k];
    const child = spawn('bash', ['-c', script], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += String(c)));
    child.stderr.on('data', (c) => (stderr += String(c)));
    child.on('close', (code) => resolveRun({ code, stdout, stderr }));
  });
}

describe('README and docs run as written', () => {
  it('marks every shell block: `sh test` (run here) or `sh setup` (npm ci / npm start / npm test)', () => {
    const unmarked = all.filter((b) => !b.tags.includes('test') && !b.tags.includes('setup')).map((b) => `${b.file}:${b.line}`);
    expect(unmarked, 'shell blocks no test runs').toEqual([]);
    for (const b of all.filter((x) => x.tags.includes('setup'))) {
      const commands = b.code.split('\n').map((l) => l.replace(/#.*$/, '').trim()).filter(Boolean).flatMap((l) => l.split('&&').map((c) => c.trim()));
      for (const c of commands) expect(SETUP_COMMANDS.has(c), `${b.file}:${b.line}: '${c}' is not run by the harness`).toBe(true);
    }
    expect(readFileSync(join(ROOT, '.ci/run'), 'utf8')).toMatch(/npm ci[^\n]*\nnpm test/);
  });

  it('the start banner is on stderr and names the docs, the admin-token file and the demo key file, never the key', () => {
    const key = readFileSync(join(dir, 'data/demo-key'), 'utf8').trim();
    expect(err).toContain(`http://127.0.0.1:${port}/`);
    expect(err).toContain('data/admin-token');
    expect(err).toContain('data/demo-key');
    expect(err).toContain('docs/admin.md');
    expect(err).toContain(`http://127.0.0.1:${port}/console`);
    // Neither stream is a terminal here: the key stays in its file.
    expect(err + out).not.toContain(key);
  });

  for (const file of [...new Set(all.filter((b) => b.tags.includes('test')).map((b) => b.file))]) {
    it(`runs every marked block of ${file}`, async () => {
      const blocks = all.filter((b) => b.file === file && b.tags.includes('test'));
      const script = ['set -euo pipefail', ...blocks.flatMap((b) => [`echo '### ${b.file}:${b.line}' >&2`, b.code])].join('\n');
      const r = await runBash(script);
      const failedAt = [...r.stderr.matchAll(/^### (\S+)$/gm)].pop()?.[1];
      expect(r.code, `failed in the block at ${failedAt}:\n${r.stderr.slice(-3000)}`).toBe(0);
    }, 240_000);
  }

  it('the README video examples left playable files behind', () => {
    for (const f of ['fox.mp4', 'fox-curl.mp4', 'wan.mp4']) {
      const bytes = readFileSync(join(dir, f));
      expect(bytes.subarray(4, 8).toString('latin1'), f).toBe('ftyp');
      expect(bytes.equals(readFileSync(join(ROOT, 'fixtures/sample.mp4'))), f).toBe(true);
    }
  });
});
