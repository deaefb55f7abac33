import { Command, CommanderError } from 'commander';
import { isGatewayError } from '../core/errors.js';
import { commands } from './commands/index.js';
import type { Runner } from './command.js';
import { CliError, EXIT, exitCodeForStatus } from './exit.js';
import { OutputClosed, settleOutput, watchOutput, writeOut } from './output.js';
import { printable } from './text.js';

/**
 * Builds the `gateway` program and runs it on `argv` (without node and script). Returns the exit
 * code; never calls process.exit, so tests can run it in-process.
 */
export async function runProgram(argv: readonly string[]): Promise<number> {
  watchOutput();
  return settleOutput(await runCommand(argv));
}

async function runCommand(argv: readonly string[]): Promise<number> {
  let code: number = EXIT.ok;
  const run: Runner =
    (action) =>
    async (...args) => {
      const result = await action(...args);
      if (typeof result === 'number') code = result;
    };
  const program = new Command('gateway')
    .description('Video and embeddings gateway: server, administration and client')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => writeOut(s),
      writeErr: (s) => process.stderr.write(s),
    });
  for (const c of commands) c.register(program, run);
  // Every subcommand reports usage errors through the same override (they do not inherit it).
  const override = (cmd: Command) => {
    cmd.exitOverride();
    cmd.commands.forEach(override);
  };
  program.commands.forEach(override);

  if (argv.length === 0) {
    writeOut(program.helpInformation());
    return EXIT.usage;
  }
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (e) {
    return report(e);
  }
}

/**
 * One line on stderr and the documented exit code; never a stack trace. Messages carry text from
 * the server (the gateway relays upstream errors), so they are made printable here, once.
 */
function report(e: unknown): number {
  // The verdict on a closed stdout is settleOutput's.
  if (e instanceof OutputClosed) return EXIT.ok;
  if (e instanceof CommanderError) {
    // Help and version are successful exits; commander has already printed the message otherwise.
    return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (e instanceof CliError) {
    process.stderr.write(`error: ${printable(e.message)}\n`);
    return e.exitCode;
  }
  if (isGatewayError(e)) {
    process.stderr.write(`error: ${printable(`${e.message}${e.param ? ` (${e.param})` : ''}`)}\n`);
    return exitCodeForStatus(e.status);
  }
  process.stderr.write(`error: ${printable(e instanceof Error ? e.message : String(e))}\n`);
  return EXIT.failure;
}
