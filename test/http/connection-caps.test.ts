import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultMaxConnections } from '../../src/http/connection-caps.js';
import { connectionsRefused } from '../../src/ops/metrics.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Client connections are capped, in total and per address, so that no client can take every
 * descriptor the process has; an idle kept-alive connection is closed after keep_alive_timeout_ms.
 * Over real sockets: a connection over a cap is closed before anything is read from it.
 */
let gw: TestGateway | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await gw?.close();
  gw = undefined;
});

async function gateway(server: Record<string, unknown>, lines: string[] = []): Promise<number> {
  gw = await startTestGateway({ server, log_level: 'warn' }, { logSink: { write: (line: string) => lines.push(line) } });
  return Number(new URL(gw.url).port);
}

/** A connection on which one request has been answered (so the gateway holds it), kept open. */
function heldConnection(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.setEncoding('latin1');
    let got = '';
    socket.on('error', reject);
    socket.on('data', (d: string) => {
      got += d;
      if (got.startsWith('HTTP/1.1 200') && got.includes('\r\n\r\n')) resolve(socket);
    });
    socket.on('close', () => reject(new Error(`closed: ${JSON.stringify(got)}`)));
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

/** Connects, asks for /health, and says what came of it: the status line, or 'closed' with nothing read. */
function tryRequest(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.setEncoding('latin1');
    let got = '';
    socket.on('error', () => {});
    socket.on('data', (d: string) => (got += d));
    socket.on('close', () => resolve(got === '' ? 'closed' : got.slice(0, 12)));
    socket.setTimeout(5_000, () => socket.destroy());
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  });
}

const refused = async (reason: string) => (await connectionsRefused.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;

describe('server.max_connections_per_address', () => {
  it('closes a connection over the cap at once, counts and logs it once, and takes one again when one closes', async () => {
    const lines: string[] = [];
    const port = await gateway({ max_connections_per_address: 3 }, lines);
    const held = [await heldConnection(port), await heldConnection(port), await heldConnection(port)];
    const before = await refused('per_address');
    expect(await tryRequest(port)).toBe('closed');
    expect(await tryRequest(port)).toBe('closed');
    expect(await refused('per_address')).toBe(before + 2);
    const warnings = lines.filter((l) => l.includes('max_connections_per_address'));
    expect(warnings, lines.join('\n')).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ limit: 3, remote_address: '127.0.0.1' });
    // A held connection still serves.
    held[0]!.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => held[0]!.once('data', resolve));
    held[1]!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await tryRequest(port)).toBe('HTTP/1.1 200');
  });
});

describe('server.max_connections', () => {
  it('closes a connection over the total and counts it', async () => {
    const lines: string[] = [];
    const port = await gateway({ max_connections: 2 }, lines);
    await heldConnection(port);
    await heldConnection(port);
    const before = await refused('total');
    expect(await tryRequest(port)).toBe('closed');
    expect(await refused('total')).toBe(before + 1);
    expect(lines.some((l) => l.includes('server.max_connections reached'))).toBe(true);
  });

  it('defaults to 10,000, or three quarters of a lower open-file limit', async () => {
    expect(defaultMaxConnections(20_000)).toBe(10_000);
    expect(defaultMaxConnections(1_024)).toBe(768);
    expect(defaultMaxConnections(undefined)).toBe(10_000);
    await gateway({});
    expect(gw!.app.server.maxConnections).toBe(defaultMaxConnections());
  });
});

describe('server.keep_alive_timeout_ms', () => {
  it('closes a connection idle after its answer for that long', async () => {
    const port = await gateway({ keep_alive_timeout_ms: 300 });
    const socket = await heldConnection(port);
    const closedAfter = await new Promise<number>((resolve) => {
      const start = Date.now();
      socket.removeAllListeners('close');
      socket.on('close', () => resolve(Date.now() - start));
    });
    expect(closedAfter).toBeLessThan(2_000);
  });

  it('keeps today\'s 72 s by default', async () => {
    await gateway({});
    expect(gw!.app.server.keepAliveTimeout).toBe(72_000);
  });
});
