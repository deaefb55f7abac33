import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  /** Every line the process wrote to stdout and stderr so far. */
  output: string[];
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
}

/**
 * A port free right now on loopback (the OS picks it; it is released for a process to take). It is
 * free only for a while: servers of tests running alongside, asking the OS for a port of its own
 * choosing, are handed ports from the same range, and one of them may take it first. A process
 * started on it must then be started again on another: see `onFreePort`.
 */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', () => res()));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((res) => srv.close(res));
  return port;
}

/** The error a server process prints when its port was taken before it could listen. */
export const PORT_TAKEN = 'EADDRINUSE';

/** Whether `text` holds the line the gateway writes to stderr once it listens at `url` (its start banner). */
export function saysReady(text: string, url: string): boolean {
  const line = `Gateway ready at ${url}`;
  const at = text.indexOf(line);
  // Not a longer port that starts with the same digits.
  return at >= 0 && !/\d/.test(text.charAt(at + line.length));
}

/**
 * Runs `start` on a free port until it does not answer PORT_TAKEN, that is until the process it
 * started took the port before another did (see `freePort`); at most `tries` times.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T | typeof PORT_TAKEN>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    const started = await start(await freePort());
    if (started !== PORT_TAKEN) return started;
    if (i >= tries) throw new Error(`${tries} ports in a row were taken before the process could listen`);
  }
}

/**
 * Starts the built gateway (bin/gateway.js, as in production) on a config written to `dir`, on a
 * free port, and resolves once it says it listens there and /health answers. `npm run build` must
 * have run.
 */
export function startGatewayProcess(dir: string, config: Record<string, unknown>, name = 'gateway.json'): Promise<GatewayProcess> {
  return onFreePort((port) => startOn(port, dir, config, name));
}

async function startOn(port: number, dir: string, config: Record<string, unknown>, name: string): Promise<GatewayProcess | typeof PORT_TAKEN> {
  const file = join(dir, name);
  // YAML is a superset of JSON, so the config loader reads this as it is.
  writeFileSync(file, JSON.stringify({ log_level: 'info', ...config, server: { ...(config.server as object), host: '127.0.0.1', port } }));
  const child = spawn(process.execPath, [BIN, 'serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
  const output: string[] = [];
  const exited = new Promise<number | string>((res) => child.once('exit', (code, signal) => res(code ?? signal ?? -1)));
  // After the exit and the end of its output.
  const closed = new Promise((res) => child.once('close', res));
  for (const stream of [child.stdout!, child.stderr!]) {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        output.push(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
      }
    });
    stream.on('end', () => buf && output.push(buf));
  }
  const url = `http://127.0.0.1:${port}`;
  let gone = false;
  void exited.then(() => (gone = true));
  const until = Date.now() + 20_000;
  for (;;) {
    if (gone) {
      await closed;
      if (output.some((line) => line.includes(PORT_TAKEN))) return PORT_TAKEN;
      throw new Error(`gateway exited before answering:\n${output.join('\n')}`);
    }
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`gateway did not answer /health:\n${output.join('\n')}`);
    }
    // Whatever answers /health before the gateway says it listens may be another test's server
    // that took the port.
    if (output.some((line) => saysReady(line, url))) {
      try {
        if ((await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) })).ok) break;
      } catch {
        // not answering yet
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, url, output, exited };
}

/** Waits until `check` is true, polling every `everyMs`; throws with `what` after `ms`. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 10_000, everyMs = 20): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Kills a gateway a test left running (a failed assertion before its own stop) and waits for it to go. */
export async function killLeftover(gw: GatewayProcess | undefined): Promise<void> {
  if (gw && gw.child.exitCode === null && gw.child.signalCode === null) gw.child.kill('SIGKILL');
  await gw?.exited;
}

/**
 * The config of a gateway process on the SQLite file `dir/gateway.db`, in front of one Sora
 * simulator (`sim`, its demo models priced at 0.1 per second); `extra` is merged over it.
 */
export function soraProcessConfig(
  dir: string,
  sim: { url: string },
  demo: { options: Record<string, unknown>; apiKey?: string; models: Array<{ name: string }> },
  extra: Record<string, unknown>,
): Record<string, unknown> {
  return {
    database: `sqlite:${join(dir, 'gateway.db')}`,
    data_dir: join(dir, 'data'),
    log_level: 'warn',
    upstreams: [{ ...demo.options, name: 'sora-sim', vendor: 'sora', base_url: sim.url, api_key: demo.apiKey, models: demo.models.map((m) => m.name) }],
    models: Object.fromEntries(demo.models.map((m) => [m.name, { capabilities: ['video'], price: { per_second: 0.1 } }])),
    ...extra,
  };
}

/**
 * Runs a child process to its exit, collecting stdout and stderr together: its exit code (or the
 * signal), or 'hung' when it is still alive after `ms` (it is then killed).
 */
export function runToExit(args: string[], ms: number, opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | string; output: string }> {
  const child = spawn(process.execPath, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ code: 'hung', output });
    }, ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? -1, output });
    });
  });
}
