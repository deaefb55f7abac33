import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger, LOG_EXIT_FLUSH_MS, LOG_FLUSH_MS } from '../../src/ops/logger.js';

/**
 * The logger's own destination (standard output, buffered and written asynchronously) in a real
 * process: every line arrives whole, redacted, in order and with its UTF-8 intact, also the lines
 * still buffered when the process exits without flushing.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

const PROBE = `
import { createLogger } from './src/ops/logger.ts';
const logger = createLogger('info', { secrets: ['upstream-secret-0123456789'] });
for (let i = 0; i < 500; i++) logger.info({ i, note: 'café ☕ upstream-secret-0123456789' }, 'line');
process.exit(0);
`;

describe('log destination', () => {
  it('writes every line whole, redacted and in order, including those buffered at exit', async () => {
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', PROBE], { cwd: root, encoding: 'utf8', timeout: 60_000 }, (e, stdout) =>
        resolve({ code: e ? ((e as { code?: number }).code ?? -1) : 0, stdout }),
      );
    });
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(500);
    lines.forEach((text, i) => {
      const line = JSON.parse(text) as { i: number; note: string; msg: string };
      expect(line).toMatchObject({ i, note: 'café ☕ [redacted]', msg: 'line' });
    });
  }, 90_000);

  it('writes a lone line within its flush interval while the process runs on (a quiet gateway does not sit on its lines)', async () => {
    // One line, far under the 4 KB a write waits for, then the process idles for 20 s: the line
    // must arrive while it still runs, not at its exit.
    const probe = `
import { createLogger } from './src/ops/logger.ts';
createLogger('info', {}).info({ marker: 'quiet' }, 'one line');
process.stderr.write('logged\\n');
setTimeout(() => process.exit(0), 20_000);
`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let loggedAt = 0;
      child.stderr.on('data', (d: Buffer) => {
        if (!loggedAt && d.toString().includes('logged')) loggedAt = Date.now();
      });
      const line = await new Promise<string>((resolve, reject) => {
        let text = '';
        child.stdout.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('\n')) resolve(text);
        });
        child.once('exit', () => reject(new Error(`the probe exited before its line arrived (stdout: ${text})`)));
      });
      expect(child.exitCode).toBeNull();
      expect(JSON.parse(line)).toMatchObject({ marker: 'quiet', msg: 'one line' });
      // A generous bound for a loaded machine: the interval plus a few seconds, far under the 20 s.
      if (loggedAt) expect(Date.now() - loggedAt).toBeLessThan(LOG_FLUSH_MS + 5_000);
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);

  it('ends an exit within its bound when the reader of stdout stopped reading (the rest dropped, counted on stderr)', async () => {
    // 400 KB of lines, far more than a pipe holds, then an exit that must flush what is buffered.
    const probe = `
import { createLogger } from './src/ops/logger.ts';
const logger = createLogger('info', {});
for (let i = 0; i < 2000; i++) logger.info({ i, pad: 'x'.repeat(200) }, 'line');
setTimeout(() => {
  process.stderr.write('exiting\\n');
  process.exit(0);
}, 500);
`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      // stdout is never read: it fills and stays full.
      let stderr = '';
      let exitingAt = 0;
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (!exitingAt && stderr.includes('exiting')) exitingAt = Date.now();
      });
      const code = await new Promise<number | string>((resolve) => {
        const timer = setTimeout(() => resolve('still running'), 30_000);
        child.once('exit', (c, signal) => {
          clearTimeout(timer);
          resolve(c ?? signal ?? -1);
        });
      });
      expect(code).toBe(0);
      expect(exitingAt).toBeGreaterThan(0);
      // The bound, plus a few seconds for a loaded machine.
      expect(Date.now() - exitingAt).toBeLessThan(LOG_EXIT_FLUSH_MS + 3_000);
      expect(stderr).toMatch(/log lines dropped \(writing to standard output at exit failed: EAGAIN\); \d+ so far/);
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);

  it('passes a synchronous flush through the redacting layer to the destination (what an exit that cannot wait calls)', () => {
    const written: string[] = [];
    let pending: string[] = [];
    const sink = { write: (line: string) => pending.push(line), flushSync: () => { written.push(...pending); pending = []; } };
    const logger = createLogger('info', { sink, secrets: ['upstream-secret-0123456789'] });
    logger.info('last words upstream-secret-0123456789');
    expect(written).toHaveLength(0);
    // shutdown.ts flushLogs reaches the stream pino writes to by this symbol.
    const stream = (logger as unknown as Record<symbol, { flushSync?: () => void }>)[pino.symbols.streamSym];
    stream.flushSync!();
    expect(written).toHaveLength(1);
    expect(written[0]).toContain('last words [redacted]');
  });
});
