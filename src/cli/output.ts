import { EXIT } from './exit.js';
import { jsonText } from './text.js';

/**
 * Standard output cut short: the reader went away (`gateway keys list | head -1`: EPIPE) or the
 * file behind it cannot take more (ENOSPC). Node reports either as an 'error' event on
 * process.stdout, which, with no listener, ends the process with a stack trace. Here the first
 * such error is kept; the writers below stop the command at their next write, and `settleOutput`
 * turns it into the exit code: a reader that left is the reader's choice, so the command ends
 * quietly with its own code (0, like a tool that stops when its reader does, so that
 * `set -o pipefail` scripts taking the first lines keep working); any other failure means output
 * was lost: one line on stderr and exit 1.
 */
let failure: NodeJS.ErrnoException | undefined;
let watching = false;

/** Thrown by a writer once stdout has failed: it ends the command, which has nowhere to write. */
export class OutputClosed extends Error {
  constructor() {
    super('standard output is closed');
    this.name = 'OutputClosed';
  }
}

/** Listens for write failures of stdout and stderr (once per process; each run starts clean). */
export function watchOutput(): void {
  failure = undefined;
  if (watching) return;
  watching = true;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    failure ??= e;
  });
  // A stderr that fails leaves nowhere to report anything; the exit code still tells.
  process.stderr.on('error', () => {});
}

/** Every line the CLI prints on stdout goes through here. */
export function writeOut(text: string | Uint8Array): void {
  if (failure) throw new OutputClosed();
  process.stdout.write(text);
}

/** The exit code once the command is over, given what became of its output. */
export async function settleOutput(code: number): Promise<number> {
  // A failed write is reported on a later tick than the write itself.
  await new Promise<void>((resolve) => setImmediate(resolve));
  if (!failure || failure.code === 'EPIPE') return code;
  process.stderr.write(`error: cannot write to standard output: ${failure.message}\n`);
  return code === EXIT.ok ? EXIT.failure : code;
}

/** A JSON document on stdout, as `--json` and the administration commands print it. */
export const printJson = (v: unknown): void => writeOut(`${jsonText(v)}\n`);
