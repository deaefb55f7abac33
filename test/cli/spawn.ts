import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The same wiring as bin/gateway.js, over the sources (no build needed). */
const ENTRY = `const { main } = await import('./src/main.ts');
main(process.argv.slice(1)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { console.error(err instanceof Error ? err.message : String(err)); process.exitCode = 1; },
);`;

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
}

/**
 * Runs the CLI as its own process. `stdout: 'closed'` closes the reading end at once, as
 * `| head -0` does; a number is a file descriptor to hand over (a file opened by the test).
 */
export function spawnCli(args: string[], opts: { env?: Record<string, string>; stdout?: 'pipe' | 'closed' | number; stderr?: 'pipe' | 'closed' } = {}): Promise<Finished> {
  const stdout = opts.stdout ?? 'pipe';
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ENTRY, ...args], {
    cwd: ROOT,
    env: { ...process.env, GATEWAY_CLI_POLL_MS: '10', GATEWAY_CLI_BACKOFF_MS: '5', ...opts.env },
    stdio: ['ignore', typeof stdout === 'number' ? stdout : 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  if (stdout === 'closed') child.stdout!.destroy();
  else child.stdout?.on('data', (c) => (out += String(c)));
  if (opts.stderr === 'closed') child.stderr!.destroy();
  else child.stderr!.on('data', (c) => (err += String(c)));
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, out, err })));
}

export interface LocalServer {
  url: string;
  close(): Promise<void>;
}

/** A loopback HTTP server the test scripts; closing it also ends connections left open. */
export async function localServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<LocalServer> {
  const sockets = new Set<Socket>();
  const server = createServer(handler);
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address();
  return {
    url: `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A stack trace's frames, as Node prints them for an uncaught error. */
export const STACK = /^\s+at /m;
