import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Child processes of the benchmark: the gateway, the floor proxy and each simulator run in their
 * own process so that /proc shows each one's CPU and memory alone. Every child is registered here
 * and killed when the parent exits, fails or is interrupted, and each child also exits by itself
 * when its IPC channel to the parent closes (the parent died without cleaning up).
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const live = new Set<ChildProcess>();
/** Where transpiled children live (bench/lib/compile.ts); undefined runs the .ts files under tsx. */
let compiledDir: string | undefined;
let hooksInstalled = false;
const exitCallbacks: Array<() => void> = [];

export interface Child<Info> {
  name: string;
  pid: number;
  /** What the child reported once it was ready (its URL, keys ...). */
  info: Info;
  /** The child's own view of its memory (bench/children/child.ts), for children of this bench. */
  memory?(): Promise<unknown>;
  /** Asks the child to exit (SIGTERM, so a --cpu-prof profile gets written), then kills it. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  /** Extra node flags for the child (e.g. --cpu-prof). */
  nodeArgs?: string[];
  /** File that receives the child's stdout (the gateway's log lines); /dev/null when omitted. */
  logFile?: string;
  /** How long the child may take to report ready. */
  readyTimeoutMs?: number;
  /** Environment variables added to the parent's (e.g. the allocator settings `npm start` uses). */
  env?: Record<string, string>;
  /** A build directory of its own (bench/ab.ts: gateways built from different source trees). */
  compiledDir?: string;
}

export function useCompiledChildren(dir: string | undefined): void {
  compiledDir = dir;
}

/**
 * Runs `bench/children/<script>` (transpiled, or under tsx) with `options` as JSON, and waits for
 * its ready message.
 */
export async function startChild<Info>(name: string, script: string, options: unknown, opts: StartOptions = {}): Promise<Child<Info>> {
  installHooks();
  const dir = opts.compiledDir ?? compiledDir;
  const entry = dir
    ? [join(dir, 'bench', 'children', script.replace(/\.ts$/, '.js'))]
    : ['--import', 'tsx', fileURLToPath(new URL(`../children/${script}`, import.meta.url))];
  const out = opts.logFile ? openSync(opts.logFile, 'a') : 'ignore';
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...entry], {
    cwd: repoRoot,
    env: { ...process.env, ...opts.env, BENCH_CHILD_OPTIONS: JSON.stringify(options) },
    stdio: ['ignore', out, 'inherit', 'ipc'],
  });
  if (typeof out === 'number') closeSync(out);
  live.add(proc);
  proc.once('exit', () => live.delete(proc));

  const info = await new Promise<Info>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not ready within ${opts.readyTimeoutMs ?? 30_000} ms`)), opts.readyTimeoutMs ?? 30_000);
    proc.once('message', (m: { ready?: Info; error?: string }) => {
      clearTimeout(timer);
      if (m.error !== undefined) reject(new Error(`${name}: ${m.error}`));
      else resolve(m.ready as Info);
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name}: exited before ready (code ${code}, signal ${signal})`));
    });
    proc.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  }).catch((e: unknown) => {
    proc.kill('SIGKILL');
    throw e;
  });
  // The child may be killed later; that is not an error for a started child.
  proc.removeAllListeners('error');
  proc.on('error', () => undefined);

  return {
    name,
    pid: proc.pid!,
    info,
    memory() {
      return new Promise((resolve, reject) => {
        const onMessage = (m: { memory?: unknown }): void => {
          if (m.memory === undefined) return;
          proc.off('message', onMessage);
          resolve(m.memory);
        };
        proc.on('message', onMessage);
        if (!proc.send('memory')) reject(new Error(`${name}: IPC channel closed`));
      });
    },
    async stop(graceMs = 5_000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs `fn` when the benchmark process ends, however it ends (temp dirs, open stores). */
export function onExit(fn: () => void): void {
  installHooks();
  exitCallbacks.push(fn);
}

/** Kills every child still running; synchronous so it also works from an 'exit' handler. */
export function killAll(): void {
  for (const p of live) {
    try {
      p.kill('SIGKILL');
    } catch {
      // Already gone.
    }
  }
  live.clear();
}

function cleanup(): void {
  killAll();
  for (const fn of exitCallbacks.splice(0)) {
    try {
      fn();
    } catch {
      // Best effort: the process is ending anyway.
    }
  }
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.once('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\nbench: ${sig}, stopping children\n`);
      cleanup();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (e) => {
    process.stderr.write(`bench: ${e.stack ?? String(e)}\n`);
    cleanup();
    process.exit(1);
  });
  process.on('unhandledRejection', (e) => {
    process.stderr.write(`bench: ${e instanceof Error ? e.stack : String(e)}\n`);
    cleanup();
    process.exit(1);
  });
}

/**
 * Starts a process that is not one of our children scripts (a peer gateway such as nginx or Portkey):
 * registered like the others, so it is killed when the run ends however it ends, and considered ready
 * once `ready()` resolves true (polled every 100 ms) within `timeoutMs`.
 */
export async function spawnForeign(
  name: string,
  command: string,
  argv: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; logFile: string; ready: () => Promise<boolean>; timeoutMs?: number },
): Promise<Child<Record<string, never>>> {
  installHooks();
  const out = openSync(opts.logFile, 'a');
  const proc = spawn(command, argv, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', out, out] });
  closeSync(out);
  live.add(proc);
  let exited: string | undefined;
  proc.once('exit', (code, signal) => {
    live.delete(proc);
    exited = `exited (code ${code}, signal ${signal}): ${logTail(opts.logFile)}`;
  });
  proc.on('error', (e) => (exited = e.message));
  const deadline = performance.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    if (exited) throw new Error(`${name}: ${exited}`);
    if (await opts.ready().catch(() => false)) break;
    if (performance.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${name}: not ready within ${opts.timeoutMs ?? 30_000} ms: ${logTail(opts.logFile)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    name,
    pid: proc.pid!,
    info: {},
    async stop(graceMs = 3_000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const gone = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await gone;
      clearTimeout(timer);
    },
  };
}

/** The last lines a foreign process wrote (the run's temp dir, where its log lives, is removed at exit). */
function logTail(file: string): string {
  try {
    const text = readFileSync(file, 'utf8').trim();
    return text ? JSON.stringify(text.slice(-300)) : '(no output)';
  } catch {
    return '(no output)';
  }
}

/** Runs a benchmark's main: exit 0 when it ends, else print the error, kill every child and exit 1. */
export function runMain(name: string, main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`bench/${name}: ${(e as Error).stack ?? String(e)}\n`);
      killAll();
      process.exit(1);
    },
  );
}
