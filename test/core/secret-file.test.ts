import * as realFs from 'node:fs';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { resolveSecrets } from '../../src/config/runtime.js';

/**
 * The id-sealing secret generated into data_dir/secret when the config gives none. Every public id
 * and signed link depends on it, so it is written whole or not at all (a synced temporary file
 * moved into place, the directory synced), and a file that holds no usable secret (what a write cut
 * short by a power loss leaves: nothing, a few characters, zeros) stops the start with an error
 * naming it, instead of being replaced by a new secret that would void every id issued before.
 */
const calls: { op: string; args: unknown[] }[] = [];
const hooks: { beforeLink?: (dest: string) => void } = {};

vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const spy =
    <A extends unknown[], R>(op: string, fn: (...a: A) => R) =>
    (...args: A): R => {
      calls.push({ op, args });
      return fn(...args);
    };
  const mocked = {
    ...fs,
    openSync: spy('openSync', fs.openSync),
    writeSync: spy('writeSync', fs.writeSync),
    fsyncSync: spy('fsyncSync', fs.fsyncSync),
    closeSync: spy('closeSync', fs.closeSync),
    renameSync: spy('renameSync', fs.renameSync),
    writeFileSync: spy('writeFileSync', fs.writeFileSync),
    linkSync: spy('linkSync', (src: realFs.PathLike, dest: realFs.PathLike) => {
      hooks.beforeLink?.(String(dest));
      return fs.linkSync(src, dest);
    }),
  };
  return { ...mocked, default: mocked };
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gw-secret-file-'));
  calls.length = 0;
  hooks.beforeLink = undefined;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const cfg = () => validateConfig({ data_dir: dir, admin_token: 'a'.repeat(24) }, 'gateway.yaml', {});
const secretPath = () => join(dir, 'secret');

describe('data_dir/secret', () => {
  it('is generated through a synced temporary file moved into place, and the directory is synced', () => {
    const [secret] = resolveSecrets(cfg()).idSecrets;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(readFileSync(secretPath(), 'utf8')).toBe(`${secret}\n`);
    expect(statSync(secretPath()).mode & 0o777).toBe(0o600);
    // Nothing left behind but the secret.
    expect(readdirSync(dir)).toEqual(['secret']);

    // Never written in place: the final name only ever appears whole.
    const wroteInPlace = calls.some((c) => c.op === 'writeFileSync' && String(c.args[0]) === secretPath());
    expect(wroteInPlace).toBe(false);
    const opened = calls.find((c) => c.op === 'openSync' && String(c.args[0]).startsWith(join(dir, '.secret.')));
    expect(opened, 'a temporary file beside the secret').toBeDefined();
    const tmp = String(opened!.args[0]);
    const at = (pred: (c: (typeof calls)[number]) => boolean) => calls.findIndex(pred);
    const synced = at((c) => c.op === 'fsyncSync');
    const moved = at((c) => (c.op === 'linkSync' || c.op === 'renameSync') && String(c.args[0]) === tmp && String(c.args[1]) === secretPath());
    expect(synced).toBeGreaterThan(at((c) => c.op === 'writeSync'));
    expect(moved).toBeGreaterThan(synced);
    // The directory: opened and synced after the move.
    const dirOpened = at((c) => c.op === 'openSync' && String(c.args[0]) === dir);
    expect(dirOpened).toBeGreaterThan(moved);
    expect(calls.slice(dirOpened).some((c) => c.op === 'fsyncSync')).toBe(true);

    // Read back, not made again.
    expect(resolveSecrets(cfg()).idSecrets).toEqual([secret]);
  });

  it('keeps the secret another process sharing the data dir made first', () => {
    const theirs = 'made-by-the-other-instance-0123456789';
    hooks.beforeLink = (dest) => {
      if (dest === secretPath()) realFs.writeFileSync(dest, `${theirs}\n`);
    };
    expect(resolveSecrets(cfg()).idSecrets).toEqual([theirs]);
    expect(readFileSync(secretPath(), 'utf8')).toBe(`${theirs}\n`);
    expect(readdirSync(dir)).toEqual(['secret']);
  });

  for (const [what, content, says] of [
    ['empty (a write cut short)', '', /is empty/],
    ['too short', 'fifteen-chars!!\n', /holds 15 characters \(fewer than 16\)/],
    ['full of zeros', '\0'.repeat(44), /control characters/],
  ] as const) {
    it(`refuses the start when it is ${what}, naming the file, and leaves it as it is`, () => {
      writeFileSync(secretPath(), content);
      let message = '';
      try {
        resolveSecrets(cfg());
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toContain(secretPath());
      expect(message).toMatch(says);
      expect(message).toMatch(/restore it from a backup/);
      expect(message).not.toContain('\n');
      expect(readFileSync(secretPath(), 'utf8')).toBe(content);
    });
  }
});
