import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProcess, type GatewayProcess } from '../helpers/process.js';

/**
 * A SIGTERM drain on the real process (bin/gateway.js) with connections that have no request
 * dispatched: one that sent nothing, and one that sent part of a request head (Node 20 counts it
 * active, so its idle closing skips it, and server.close() stops the headers timeout that would
 * cut it). They must not hold the drain: the process exits 0 within seconds, its charges flushed
 * and store closed ("shutdown complete"), not at the drain's deadline with exit code 1.
 */
let dir: string;
let gw: GatewayProcess | undefined;
const sockets: Socket[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gw-idle-drain-'));
});
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  if (gw && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
  await gw?.exited;
  gw = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function open(url: string): Promise<Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1', () => resolve(s));
    s.once('error', reject);
    sockets.push(s);
  });
}

describe('SIGTERM with connections that have sent no whole request', () => {
  it('exits 0 within seconds, not at the drain deadline', async () => {
    gw = await startGatewayProcess(dir, {
      database: `sqlite:${join(dir, 'gw.db')}`,
      data_dir: join(dir, 'data'),
      admin_token: 'idle-drain-admin-token-0123456789',
      secret: 'idle-drain-secret-0123456789abcdef',
      server: { shutdown_timeout_ms: 20_000 },
      upstreams: [],
    });
    const silent = await open(gw.url);
    const partial = await open(gw.url);
    partial.write('GET /health HTTP/1.1\r\nHost: x\r\n');
    for (const s of [silent, partial]) s.on('error', () => {});
    // Let the gateway read the partial head.
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    gw.child.kill('SIGTERM');
    const code = await Promise.race([gw.exited, new Promise((r) => setTimeout(() => r('still running'), 8_000))]);
    expect(code, gw.output.join('\n')).toBe(0);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(gw.output.join('\n')).toMatch(/shutdown complete/);
    expect(gw.output.join('\n')).not.toMatch(/deadline passed/);
  }, 40_000);
});
