import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './harness.js';
import { localServer, spawnCli, STACK, type LocalServer } from './spawn.js';

// Standard output cut short: a reader that stops early (EPIPE) ends the command quietly with exit
// 0; output that cannot be written (ENOSPC) is one line on stderr and exit 1; never a stack trace.
let dir: string;
let config: string;
let api: LocalServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gw-cli-cut-'));
  config = join(dir, 'gateway.json');
  writeFileSync(config, JSON.stringify({ database: `sqlite:${join(dir, 'gateway.db')}`, data_dir: join(dir, 'data'), log_level: 'silent' }));
  expect((await cli('accounts', 'create', 'acme', '--config', config)).code).toBe(0);
  for (let i = 0; i < 3; i++) expect((await cli('keys', 'create', '--account', 'acme', '--config', config)).code).toBe(0);
  const models = JSON.stringify({ object: 'list', data: Array.from({ length: 50 }, (_, i) => ({ id: `m${i}`, object: 'model', owned_by: 'x' })) });
  api = await localServer((req, res) => {
    if (req.url === '/v1/models') res.writeHead(200, { 'content-type': 'application/json' }).end(models);
    else res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'not_found_error', message: 'No such video.' } }));
  });
}, 60_000);
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('stdout cut short', () => {
  it('keys list into a reader that has gone (| head -0): exit 0, nothing on stderr', async () => {
    const r = await spawnCli(['keys', 'list', '--config', config], { stdout: 'closed' });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
  }, 30_000);

  it('a client command into a reader that has gone: exit 0, nothing on stderr', async () => {
    const r = await spawnCli(['models', '--url', api.url, '--key', 'k'], { stdout: 'closed' });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
  }, 30_000);

  it('keys list and models --json onto a full device: one line naming the failure, exit 1', async () => {
    for (const args of [
      ['keys', 'list', '--config', config],
      ['models', '--json', '--url', api.url, '--key', 'k'],
    ]) {
      // Opened for writing only: the device stays as it is.
      const fd = openSync('/dev/full', 'w');
      try {
        const r = await spawnCli(args, { stdout: fd });
        expect(r.err).not.toMatch(STACK);
        expect(r.err).toBe('error: cannot write to standard output: ENOSPC: no space left on device, write\n');
        expect(r.code).toBe(1);
      } finally {
        closeSync(fd);
      }
    }
  }, 30_000);

  it('stderr gone: the error has nowhere to go, the documented exit code still tells (404: 4)', async () => {
    const r = await spawnCli(['video', 'get', 'nope', '--url', api.url, '--key', 'k'], { stderr: 'closed' });
    expect(r.code).toBe(4);
  }, 30_000);
});
