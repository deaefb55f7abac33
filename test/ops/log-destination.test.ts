import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The logger's own destination (standard output, buffered and written asynchronously) in a real
 * process: every line arrives whole, redacted, in order and with its UTF-8 intact, also the lines
 * still buffered when the process exits without flushing.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

const PROBE = `
import { createLogger } from './src/services.ts';
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
});
